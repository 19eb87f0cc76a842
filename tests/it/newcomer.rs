//! Issue 29 point 2, "no silent private store": what a newcomer is told when a coordinator
//! command goes somewhere they did not mean. A verb without --coordinator says on stderr that
//! it used the embedded store (and which file); a refused credential or a name not found
//! names the coordinator that answered; each way of not reaching a server (refused, a name
//! that does not resolve, TLS, no answer in time) has its own message naming the address; a
//! token file that holds no token says so instead of "wrong token".

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::master::{Co, PASSWORD, PROJECT, err_doc, exec, ok_doc, s};
use crate::serve::Deployment;
use crate::support::{Run, TestEnv};
use crate::throwaway::TestCa;

/// The note every coordinator verb prints when no coordinator was named.
const NOTE: &str = "note: no coordinator named";

/// `co.base()` (XDG_STATE_HOME in the temp dir, no coordinator named) with `args`.
fn bare(co: &Co, args: &[&str]) -> Command {
    let mut c = co.base();
    c.args(args);
    c
}

/// `args --json --coordinator url` through `co.base()`.
fn at(co: &Co, url: &str, args: &[&str]) -> Command {
    let mut c = co.base();
    c.args(args).args(["--json", "--coordinator", url]);
    c
}

/// The whole stdout is one JSON document.
#[track_caller]
fn one_document(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", r.stdout))
}

#[test]
fn a_verb_without_a_coordinator_says_which_store_it_used() {
    let co = Co::new();
    let default = co.dir().join("state/writerctl/coordinator.sqlite");
    let r = exec(bare(&co, &["master", "status", "--project", PROJECT, "--json"]), None);
    r.assert_ok();
    assert_eq!(one_document(&r)["project"], PROJECT);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    let note = r.stderr.lines().find(|l| l.starts_with(NOTE)).unwrap();
    assert!(note.contains(&format!("the embedded store at {}", default.display())), "{note}");
    assert!(note.contains("--coordinator https://HOST:PORT") && note.contains("WRITERCTL_COORDINATOR"), "{note}");

    // Human output, and `audit prune`, which opens the store itself.
    let r = exec(bare(&co, &["channel", "show", "--project", PROJECT, "--channel", "c"]), None);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    let r = exec(bare(&co, &["audit", "prune", "--older-than-days", "30", "--json"]), None);
    r.assert_ok();
    one_document(&r);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
}

#[test]
fn a_named_store_is_not_announced() {
    let co = Co::new();
    let store = format!("sqlite:{}", co.store.display());
    let r = exec(at(&co, &store, &["master", "status", "--project", PROJECT]), None);
    r.assert_ok();
    assert_eq!(r.stderr, "", "sqlite:PATH names the store: nothing to say");
    let mut c = bare(&co, &["master", "status", "--project", PROJECT, "--json"]);
    c.env("WRITERCTL_COORDINATOR", &store);
    let r = exec(c, None);
    r.assert_ok();
    assert_eq!(r.stderr, "", "WRITERCTL_COORDINATOR names it as well");
}

/// The trap: `master claim` meant for the team's server went to a private file and
/// answered "invalid credentials" without a word about where it had asked.
#[test]
fn a_refused_credential_names_the_store_that_refused_it() {
    let co = Co::new();
    let pw = co.pw_file(PASSWORD);
    let args = ["master", "claim", "--project", PROJECT, "--to", "bob", "--operator", "ops", "--password-file", s(&pw)];
    let mut a = args.to_vec();
    a.push("--json");
    let r = exec(bare(&co, &a), None);
    let e = err_doc(&r, 6, "invalid_operator_credentials");
    assert_eq!(one_document(&r)["error"].as_object().unwrap().len(), e.as_object().unwrap().len());
    let default = co.dir().join("state/writerctl/coordinator.sqlite");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains(&format!("the embedded store at {}", default.display())), "{message}");
    let hint = e["hint"].as_str().unwrap();
    assert!(hint.contains("check the operator id and password"), "the engine's advice stays: {hint}");
    assert!(hint.contains("--coordinator https://HOST:PORT"), "{hint}");
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);

    // Named explicitly: the message still says which store; the hint has nothing to add.
    let store = format!("sqlite:{}", co.store.display());
    let e = err_doc(&exec(at(&co, &store, &args), None), 6, "invalid_operator_credentials");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("(coordinator: the embedded store at {})", co.store.display()))
    );
    assert!(!e["hint"].as_str().unwrap().contains("--coordinator https://HOST:PORT"), "{e}");
    // Not found, in human output.
    let r = exec(at(&co, &store, &["claim", "show", "--project", PROJECT, "--channel", "c", "--task", "t"]), None);
    let e = err_doc(&r, 5, "not_found");
    assert!(e["message"].as_str().unwrap().contains(&co.store.display().to_string()), "{e}");
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A listener that answers every connection in plain HTTP (a 400) and closes it.
fn plain_http() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    port
}

