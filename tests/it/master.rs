//! The coordinator's test harness (seed 000, SPEC-082): [`Co`], one test's coordinator, and
//! the helpers every coordinator test shares: bounded runs, `--json` documents and error
//! envelopes, registration, handoff and claim calls, inbox and audit reads, and processes
//! racing behind one barrier. Every test has its own TestEnv and its own SQLite store file
//! (`--coordinator sqlite:<tmp>/c.sqlite`), and XDG_STATE_HOME points into the temp dir so
//! nothing can ever reach the real home's default store.
//!
//! The tests themselves are by verb: `master_session.rs` (register, heartbeat, deregister),
//! `master_status.rs`, `master_target.rs` (how `--to` resolves), `master_handoff.rs`,
//! `master_claim.rs`, `master_race.rs`, `master_inbox.rs`, `master_operator.rs`,
//! `master_audit.rs` and `master_history.rs`. The 12 seed tests are `check_seed_NN(&Co)`
//! bodies there: the `seed_NN_*` tests run them on the embedded store, and `serve.rs` runs
//! the same bodies through `writerctl coordinator serve` over SQLite and over Redis +
//! Postgres (a [`Co`] built by `Co::http_*`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::serve::Deployment;
use crate::support::{BIN, Run, TestEnv};

pub(crate) const PROJECT: &str = "web";
pub(crate) const PASSWORD: &str = "correct horse battery staple";
/// A bound on any single command, so a hang fails the test instead of stalling the suite.
pub(crate) const LIMIT: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// One test's coordinator: a scratch directory and the store file inside it, used in-process
/// (`--coordinator sqlite:<store>`), or, with `http`, through `writerctl coordinator serve`
/// processes over that store (or over Redis + Postgres).
pub(crate) struct Co {
    /// Declared first so it drops first: the servers stop before the temp dir (and a Redis +
    /// Postgres namespace) go away.
    pub(crate) http: Option<Deployment>,
    pub(crate) env: TestEnv,
    pub(crate) store: PathBuf,
    /// Each identity's latest token file ([`Co::register`] records it): what an inbox read
    /// proves the identity with.
    pub(crate) tokens: std::sync::Mutex<BTreeMap<String, PathBuf>>,
}

/// A registered controller; its token lives in a 0600 file written by `register`.
#[derive(Debug, Clone)]
pub(crate) struct Ctl {
    pub(crate) identity: String,
    pub(crate) sid: String,
    pub(crate) token: String,
    pub(crate) token_file: PathBuf,
}

pub(crate) fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Waits for `child` at most `limit`, collecting its output; panics (after killing it) on a hang.
pub(crate) fn wait_bounded(child: Child, limit: Duration, what: &str) -> Run {
    crate::support::wait_child_bounded(child, limit).unwrap_or_else(|| panic!("{what} did not finish within {limit:?}"))
}

/// Runs `c` with `input` on stdin (or /dev/null), bounded.
pub(crate) fn exec(mut c: Command, input: Option<&[u8]>) -> Run {
    let what = format!("{c:?}");
    c.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(bytes) = input {
        let mut stdin = child.stdin.take().unwrap();
        // A child that exits before reading (a usage error) closes the pipe: not our failure.
        let _ = stdin.write_all(bytes);
    }
    wait_bounded(child, LIMIT, &what)
}

/// The JSON document of a successful `--json` run.
#[track_caller]
pub(crate) fn ok_doc(r: &Run) -> Value {
    r.assert_ok();
    r.json()
}

/// Asserts a `--json` failure's exit code and error code; returns the error object (with
/// its details beside code/message/hint).
#[track_caller]
pub(crate) fn err_doc(r: &Run, exit: i32, code: &str) -> Value {
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
        panic!("stdout is no JSON ({e}); exit {}\nstdout:\n{}\nstderr:\n{}", r.code, r.stdout, r.stderr)
    });
    assert_eq!(
        (r.code, v["error"]["code"].as_str()),
        (exit, Some(code)),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert!(v["error"]["message"].is_string(), "{v}");
    assert!(v["error"].get("hint").is_some(), "{v}");
    assert_eq!(v.as_object().unwrap().len(), 1, "one `error` key: {v}");
    v["error"].clone()
}

/// The key set of a JSON object.
#[track_caller]
pub(crate) fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap_or_else(|| panic!("not an object: {v}")).keys().cloned().collect()
}

pub(crate) fn set(ks: &[&str]) -> BTreeSet<String> {
    ks.iter().map(|k| k.to_string()).collect()
}

