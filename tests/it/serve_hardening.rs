//! `coordinator serve` under abuse (issue 19), on the embedded SQLite store and on Redis +
//! Postgres, through the real server binary:
//!
//! * more idle and slow-header connections than `--max-connections`: the ones past the cap
//!   get the 503 envelope at once, the others are closed by the header timeout, a normal
//!   client is served within its own timeout, and `/metrics` counts it all;
//! * the operator-lockout flood (wrong passwords for the operator's id, 16 threads of
//!   unknown ids) from other addresses: the operator's correct claims still succeed;
//! * every error answer is the JSON envelope with the right status and a stable code;
//! * an inbox cursor beyond the store's range is `invalid_argument` on every store;
//! * names with Unicode format characters or not in NFC are refused everywhere.
//!
//! Strangers use other loopback source addresses (127.0.0.2, 127.0.0.3): the server tells
//! sources apart by address, and on Linux every 127/8 address reaches a 127.0.0.1 listener.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, PROJECT, err_doc, mref, ok_doc, s};
use crate::serve::{Deployment, http_error_code, http_get, metric};
use crate::support::request_from;

/// A server deployment over SQLite with `args` on its command line.
fn sqlite_with(args: &'static [&'static str]) -> Co {
    Co::http(move |home, store| Deployment::sqlite(home, store).server_args(args))
}

/// A server deployment over Redis + Postgres with `args`; None when the services are absent.
fn redis_pg_with(test: &str, args: &'static [&'static str]) -> Option<Co> {
    let ns = crate::services::Ns::new(test)?;
    Some(Co::http(move |home, _| Deployment::redis_pg(home, ns).server_args(args)))
}

// ---------------------------------------------------------------------------------------
// connections
// ---------------------------------------------------------------------------------------

const CAP: usize = 8;
/// Idle connections (send nothing) and slow-header ones (a byte every 250 ms): 12 > CAP.
const IDLE: usize = 6;
const SLOW: usize = 6;

/// What one attacker connection saw: the bytes the server sent before closing it.
fn hold_connection(to: SocketAddr, trickle: bool, stop: Arc<AtomicBool>) -> thread::JoinHandle<Vec<u8>> {
    let c = TcpStream::connect(to).unwrap();
    thread::spawn(move || {
        let mut reader = c.try_clone().unwrap();
        reader.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        // Read while (maybe) writing, so an answer is read before a reset could drop it.
        let writer = trickle.then(|| {
            let mut w = c;
            let stop = stop.clone();
            thread::spawn(move || {
                let _ = w.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ");
                while !stop.load(Ordering::Relaxed) && w.write_all(b"a").is_ok() {
                    thread::sleep(Duration::from_millis(250));
                }
            })
        });
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        stop.store(true, Ordering::Relaxed);
        if let Some(w) = writer {
            let _ = w.join();
        }
        seen
    })
}

fn check_connections_are_bounded(co: &Co) {
    let to = co.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::new();
    for i in 0..IDLE + SLOW {
        attackers.push(hold_connection(to, i >= IDLE, stop.clone()));
    }
    // A normal client, started once every attacker is connected: refused while the cap is
    // full, served once the header timeout has closed the attackers' connections.
    let started = Instant::now();
    let client_timeout = Duration::from_secs(60);
    let mut refused = 0;
    let served = loop {
        let r = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .new_agent()
            .get(&format!("http://{to}/healthz"))
            .call();
        match r {
            Ok(mut resp) if resp.status() == 200 => break resp.body_mut().read_to_string().unwrap(),
            Ok(mut resp) => {
                let body = resp.body_mut().read_to_string().unwrap_or_default();
                assert_eq!((resp.status().as_u16(), http_error_code(&body).as_str()), (503, "coordinator_unavailable"));
                refused += 1;
            }
            // A refusal can also reach the client as a reset (its request crossed the close).
            Err(_) => refused += 1,
        }
        assert!(started.elapsed() < client_timeout, "the normal client was never served ({refused} refusals)");
        thread::sleep(Duration::from_millis(100));
    };
    eprintln!("normal client served after {:?} and {refused} refusals", started.elapsed());
    assert_eq!(serde_json::from_str::<Value>(&served).unwrap(), json!({"ok": true}));
    let seen: Vec<Vec<u8>> = attackers.into_iter().map(|t| t.join().unwrap()).collect();
    let mut answered = 0;
    for s in &seen {
        let text = String::from_utf8_lossy(s);
        if s.is_empty() {
            continue; // admitted, then closed by the header timeout without an answer
        }
        assert!(text.starts_with("HTTP/1.1 503"), "{text}");
        let body = text.split_once("\r\n\r\n").unwrap().1;
        assert_eq!(http_error_code(body), "coordinator_unavailable", "{text}");
        answered += 1;
    }
    // Issue 28: the attackers share one source, so each one past the cap evicts the oldest
    // waiting one (which gets the 503 envelope), and so may the normal client's connection.
    assert!(
        (IDLE + SLOW - CAP..=IDLE + SLOW - CAP + 1).contains(&answered),
        "the connections past the cap (and at most one for the client) end with a 503: {answered}"
    );
    let (status, _, m) = http_get(&format!("http://{to}/metrics"));
    assert_eq!(status, 200);
    assert_eq!(metric(&m, "writerctl_connections_max"), Some(CAP as f64), "{m}");
    let refused_total = metric(&m, "writerctl_connections_refused_total").unwrap()
        + metric(&m, "writerctl_connections_evicted_total").unwrap();
    assert!(refused_total >= (IDLE + SLOW - CAP) as f64, "{m}");
    assert!(metric(&m, "writerctl_connections_open").unwrap() >= 1.0, "{m}");
    let logs = co.http.as_ref().unwrap().all_logs();
    assert!(logs.contains("connection limits"), "{logs}");
    assert!(logs.contains("open-file limit"), "{logs}");
}