/// A listener whose accept queue is full (backlog 0, filled, never accepted): the kernel
/// drops further connection attempts, so a client's connect times out.
fn full_backlog() -> (TcpListener, Vec<TcpStream>, u16) {
    use rustix::net::{AddressFamily, SocketType, bind, listen, socket};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    listen(&fd, 0).unwrap();
    let l = TcpListener::from(fd);
    let addr = l.local_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..16 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(c) => held.push(c),
            Err(_) => return (l, held, addr.port()),
        }
    }
    panic!("the accept queue of a backlog-0 listener never filled");
}

/// The error of a coordinator that could not be reached: exit 75, `applied: false`, the
/// message names `url` and what failed; returns (message, hint).
#[track_caller]
fn unreachable(co: &Co, url: &str, said: &[&str]) -> (String, String) {
    let r = exec(at(co, url, &["master", "status", "--project", PROJECT]), None);
    let e = err_doc(&r, 75, "coordinator_unavailable");
    assert_eq!(e["applied"], false, "nothing was sent: {e}");
    let (message, hint) = (e["message"].as_str().unwrap().to_string(), e["hint"].as_str().unwrap().to_string());
    assert!(message.starts_with(url) && message.contains("nothing was applied"), "{message}");
    for s in said {
        assert!(message.contains(s), "{message:?} does not say {s:?}");
    }
    assert!(!message.contains("retry later") && hint != "retry later", "{message} / {hint}");
    (message, hint)
}

#[test]
fn each_connection_failure_says_what_failed_at_which_address() {
    let co = Co::new();
    let refused = closed_port();
    let (_queue, _held, full) = full_backlog();
    let plain = plain_http();
    let cases = [
        unreachable(
            &co,
            &format!("http://127.0.0.1:{refused}"),
            &["connection refused", &format!("nothing listens at 127.0.0.1:{refused}")],
        ),
        unreachable(&co, "https://coordinator.invalid:7700", &["coordinator.invalid", "does not resolve"]),
        unreachable(
            &co,
            &format!("https://127.0.0.1:{plain}"),
            &[&format!("TLS handshake with 127.0.0.1:{plain} failed"), "does not speak TLS"],
        ),
        unreachable(&co, &format!("http://127.0.0.1:{full}"), &[&format!("no connection to 127.0.0.1:{full} in time")]),
    ];
    let hints: std::collections::BTreeSet<&str> = cases.iter().map(|(_, h)| h.as_str()).collect();
    assert_eq!(hints.len(), cases.len(), "one hint per kind: {hints:#?}");
    assert!(cases[0].1.contains("is the coordinator running"), "{}", cases[0].1);
    assert!(cases[1].1.contains("check the name coordinator.invalid"), "{}", cases[1].1);
    assert!(cases[2].1.contains("--allow-insecure-http"), "{}", cases[2].1);
    assert!(cases[3].1.contains("firewall"), "{}", cases[3].1);
}

/// A TLS server whose certificate this client does not trust, and (trusting it) a credential
/// that server refuses, named by its URL.
#[test]
fn tls_trust_and_credentials_name_the_server() {
    let ca = TestCa::new(&["127.0.0.1", "localhost"]);
    let co = Co::http(|home, store| {
        Deployment::sqlite(home, store).server_args(&["--tls-cert", s(&ca.cert), "--tls-key", s(&ca.key)])
    });
    let url = co.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let address = url.trim_start_matches("https://").to_string();
    let (_, hint) = unreachable(
        &co,
        &url,
        &[&format!("the TLS handshake with {address} failed on the server's certificate"), "UnknownIssuer"],
    );
    assert!(hint.contains("WRITERCTL_COORDINATOR_CA"), "{hint}");

    let token = co.file("some.tok");
    std::fs::write(&token, format!("{}\n", "ab".repeat(32))).unwrap();
    let mut c = at(
        &co,
        &url,
        &["session", "heartbeat", "--project", PROJECT, "--session", "nobody", "--token-file", s(&token)],
    );
    c.env("WRITERCTL_COORDINATOR_CA", &ca.ca);
    let r = exec(c, None);
    let e = err_doc(&r, 6, "unauthorized");
    assert!(e["message"].as_str().unwrap().ends_with(&format!("(coordinator: {url})")), "{e}");
    assert_eq!(r.stderr, "", "a named server: no note");
}