pub(crate) fn mref(c: &Ctl) -> Value {
    json!({"identity": c.identity, "session_id": c.sid})
}

/// `args` as a client sends them to `url`: over HTTP without `--freshness-seconds N`, which
/// names the server the command is routed to ([`Co::url_for`]) and which a client refuses.
pub(crate) fn client_args<S: AsRef<str>>(args: &[S], url: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter().map(|a| a.as_ref().to_string());
    while let Some(a) = it.next() {
        if url.starts_with("http") && a == "--freshness-seconds" && freshness_arg(args).is_some() {
            it.next();
            continue;
        }
        out.push(a);
    }
    out
}

/// The value of `--freshness-seconds` in `args`, if it is one a server accepts.
fn freshness_arg<S: AsRef<str>>(args: &[S]) -> Option<u64> {
    let i = args.iter().position(|a| a.as_ref() == "--freshness-seconds")?;
    args.get(i + 1)?.as_ref().parse().ok().filter(|n| (1..=86_400).contains(n))
}

impl Co {
    /// The embedded store, in-process.
    pub(crate) fn new() -> Co {
        let env = TestEnv::new();
        let store = env.tmp.path().join("c.sqlite");
        Co { http: None, env, store, tokens: Default::default() }
    }

    /// Servers (`writerctl coordinator serve`) that `make` describes, given the temp dir and
    /// the SQLite store path inside it.
    pub(crate) fn http(make: impl FnOnce(&Path, &Path) -> Deployment) -> Co {
        let mut co = Co::new();
        co.http = Some(make(co.env.tmp.path(), &co.store));
        co
    }

    /// A server over the SQLite store file.
    pub(crate) fn http_sqlite() -> Co {
        Co::http(Deployment::sqlite)
    }

    /// A server over Redis + Postgres in a namespace of its own; None (after a loud SKIPPED
    /// line) when the services are unreachable.
    pub(crate) fn http_redis_pg(test: &str) -> Option<Co> {
        let ns = crate::services::Ns::new(test)?;
        Some(Co::http(|home, _| Deployment::redis_pg(home, ns)))
    }

    /// Where commands go. A server applies its own freshness threshold (a client refuses
    /// `--freshness-seconds` over HTTP), so for commands that pass one the deployment routes
    /// them to a server started with that threshold (on the same store), and
    /// [`client_args`] drops the flag from the client's command line.
    pub(crate) fn url_for<S: AsRef<str>>(&self, args: &[S]) -> String {
        match &self.http {
            None => format!("sqlite:{}", self.store.display()),
            Some(d) => d.url(freshness_arg(args).unwrap_or(30)),
        }
    }

    pub(crate) fn url(&self) -> String {
        self.url_for::<&str>(&[])
    }