/// With a 3 s header timeout, the 12 attackers are all connected before the first is
/// closed, so exactly 4 are refused.
const CONN_ARGS: &[&str] = &["--max-connections", "8", "--header-timeout-seconds", "3"];

#[test]
fn connections_past_the_cap_are_refused_and_a_client_is_served() {
    check_connections_are_bounded(&sqlite_with(CONN_ARGS));
}

#[test]
fn connections_past_the_cap_are_refused_and_a_client_is_served_redis_pg() {
    let Some(co) = redis_pg_with("connections_past_the_cap_redis_pg", CONN_ARGS) else { return };
    check_connections_are_bounded(&co);
}

/// A long poll outlives the header timeout: the timer only runs while a request head is
/// awaited, never while an answer is being prepared. After an answer the same timer bounds
/// an idle kept-alive connection: the server closes it.
#[test]
fn a_long_poll_outlives_the_header_timeout_and_idle_keep_alive_is_closed() {
    let co = sqlite_with(&["--header-timeout-seconds", "1"]);
    let alice = co.reg("alice");
    let (status, body) = get_as(&format!("{}/v1/projects/{PROJECT}/inbox/alice?wait_ms=2500", co.url()), &alice.token);
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()), (200, json!({"events": []})), "{body}");
    let mut c = TcpStream::connect(co.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match c.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) => panic!("the idle kept-alive connection was not closed: {e}"),
        }
    };
    let text = String::from_utf8_lossy(&seen);
    assert!(closed && text.starts_with("HTTP/1.1 200") && text.ends_with(r#"{"ok":true}"#), "{text}");
}

// ---------------------------------------------------------------------------------------
// operators cannot be locked out
// ---------------------------------------------------------------------------------------

/// The flood from issue 19, from addresses other than the operator's: 8 threads sending
/// wrong passwords for the operator's id, 16 threads sending unknown operator ids, each as
/// fast as answers come. Meanwhile the operator's three correct claims succeed.
fn check_operator_not_locked_out(co: &Co) {
    let alice = co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);
    let to = co.addr();
    let path = format!("/v1/projects/{PROJECT}/master/claim");
    let stop = Arc::new(AtomicBool::new(false));
    let answers: Arc<Mutex<Vec<(u16, String)>>> = Arc::default();
    let mut flood = Vec::new();
    for i in 0..24 {
        let (stop, answers, path) = (stop.clone(), answers.clone(), path.clone());
        let (from, operator): (IpAddr, Option<&str>) =
            if i < 8 { ([127, 0, 0, 2].into(), Some("ops")) } else { ([127, 0, 0, 3].into(), None) };
        flood.push(thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let op = operator.map_or_else(|| format!("stranger-{i}-{n}"), str::to_string);
                let body = json!({"to": "bob", "expect_epoch": 1, "operator": op, "password": "guess"});
                let (status, _, doc) = request_from(from, to, "POST", &path, &[], &body);
                let code = doc["error"]["code"].as_str().unwrap_or("?").to_string();
                answers.lock().unwrap().push((status, code));
            }
        }));
    }
    // Let the flood build up its back-off and fill its slots first.
    thread::sleep(Duration::from_secs(3));
    let mut who = [&bob, &alice].into_iter().cycle();
    for round in 1..=3 {
        let target = who.next().unwrap();
        let started = Instant::now();
        let r = co.claim(&target.identity, "ops", PASSWORD, &[]);
        let elapsed = started.elapsed();
        eprintln!("correct claim {round} under the flood answered in {elapsed:?}");
        let v = ok_doc(&r);
        assert_eq!(v["new_master"], mref(target), "{v}");
    }
    stop.store(true, Ordering::Relaxed);
    for t in flood {
        t.join().unwrap();
    }
    let answers = answers.lock().unwrap();
    for (status, code) in answers.iter() {
        assert!(
            matches!((status, code.as_str()), (401, "invalid_operator_credentials") | (503, "coordinator_unavailable")),
            "{status} {code}"
        );
    }
    assert!(answers.iter().any(|(s, _)| *s == 401), "the flood was verified");
    assert!(answers.iter().any(|(s, _)| *s == 503), "one address's extra guesses were refused");
    let (_, _, m) = http_get(&format!("{}/metrics", co.url()));
    assert!(metric(&m, "writerctl_claims_refused_per_source_total").unwrap() > 0.0, "{m}");
    co.assert_master(Some(&bob), 4);
}