/// A server that accepts and never answers. The client's limit is its fixed request timeout
/// (45 s, longer than a server's own wait for a busy store), so this test takes that long.
#[test]
fn an_answer_that_never_comes_is_a_timeout_naming_the_address() {
    let co = Co::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for c in l.incoming().flatten() {
            open.push(c);
        }
    });
    let r = exec(at(&co, &format!("http://127.0.0.1:{port}"), &["master", "status", "--project", PROJECT]), None);
    let e = err_doc(&r, 75, "coordinator_unavailable");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains(&format!("no answer from 127.0.0.1:{port} in time")), "{message}");
    assert!(!message.contains("nothing was applied"), "the request was sent: {message}");
    assert!(e["hint"].as_str().unwrap().contains("slow"), "{e}");
}

#[test]
fn a_session_token_file_without_a_token_says_so() {
    let co = Co::new();
    let store = format!("sqlite:{}", co.store.display());
    let heartbeat = |file: &Path| {
        exec(
            at(&co, &store, &["session", "heartbeat", "--project", PROJECT, "--session", "s", "--token-file", s(file)]),
            None,
        )
    };
    let garbage = co.file("garbage.tok");
    std::fs::write(&garbage, "hunter2 is my password\n").unwrap();
    let r = heartbeat(&garbage);
    let e = err_doc(&r, 2, "invalid_argument");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains(&format!("{} does not hold a session token", garbage.display())), "{message}");
    assert!(!r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"), "the contents are never printed");
    // A lock's owner token in the wrong place says what it looks like.
    let owner = co.file("owner.tok");
    std::fs::write(&owner, format!("{}\n", uuid::Uuid::new_v4())).unwrap();
    let e = err_doc(&heartbeat(&owner), 2, "invalid_argument");
    assert!(e["message"].as_str().unwrap().contains("lock owner token"), "{e}");
    // A well-formed token that is not this session's is still a refused credential.
    let wrong = co.file("wrong.tok");
    std::fs::write(&wrong, "cd".repeat(32)).unwrap();
    err_doc(&heartbeat(&wrong), 6, "unauthorized");
}

#[test]
fn an_owner_token_file_without_a_token_says_so() {
    let env = TestEnv::new();
    let tok = env.tmp.path().join("tok");
    let pid = std::process::id().to_string();
    env.run(&["acquire", "--json", "--session", "s", "--pid", &pid, "--token-file", s(&tok)]).assert_ok();
    let garbage = env.tmp.path().join("garbage");
    std::fs::write(&garbage, "not a token at all\n").unwrap();
    let session_token = env.tmp.path().join("session.tok");
    std::fs::write(&session_token, format!("{}\n", "ab".repeat(32))).unwrap();
    for (verb, extra) in [("release", &[][..]), ("seal", &["--transcript-key", "chats/s.jsonl"][..])] {
        let mut args = vec![verb, "--json", "--session", "s", "--token-file", s(&garbage)];
        args.extend_from_slice(extra);
        let mut c = env.cmd();
        c.args(&args).arg("--runtime-dir").arg(env.runtime()).env("WRITERCTL_SESSION_WRITER_LEASE", "1");
        let r = exec(c, None);
        r.assert_error(2, "invalid_argument");
        let doc: Value = r.json();
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("token file {} does not hold an owner token", garbage.display())),
            "{message}"
        );
        assert!(!message.contains("not a token at all"), "{message}");
    }
    let r = env.run(&["release", "--json", "--session", "s", "--token-file", s(&session_token)]);
    r.assert_error(2, "invalid_argument");
    assert!(r.stdout.contains("coordinator session token"), "{}", r.stdout);
    // The lock was never touched: its own token still releases it.
    let mut buf = String::new();
    std::fs::File::open(&tok).unwrap().read_to_string(&mut buf).unwrap();
    assert!(uuid::Uuid::parse_str(buf.trim()).is_ok());
    ok_doc(&env.run(&["release", "--json", "--session", "s", "--token-file", s(&tok)]));
}