    /// The `host:port` of the server [`Co::url`] names (a deployment over plain HTTP).
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        self.url().strip_prefix("http://").unwrap().parse().unwrap()
    }

    /// Environment every client gets (the admin token, a CA file) from the deployment.
    pub(crate) fn client_env(&self) -> Vec<(String, String)> {
        self.http.as_ref().map(|d| d.client_env()).unwrap_or_default()
    }

    pub(crate) fn dir(&self) -> &Path {
        self.env.tmp.path()
    }

    /// A fresh path inside the temp dir.
    pub(crate) fn file(&self, stem: &str) -> PathBuf {
        self.dir().join(format!("{stem}.{}", unique()))
    }

    /// The binary with a cleared environment (TestEnv's), XDG_STATE_HOME in the temp dir, and
    /// the deployment's client environment.
    pub(crate) fn base(&self) -> Command {
        let mut c = self.env.cmd();
        c.env("XDG_STATE_HOME", self.dir().join("state"));
        c.envs(self.client_env());
        c
    }

    /// `args --coordinator <sqlite:store or a server's URL>`.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = self.base();
        let url = self.url_for(args);
        c.args(client_args(args, &url)).arg("--coordinator").arg(url);
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        exec(self.command(args), None)
    }

    pub(crate) fn run_env(&self, args: &[&str], vars: &[(&str, &str)]) -> Run {
        let mut c = self.command(args);
        c.envs(vars.iter().copied());
        exec(c, None)
    }

    pub(crate) fn run_stdin(&self, args: &[&str], input: &[u8]) -> Run {
        exec(self.command(args), Some(input))
    }

    /// Runs with `--json`, asserts exit 0, returns the document.
    #[track_caller]
    pub(crate) fn ok(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        ok_doc(&self.run(&a))
    }

    /// Registers `identity` on `surface`/`machine` with a token file.
    #[track_caller]
    pub(crate) fn register(&self, identity: &str, surface: &str, machine: &str) -> Ctl {
        self.register_extra(identity, surface, machine, &[])
    }

    /// Re-registers a live row's key with its current token (a restarted controller).
    pub(crate) fn reregister(&self, prev: &Ctl, surface: &str, machine: &str) -> Ctl {
        self.register_extra(&prev.identity, surface, machine, &["--previous-token-file", s(&prev.token_file)])
    }

    /// The key file of `identity` in [`PROJECT`], enrolling it (`identity add --key-file`)
    /// the first time.
    pub(crate) fn key_file(&self, identity: &str) -> PathBuf {
        self.key_file_in(PROJECT, identity)
    }

    /// [`Co::key_file`] in another project.
    pub(crate) fn key_file_in(&self, project: &str, identity: &str) -> PathBuf {
        let kf = self.dir().join(format!("{project}.{identity}.key"));
        if !kf.exists() {
            self.ok(&["identity", "add", "--project", project, identity, "--key-file", s(&kf)]);
        }
        kf
    }

    /// `identity`'s key (enrolled on first use), for WRITERCTL_IDENTITY_KEY.
    pub(crate) fn key_of(&self, identity: &str) -> String {
        std::fs::read_to_string(self.key_file(identity)).unwrap().trim().to_string()
    }

    pub(crate) fn register_extra(&self, identity: &str, surface: &str, machine: &str, extra: &[&str]) -> Ctl {
        let tf = self.file(&format!("{identity}.tok"));
        let kf = self.key_file(identity);
        let mut args = vec![
            "session",
            "register",
            "--project",
            PROJECT,
            "--identity",
            identity,
            "--surface",
            surface,
            "--machine",
            machine,
            "--token-file",
            s(&tf),
            "--identity-key-file",
            s(&kf),
        ];
        args.extend_from_slice(extra);
        let v = self.ok(&args);
        assert_eq!(
            keys(&v),
            set(&[
                "session_id",
                "token",
                "is_master",
                "epoch",
                "project",
                "identity",
                "surface",
                "machine_id",
                "token_file"
            ])
        );
        assert_eq!(v["token"], Value::Null, "a --token-file registration never prints the token");
        assert_eq!(
            (&v["project"], &v["identity"], &v["surface"], &v["machine_id"], &v["token_file"]),
            (&json!(PROJECT), &json!(identity), &json!(surface), &json!(machine), &json!(s(&tf)))
        );
        let token = std::fs::read_to_string(&tf).unwrap().trim_end().to_string();
        assert_eq!(token.len(), 64, "{token:?}");
        self.tokens.lock().unwrap().insert(identity.to_string(), tf.clone());
        Ctl { identity: identity.into(), sid: v["session_id"].as_str().unwrap().into(), token, token_file: tf }
    }

    pub(crate) fn reg(&self, identity: &str) -> Ctl {
        self.register(identity, "cli", "m1")
    }

    pub(crate) fn handoff(&self, caller: &Ctl, to: &str, extra: &[&str]) -> Run {
        let mut a = vec![
            "master",
            "handoff",
            "--project",
            PROJECT,
            "--session",
            &caller.sid,
            "--token-file",
            s(&caller.token_file),
            "--to",
            to,
            "--json",
        ];
        a.extend_from_slice(extra);
        self.run(&a)
    }

    /// A password file holding `pw` and a newline.
    pub(crate) fn pw_file(&self, pw: &str) -> PathBuf {
        let p = self.file("pw");
        std::fs::write(&p, format!("{pw}\n")).unwrap();
        p
    }

    pub(crate) fn claim(&self, to: &str, operator: &str, pw: &str, extra: &[&str]) -> Run {
        let pf = self.pw_file(pw);
        let mut a = vec![
            "master",
            "claim",
            "--project",
            PROJECT,
            "--to",
            to,
            "--operator",
            operator,
            "--password-file",
            s(&pf),
            "--json",
        ];
        a.extend_from_slice(extra);
        self.run(&a)
    }

    #[track_caller]
    pub(crate) fn add_operator(&self, op: &str, pw: &str) {
        let r = self.run_stdin(&["operator", "add", op, "--password-stdin", "--json"], format!("{pw}\n").as_bytes());
        assert_eq!(ok_doc(&r), json!({"operator_id": op, "created": true}));
    }

    #[track_caller]
    pub(crate) fn status(&self) -> Value {
        self.ok(&["master", "status", "--project", PROJECT])
    }

    #[track_caller]
    pub(crate) fn epoch(&self) -> u64 {
        self.status()["master"]["epoch"].as_u64().unwrap()
    }

    /// Asserts the master slot and that exactly the master's row carries `is_master`.
    #[track_caller]
    pub(crate) fn assert_master(&self, who: Option<&Ctl>, epoch: u64) -> Value {
        let st = self.status();
        let expect = match who {
            Some(c) => json!({"identity": c.identity, "session_id": c.sid, "epoch": epoch}),
            None => json!({"identity": null, "session_id": null, "epoch": epoch}),
        };
        assert_eq!(st["master"], expect, "{st:#}");
        for row in st["controllers"].as_array().unwrap() {
            let is = who.is_some_and(|c| row["session_id"] == json!(c.sid));
            assert_eq!(row["is_master"], json!(is), "{st:#}");
        }
        st
    }

    /// `session heartbeat --json` for `c`'s session, proven by the token in `token_file`.
    pub(crate) fn heartbeat(&self, c: &Ctl, token_file: &Path) -> Run {
        self.run(&[
            "session",
            "heartbeat",
            "--project",
            PROJECT,
            "--session",
            &c.sid,
            "--token-file",
            s(token_file),
            "--json",
        ])
    }

    /// The token file of `identity`'s latest registration through this Co.
    #[track_caller]
    pub(crate) fn token_of(&self, identity: &str) -> PathBuf {
        self.tokens.lock().unwrap().get(identity).cloned().unwrap_or_else(|| panic!("{identity} never registered"))
    }

    #[track_caller]
    pub(crate) fn inbox(&self, identity: &str, after: u64) -> Value {
        let tf = self.token_of(identity);
        self.ok(&[
            "inbox",
            "--project",
            PROJECT,
            "--identity",
            identity,
            "--after",
            &after.to_string(),
            "--token-file",
            s(&tf),
        ])
    }

    /// `inbox --follow --json` for `identity`, proven by its latest token file, with
    /// `extra` (its `--timeout`): the command, for a [`crate::support::Follower`] to run.
    pub(crate) fn inbox_follow(&self, identity: &str, extra: &[&str]) -> Command {
        let tf = self.token_of(identity);
        let mut a = vec!["inbox", "--project", PROJECT, "--identity", identity, "--token-file", s(&tf), "--follow"];
        a.extend_from_slice(extra);
        a.push("--json");
        self.command(&a)
    }

    #[track_caller]
    pub(crate) fn events(&self, identity: &str) -> Vec<Value> {
        self.inbox(identity, 0)["events"].as_array().unwrap().clone()
    }

    #[track_caller]
    pub(crate) fn audit(&self, project: Option<&str>) -> Vec<Value> {
        let mut a = vec!["audit", "--limit", "1000000"];
        if let Some(p) = project {
            a.extend(["--project", p]);
        }
        self.ok(&a)["entries"].as_array().unwrap().clone()
    }
}