#[test]
fn operator_not_locked_out_by_strangers() {
    check_operator_not_locked_out(&Co::http_sqlite());
}

#[test]
fn operator_not_locked_out_by_strangers_redis_pg() {
    let Some(co) = Co::http_redis_pg("operator_not_locked_out_by_strangers_redis_pg") else { return };
    check_operator_not_locked_out(&co);
}

// ---------------------------------------------------------------------------------------
// one error envelope; cursors; names
// ---------------------------------------------------------------------------------------

/// (status, code) of a request, asserting the answer is the JSON envelope.
#[track_caller]
fn answer(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> (u16, String) {
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let sent = match method {
        "GET" => agent.get(url).call(),
        "DELETE" => agent.delete(url).call(),
        "POST" => {
            let mut req = agent.post(url);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            req.send(body.unwrap_or_default())
        }
        other => panic!("{other}"),
    };
    let mut resp = sent.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    assert!(ct.starts_with("application/json"), "{method} {url}: {ct} {text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(doc["error"]["message"].is_string() && doc["error"].get("hint").is_some(), "{doc}");
    (resp.status().as_u16(), http_error_code(&text))
}

/// GET `url` with a bearer token: (status, body).
fn get_as(url: &str, token: &str) -> (u16, String) {
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let mut resp = agent.get(url).header("Authorization", format!("Bearer {token}")).call().unwrap();
    (resp.status().as_u16(), resp.body_mut().read_to_string().unwrap_or_default())
}

/// One request and the (status, code) it must get: method, URL, headers, body.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Option<Vec<u8>>, (u16, &'a str));

fn check_error_envelope(co: &Co) {
    let url = co.url();
    let p = format!("{url}/v1/projects/{PROJECT}");
    let cases: Vec<Case> = vec![
        ("GET", format!("{url}/nope"), vec![], None, (404, "not_found")),
        ("GET", format!("{p}/sessions"), vec![], None, (405, "invalid_argument")),
        ("DELETE", format!("{url}/healthz"), vec![], None, (405, "invalid_argument")),
        ("GET", format!("{p}/inbox/alice?after=abc"), vec![], None, (400, "invalid_argument")),
        ("GET", format!("{p}/inbox/alice?after=-1"), vec![], None, (400, "invalid_argument")),
        ("GET", format!("{p}/inbox/alice?after=18446744073709551616"), vec![], None, (400, "invalid_argument")),
        ("GET", format!("{p}/inbox/alice?after=18446744073709551615"), vec![], None, (400, "invalid_argument")),
        ("GET", format!("{p}/inbox/alice?after=9223372036854775808"), vec![], None, (400, "invalid_argument")),
        (
            "POST",
            format!("{p}/sessions"),
            vec![("content-type", "application/json")],
            Some(vec![b' '; 70 * 1024]),
            (413, "invalid_argument"),
        ),
        ("POST", format!("{p}/sessions/s1/heartbeat"), vec![], None, (401, "unauthorized")),
        ("POST", format!("{p}/sessions/s1/heartbeat"), vec![("authorization", "Basic x")], None, (401, "unauthorized")),
        ("POST", format!("{p}/master/handoff"), vec![], Some(b"{}".to_vec()), (400, "invalid_argument")),
    ];
    for (method, u, headers, body, want) in &cases {
        let got = answer(method, u, headers, body.as_deref());
        assert_eq!((got.0, got.1.as_str()), *want, "{method} {u}");
    }
    // The largest cursor a store holds is fine (and past every event).
    let alice = co.reg("alice");
    let (status, body) = get_as(&format!("{p}/inbox/alice?after=9223372036854775807"), &alice.token);
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()), (200, json!({"events": []})), "{body}");
    // A 405 names the methods that work.
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let r = agent.delete(&format!("{url}/healthz")).call().unwrap();
    assert_eq!(r.headers().get("allow").and_then(|v| v.to_str().ok()), Some("GET,HEAD"));
    // The document lists every status and every code.
    let (_, _, doc) = http_get(&format!("{url}/openapi.json"));
    let doc: Value = serde_json::from_str(&doc).unwrap();
    let codes = &doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"];
    for code in ["not_found", "invalid_argument", "unauthorized", "coordinator_unavailable"] {
        assert!(codes.as_array().unwrap().contains(&json!(code)), "{codes}");
    }
    let claim = &doc["paths"]["/v1/projects/{project}/master/claim"]["post"]["responses"];
    for status in ["400", "401", "404", "405", "413", "503"] {
        assert!(claim.get(status).is_some(), "{status}: {claim}");
    }
}