/// Checks a MasterPreempted event: envelope keys, recipient, and the exact payload.
#[track_caller]
pub(crate) fn assert_preempted(ev: &Value, prev: &Ctl, new: &Ctl, epoch: u64, by_operator: Option<&str>) {
    assert_eq!(keys(ev), set(&["cursor", "at", "kind", "recipient_session", "payload"]), "{ev:#}");
    assert_eq!(ev["kind"], "MasterPreempted");
    assert_eq!(ev["recipient_session"], json!(prev.sid));
    assert!(ev["cursor"].as_u64().is_some_and(|c| c > 0), "{ev:#}");
    assert!(ev["at"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 24), "{ev:#}");
    let mut expect = json!({
        "previous_master_identity": prev.identity,
        "previous_master_session_id": prev.sid,
        "new_master_identity": new.identity,
        "new_master_session_id": new.sid,
        "reason": if by_operator.is_some() { "preempt" } else { "handoff" },
        "epoch": epoch,
    });
    if let Some(op) = by_operator {
        expect["by_operator"] = json!(op);
    }
    assert_eq!(ev["payload"], expect, "{ev:#}");
}

/// One command of a race: a label, its arguments (the binary's), the coordinator it talks
/// to (None: the test's own, by `Co::url_for`), and a delay after the barrier opens
/// (staggers the cheap verb behind the argon2 one on some trials).
pub(crate) struct Racer {
    pub(crate) label: String,
    pub(crate) args: Vec<String>,
    pub(crate) url: Option<String>,
    pub(crate) delay_ms: u64,
}

/// The racers of a mixed trial: handoffs by the master and operator claims, all from one
/// expected epoch.
pub(crate) struct MixedRace<'a> {
    pub(crate) master: &'a Ctl,
    pub(crate) pw: &'a Path,
    pub(crate) epoch: &'a str,
    pub(crate) handoff_delay: u64,
    pub(crate) extra: &'a [&'a str],
}

impl MixedRace<'_> {
    /// A handoff to `t` by the master, or `operator`'s claim for `t`.
    pub(crate) fn racer(&self, t: &Ctl, operator: &str, handoff: bool, url: Option<String>) -> Racer {
        let mut args = if handoff {
            strings(&[
                "master",
                "handoff",
                "--project",
                PROJECT,
                "--session",
                &self.master.sid,
                "--token-file",
                s(&self.master.token_file),
                "--to",
                &t.identity,
            ])
        } else {
            strings(&[
                "master",
                "claim",
                "--project",
                PROJECT,
                "--to",
                &t.identity,
                "--operator",
                operator,
                "--password-file",
                s(self.pw),
            ])
        };
        args.extend(strings(&["--expect-epoch", self.epoch, "--json"]));
        args.extend(strings(self.extra));
        let kind = if handoff { "handoff" } else { "claim" };
        Racer {
            url,
            label: format!("{kind}:{}", t.identity),
            args,
            delay_ms: if handoff { self.handoff_delay } else { 0 },
        }
    }
}

/// A race trial's master (from the status `st`) and the other controllers as targets,
/// rotated by the trial so each gets to be first.
pub(crate) fn trial_targets<'a>(ids: &'a [Ctl], st: &Value, trial: u64) -> (&'a Ctl, Vec<&'a Ctl>) {
    let master = ids.iter().find(|c| st["master"]["session_id"] == json!(c.sid)).unwrap();
    let mut targets: Vec<&Ctl> = ids.iter().filter(|c| c.sid != master.sid).collect();
    let n = targets.len();
    targets.rotate_left(trial as usize % n);
    (master, targets)
}

/// One trial of a mixed handoff/claim race decided from `epoch`: exactly one racer won,
/// promoting its target to `epoch + 1`, and every other one got `stale_master` naming both
/// epochs. Returns the winner's index.
#[track_caller]
pub(crate) fn assert_one_winner(results: &[(String, Run)], targets: &[&Ctl], epoch: u64, trial: u64) -> usize {
    let winners: Vec<usize> = (0..results.len()).filter(|&i| results[i].1.code == 0).collect();
    assert_eq!(winners.len(), 1, "trial {trial}: {results:#?}");
    let w = winners[0];
    let v = ok_doc(&results[w].1);
    assert_eq!((&v["new_master"], &v["epoch"]), (&mref(targets[w]), &json!(epoch + 1)), "trial {trial}");
    for (i, (label, r)) in results.iter().enumerate().filter(|(i, _)| *i != w) {
        let e = err_doc(r, 3, "stale_master");
        assert_eq!(
            (&e["expected_epoch"], &e["epoch"]),
            (&json!(epoch), &json!(epoch + 1)),
            "trial {trial} racer {i} {label}"
        );
    }
    w
}

/// Starts every racer blocked on one pipe (each shell blocks in `read` until EOF, then execs the
/// binary), opens the barrier by closing the write end, and collects each (label, Run).
pub(crate) fn race(co: &Co, racers: &[Racer]) -> Vec<(String, Run)> {
    let (reader, writer) = std::io::pipe().unwrap();
    let children: Vec<(String, Child)> = racers
        .iter()
        .map(|r| {
            let url = r.url.clone().unwrap_or_else(|| co.url_for(&r.args));
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(r#"read -r _barrier; d=$1; shift; [ "$d" = 0 ] || sleep "$d"; exec "$@""#)
                .arg("racer")
                .arg(if r.delay_ms == 0 {
                    "0".to_string()
                } else {
                    format!("{}.{:03}", r.delay_ms / 1000, r.delay_ms % 1000)
                })
                .arg(BIN)
                .args(client_args(&r.args, &url))
                .arg("--coordinator")
                .arg(&url)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", co.dir())
                .env("TMPDIR", co.dir())
                .env("XDG_STATE_HOME", co.dir().join("state"))
                .envs(co.client_env())
                .stdin(Stdio::from(reader.try_clone().unwrap()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            (r.label.clone(), c.spawn().unwrap())
        })
        .collect();
    drop(reader);
    std::thread::sleep(Duration::from_millis(20));
    drop(writer);
    children.into_iter().map(|(label, c)| (label.clone(), wait_bounded(c, LIMIT, &label))).collect()
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