#[test]
fn every_error_answer_is_the_envelope() {
    check_error_envelope(&Co::http_sqlite());
}

#[test]
fn every_error_answer_is_the_envelope_redis_pg() {
    let Some(co) = Co::http_redis_pg("every_error_answer_is_the_envelope_redis_pg") else { return };
    check_error_envelope(&co);
}

/// Names that look like other names are refused by every verb that takes one, the same
/// way embedded and over HTTP.
fn check_lookalike_names(co: &Co) {
    let bad = ["\u{202e}evil", "ali\u{200b}ce", "bob\u{200d}", "\u{feff}carol", "Jose\u{301}"];
    for name in bad {
        let r = co.run(&["session", "register", "--project", PROJECT, "--identity", name, "--json"]);
        let e = err_doc(&r, 2, "invalid_argument");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("format character") || msg.contains("NFC"), "{name:?}: {msg}");
        let r = co.run(&["session", "register", "--project", name, "--identity", "alice", "--json"]);
        err_doc(&r, 2, "invalid_argument");
    }
    // The composed spelling is a fine name.
    co.reg("Jos\u{e9}");
    co.ok(&["channel", "create", "--project", PROJECT, "--channel", "ch", "--steward", "Jos\u{e9}"]);
    for (flag, name) in [("--seat", "ali\u{200b}ce"), ("--task", "t\u{202e}1"), ("--channel", "c\u{2066}h")] {
        let mut args = vec!["claim", "take", "--project", PROJECT, "--channel", "ch", "--task", "t", "--seat", "alice"];
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = name;
        args.push("--json");
        err_doc(&co.run(&args), 2, "invalid_argument");
    }
    let r = co.run_stdin(&["operator", "add", "op\u{200b}s", "--password-stdin", "--json"], b"pw\n");
    err_doc(&r, 2, "invalid_argument");
}

#[test]
fn lookalike_names_are_refused_embedded() {
    check_lookalike_names(&Co::new());
}

#[test]
fn lookalike_names_are_refused_over_http() {
    check_lookalike_names(&Co::http_sqlite());
}

#[test]
fn lookalike_names_are_refused_redis_pg() {
    let Some(co) = Co::http_redis_pg("lookalike_names_are_refused_redis_pg") else { return };
    check_lookalike_names(&co);
}

/// `inbox --after` beyond the store's range: the same error embedded and over HTTP (on
/// SQLite it used to wrap and replay events already read).
fn check_cursor_range(co: &Co) {
    let alice = co.reg("alice");
    co.reg("bob");
    co.add_operator("ops", PASSWORD);
    ok_doc(&co.claim("bob", "ops", PASSWORD, &[]));
    assert_eq!(co.events("alice").len(), 1, "alice was preempted");
    for after in ["18446744073709551615", "9223372036854775808"] {
        let r = co.run(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            &alice.identity,
            "--after",
            after,
            "--token-file",
            s(&alice.token_file),
            "--json",
        ]);
        let e = err_doc(&r, 2, "invalid_argument");
        assert!(e["message"].as_str().unwrap().contains("cursor"), "{e}");
    }
    let r = co.run(&[
        "inbox",
        "--project",
        PROJECT,
        "--identity",
        &alice.identity,
        "--after",
        "9223372036854775807",
        "--token-file",
        s(&alice.token_file),
        "--json",
    ]);
    assert_eq!(ok_doc(&r)["events"], json!([]));
}

#[test]
fn cursor_beyond_the_range_is_refused_embedded() {
    check_cursor_range(&Co::new());
}

#[test]
fn cursor_beyond_the_range_is_refused_over_http() {
    check_cursor_range(&Co::http_sqlite());
}

#[test]
fn cursor_beyond_the_range_is_refused_redis_pg() {
    let Some(co) = Co::http_redis_pg("cursor_beyond_the_range_is_refused_redis_pg") else { return };
    check_cursor_range(&co);
}
