//! Issue 39's rows for `benches/abuse.rs` (included by it alone: `#[path]`, a child module
//! that uses the bench's own deployment, tally, flood and report types).
//!
//! Each row runs against a server and store of its own (`bench_store`), from many source
//! addresses in 127.0.0.0/8 (Linux loopback accepts any of them as a source: each attacking
//! socket binds its address before connecting). Row numbers are issue 39's.

use super::*;
use std::path::PathBuf;
use writerctl::coordinator::wire::WatchQuery;

/// Source address `i` of an attack's own block `127.block.x.y` (y in 1..=250).
fn source(block: u8, i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, block, (i / 250) as u8, (i % 250) as u8 + 1))
}

/// Every connection `i` from `source(block, i / per)`.
fn sources(block: u8, per: usize) -> SourceOf {
    Arc::new(move |i| Some(source(block, i / per.max(1))))
}

/// How many connections a connection-holding row opens (what its ramp-up waits for).
pub(super) fn connections(attack: Attack, cfg: &Config) -> usize {
    match attack {
        // Row 2: enough to fill the server's cap (8 x 128 at the default 1024).
        Attack::LongPolls => cfg.max_connections,
        // Row 3: ~1,500 single-connection addresses, past the default cap of 1024.
        Attack::DistFlood { .. } => 1500 * cfg.scale,
        // Row 4: ~950 connections from 10 addresses (95 each, under the per-source cap of 128).
        Attack::BigHeaders => 950 * cfg.scale,
        _ => 0,
    }
}

/// Bytes of request head each `big_headers` connection sends (hyper's default buffer
/// holds up to 408 KiB) and never finishes.
const BIG_HEADERS: usize = 400_000;
/// `big_names_*`: a 30 KB project name and a 60 KB identity (the admin body stays under the
/// server's 64 KiB body limit).
const BIG_PROJECT: usize = 30_000;
const BIG_IDENTITY: usize = 60_000;
/// The admin token issue 39 point 8 found accepted and guessed.
pub(super) const WEAK_TOKEN: &str = "correct horse battery staple 2024";

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: bench\r\n\r\n").into_bytes()
}

fn wrong_bearer() -> (&'static str, String) {
    // 64 hex digits: well-formed, so a server that checks the token's form refuses it for
    // being wrong, not malformed (the same path a guessing attacker takes).
    ("authorization", format!("Bearer {}", live::random_hex(32)))
}

/// A name `len` bytes long, distinct for each `n`.
fn long_name(tag: char, n: u64, len: usize) -> String {
    let head = format!("{tag}{n:012}-");
    let mut s = String::with_capacity(len);
    s.push_str(&head);
    s.extend(std::iter::repeat_n(tag, len.saturating_sub(head.len())));
    s
}

/// The text of a counted attack's answers.
fn counted_note(t: &Tally, sent: u64, conns: usize) -> String {
    let done = t.done.load(Ordering::SeqCst);
    format!(
        "{sent} sent: {} 2xx, {} refused ({} 429, {} 503), {} broken; {}",
        Tally::get(&t.ok),
        Tally::get(&t.refused),
        Tally::get(&t.rate_limited_429),
        Tally::get(&t.refused_503),
        Tally::get(&t.closed),
        if done {
            format!("all answered {:.1} s after launch", Tally::get(&t.done_ms) as f64 / 1e3)
        } else {
            format!("{} of {conns} connections finished when the window ended", Tally::get(&t.finished))
        }
    )
}

fn tally_json(t: &Tally) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    for (k, v) in [
        ("attack_2xx", &t.ok),
        ("attack_refused", &t.refused),
        ("attack_429", &t.rate_limited_429),
        ("attack_503", &t.refused_503),
        ("attack_broken", &t.closed),
        ("attack_connects", &t.connects),
        ("attack_connect_errors", &t.connect_errors),
        ("attack_max_open", &t.max_open),
    ] {
        m.insert(k.into(), Tally::get(v).into());
    }
    if t.done.load(Ordering::SeqCst) {
        m.insert("attack_all_answered_s".into(), (Tally::get(&t.done_ms) as f64 / 1e3).into());
    }
    m
}

/// A `master claim` body with a wrong password.
fn wrong_claim(project: &str, operator: &str, n: u64) -> Vec<u8> {
    let body = serde_json::json!({"to": "a", "to_session": null, "expect_epoch": 0,
                                  "operator": operator, "password": format!("guess-{n}")});
    http_request("POST", &format!("/v1/projects/{project}/master/claim"), &[], &body)
}

/// Starts issue 39's `attack` on `rt`; returns what it did.
pub(super) fn launch(
    attack: Attack,
    d: &Deployment,
    cfg: &Config,
    rt: &tokio::runtime::Runtime,
    tally: &Arc<Tally>,
) -> Box<dyn Fn() -> Note> {
    let to = d.addr;
    let scale = cfg.scale;
    let t = tally.clone();
    match attack {
        // Row 1: N claims at once, each from an address of its own, for operator ids nobody
        // added: what argon2 verification makes the server hold.
        Attack::Argon2Memory(n) => {
            let next = Arc::new(|i: usize, k: u64| wrong_claim("abuse-oper", &format!("ghost-{i}"), k));
            flood_counted(rt, to, sources(1, 1), n, 1, tally, next);
            Box::new(move || Note {
                text: format!("{} from {n} addresses", counted_note(&t, n as u64, n)),
                json: tally_json(&t),
            })
        }
        // Row 2: unauthenticated long-polls on a quiet project, 128 per address.
        Attack::LongPolls => {
            let project = fresh("abuse-quiet");
            d.seat(&project, "q", None);
            let now = WatchQuery { after: None, wait_ms: 0 };
            let version = d.client().call::<master::Watch>(&ProjectPath::of(&project), &now, None).unwrap().version;
            let conns = connections(attack, cfg);
            let addrs = 8 * scale;
            let per = conns.div_ceil(addrs);
            let req = get(&format!("/v1/projects/{project}/master/watch?after={version}&wait_ms=30000"));
            for a in 0..addrs {
                let req = req.clone();
                flood(rt, to, Some(source(5, a)), per.min(conns - a * per), tally, Arc::new(move |_, _| req.clone()));
            }
            Box::new(move || {
                let mut json = tally_json(&t);
                json.insert("long_polls".into(), conns.into());
                json.insert("addresses".into(), addrs.into());
                Note {
                    text: format!(
                        "{conns} long-polls from {addrs} addresses, {} open at most; answers {} 2xx, {} 503, {} other",
                        Tally::get(&t.max_open),
                        Tally::get(&t.ok),
                        Tally::get(&t.refused_503),
                        Tally::get(&t.other)
                    ),
                    json,
                }
            })
        }
        // Row 3: one idle connection from each of ~1,500 addresses while a legitimate host
        // (127.0.0.1) runs 8 clients: 4 on kept-alive connections, 4 on a new connection
        // (a new TLS handshake on the TLS server) per request.
        Attack::DistFlood { tls } => {
            let conns = connections(attack, cfg);
            hold(rt, to, conns, HoldKind::Idle, sources(3, 1), RECONNECT_AFTER, tally);
            let host = Arc::new(LegitHost::default());
            for i in 0..8 {
                let (host, tally, url, ca) = (host.clone(), tally.clone(), d.url.clone(), d.ca.clone());
                std::thread::spawn(move || host.run(i % 2 == 0, &url, ca.as_deref(), &tally));
            }
            Box::new(move || {
                let mut json = tally_json(&t);
                let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
                for (k, v) in [
                    ("legit_requests", get(&host.sent)),
                    ("legit_failed", get(&host.failed)),
                    ("legit_keepalive_failed", get(&host.failed_keepalive)),
                    ("legit_fresh_failed", get(&host.failed_fresh)),
                ] {
                    json.insert(k.into(), v.into());
                }
                json.insert("tls".into(), tls.into());
                Note {
                    text: format!(
                        "{conns} idle addresses, {} connections held at most, {} closed by the server; legit host (8 clients{}): {} of {} requests failed ({} kept-alive, {} new-connection)",
                        Tally::get(&t.max_open),
                        Tally::get(&t.closed),
                        if tls { ", TLS" } else { "" },
                        get(&host.failed),
                        get(&host.sent),
                        get(&host.failed_keepalive),
                        get(&host.failed_fresh)
                    ),
                    json,
                }
            })
        }
        // Row 4: ~400 KB of request head per connection, never finished.
        Attack::BigHeaders => {
            let conns = connections(attack, cfg);
            let addrs = 10 * scale;
            let mut head = b"GET /v1/projects/p/master HTTP/1.1\r\nhost: bench\r\n".to_vec();
            let mut k = 0;
            while head.len() < BIG_HEADERS {
                head.extend_from_slice(format!("x-pad-{k}: {}\r\n", "a".repeat(1000)).as_bytes());
                k += 1;
            }
            let per = conns.div_ceil(addrs);
            hold(rt, to, conns, HoldKind::Prefix(Arc::new(head)), sources(4, per), Duration::from_secs(1), tally);
            Box::new(move || Note {
                text: format!(
                    "{conns} connections from {addrs} addresses, {} KB of head each: {} held at most, answers {} 2xx, {} refused, {} closed without one",
                    BIG_HEADERS / 1000,
                    Tally::get(&t.max_open),
                    Tally::get(&t.ok),
                    Tally::get(&t.refused),
                    Tally::get(&t.closed)
                ),
                json: tally_json(&t),
            })
        }
        // Row 5: refused `identity add`s with a 30 KB project and a 60 KB identity, each
        // pair of names new, from 16 addresses.
        Attack::BigNamesAdmin => {
            let total = 2000 * scale;
            let counter = Arc::new(AtomicU64::new(0));
            let next = Arc::new(move |_i: usize, _n: u64| {
                let k = counter.fetch_add(1, Ordering::Relaxed);
                let body = serde_json::json!({"identity": long_name('i', k, BIG_IDENTITY)});
                http_request(
                    "POST",
                    &format!("/v1/projects/{}/identities", long_name('p', k, BIG_PROJECT)),
                    &[wrong_bearer()],
                    &body,
                )
            });
            flood_counted(rt, to, sources(6, 1), 16, (total / 16) as u64, tally, next);
            Box::new(move || Note { text: counted_note(&t, total as u64, 16), json: tally_json(&t) })
        }
        // Row 5: `watch` on a new 30 KB project name per request: the state (for its
        // version), then a 30 s long-poll after it, dropped after 250 ms.
        Attack::BigNamesWatch => {
            let names = Arc::new(AtomicU64::new(0));
            for i in 0..128 {
                let (tally, names) = (tally.clone(), names.clone());
                rt.spawn(async move {
                    tally.stagger().await;
                    loop {
                        let Some(s) = connect(Some(source(7, i / 16)), to, &tally).await else { continue };
                        let mut conn = BufReader::new(s);
                        let project = long_name('w', names.fetch_add(1, Ordering::Relaxed), BIG_PROJECT);
                        let path = format!("/v1/projects/{project}/master/watch");
                        match exchange(&mut conn, &get(&format!("{path}?wait_ms=0"))).await {
                            Some((status, body, _)) => {
                                tally.answer(status);
                                let doc = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
                                if let Some(v) = doc["version"].as_str() {
                                    let req = get(&format!("{path}?after={v}&wait_ms=30000"));
                                    if conn.get_mut().write_all(&req).await.is_ok() {
                                        tokio::time::sleep(RECONNECT_AFTER).await;
                                    }
                                }
                            }
                            None => {
                                tally.closed.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(RECONNECT_AFTER).await;
                            }
                        }
                    }
                });
            }
            let names2 = names.clone();
            Box::new(move || {
                let mut json = tally_json(&t);
                json.insert("distinct_names".into(), names2.load(Ordering::Relaxed).into());
                Note {
                    text: format!(
                        "{} distinct {} KB names watched from 8 addresses; answers {} 2xx, {} refused, {} broken",
                        names2.load(Ordering::Relaxed),
                        BIG_PROJECT / 1000,
                        Tally::get(&t.ok),
                        Tally::get(&t.refused),
                        Tally::get(&t.closed)
                    ),
                    json,
                }
            })
        }
        // Row 5: refusals for bad credentials, each naming a project never named before.
        Attack::VaryingNames => {
            for a in 0..4 {
                let next = Arc::new(move |i: usize, n: u64| {
                    let p = format!("vary-{a}-{i}-{n}-{}", &live::random_hex(4));
                    match n % 4 {
                        0 => http_request(
                            "POST",
                            &format!("/v1/projects/{p}/sessions/s{n}/heartbeat"),
                            &[wrong_bearer()],
                            &serde_json::json!({}),
                        ),
                        1 => http_request(
                            "POST",
                            &format!("/v1/projects/{p}/channels/work/claims/t/take"),
                            &[wrong_bearer()],
                            &serde_json::json!({"seat": "seat"}),
                        ),
                        2 => http_request(
                            "POST",
                            &format!("/v1/projects/{p}/master/handoff"),
                            &[wrong_bearer()],
                            &serde_json::json!({"session_id": "s", "to": "x", "to_session": null, "expect_epoch": 1}),
                        ),
                        _ => {
                            let mut r = get(&format!("/v1/projects/{p}/identities"));
                            let (k, v) = wrong_bearer();
                            r.truncate(r.len() - 2);
                            r.extend_from_slice(format!("{k}: {v}\r\n\r\n").as_bytes());
                            r
                        }
                    }
                });
                flood(rt, to, Some(source(8, a)), 4, tally, next);
            }
            Box::new(move || Note {
                text: format!(
                    "16 connections from 4 addresses, a new project name per request: {} refused, {} 2xx, {} broken",
                    Tally::get(&t.refused),
                    Tally::get(&t.ok),
                    Tally::get(&t.closed)
                ),
                json: tally_json(&t),
            })
        }
        // Row 6: 4 connections (4 addresses) reading `master history` of a project nobody
        // named, over the seeded audit log.
        Attack::HistoryScan => {
            let project = fresh("abuse-nohistory");
            let req = get(&format!("/v1/projects/{project}/master/history?limit=50"));
            for a in 0..4 {
                let req = req.clone();
                flood(rt, to, Some(source(9, a)), 1, tally, Arc::new(move |_, _| req.clone()));
            }
            let launched = Instant::now();
            let rows = cfg.history_rows;
            Box::new(move || {
                let mut json = tally_json(&t);
                json.insert("audit_rows_seeded".into(), rows.into());
                Note {
                    text: format!(
                        "{rows} audit rows seeded; 4 connections: {} history answers ({:.1}/s), {} refused",
                        Tally::get(&t.ok),
                        Tally::get(&t.ok) as f64 / launched.elapsed().as_secs_f64(),
                        Tally::get(&t.refused)
                    ),
                    json,
                }
            })
        }
        // Row 7: fresh addresses, each with 2 wrong-password claims at once (one for an
        // operator id nobody added, one for the real operator's), while the operator,
        // whose last claim from 127.0.0.1 succeeded, claims every 2 s.
        Attack::QueueJump => {
            let addrs = 1000 * scale;
            let next = Arc::new(|i: usize, k: u64| {
                let operator = if i.is_multiple_of(2) { format!("ghost-{i}") } else { OPERATOR.to_string() };
                wrong_claim("abuse-oper", &operator, k)
            });
            flood_counted(rt, to, sources(2, 2), 2 * addrs, 1, tally, next);
            Box::new(move || Note {
                text: format!("{} from {addrs} fresh addresses", counted_note(&t, 2 * addrs as u64, 2 * addrs)),
                json: tally_json(&t),
            })
        }
        _ => unreachable!("{attack:?} is not one of issue 39's live rows"),
    }
}

/// Row 3's legitimate host: what its clients sent and what failed.
#[derive(Default)]
struct LegitHost {
    sent: AtomicU64,
    failed: AtomicU64,
    failed_keepalive: AtomicU64,
    failed_fresh: AtomicU64,
}

impl LegitHost {
    /// One client: `master status` every 20 ms until the window ends, on one kept-alive
    /// connection (`keepalive`) or a new one per request.
    fn run(&self, keepalive: bool, url: &str, ca: Option<&[u8]>, tally: &Tally) {
        let kept = HttpCoordinator::new(url, ca, None).unwrap();
        while !tally.stop.load(Ordering::SeqCst) {
            let ok = if keepalive {
                status(&kept, "abuse-legit").is_ok()
            } else {
                status(&HttpCoordinator::new(url, ca, None).unwrap(), "abuse-legit").is_ok()
            };
            self.sent.fetch_add(1, Ordering::Relaxed);
            if !ok {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let c = if keepalive { &self.failed_keepalive } else { &self.failed_fresh };
                c.fetch_add(1, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ---------------------------------------------------------------------------------------
// setup: TLS material, a large audit log
// ---------------------------------------------------------------------------------------

/// A self-signed certificate for 127.0.0.1 and localhost in `dir`, added to `args` as
/// `--tls-cert`/`--tls-key`; returns its PEM (what clients trust).
pub(super) fn self_signed(dir: &std::path::Path, args: &mut Vec<String>) -> Vec<u8> {
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    args.extend(["--tls-cert".into(), cert_file.display().to_string()]);
    args.extend(["--tls-key".into(), key_file.display().to_string()]);
    cert.pem().into_bytes()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// `n` audit rows written straight into a new SQLite store at `path` (its schema made by the
/// library's own `SqliteStore::open`), in one transaction: refusal-like rows of 1,000 other
/// projects, none of them a change of master, all dated now (retention keeps them).
pub(super) fn seed_sqlite_audit(path: &std::path::Path, n: u64) {
    drop(writerctl::claim::stores::sqlite::SqliteStore::open(path).unwrap());
    let mut conn = rusqlite::Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO audit (at, project, verb, actor, target, result, epoch, detail, reason)
                 VALUES (?1, ?2, 'claim.take', 'seat:seed', 'task', 'unauthorized', NULL, '{\"seed\":true}', NULL)",
            )
            .unwrap();
        let at = now_ms();
        for i in 0..n {
            stmt.execute(rusqlite::params![at, format!("seed-{}", i % 1000)]).unwrap();
        }
    }
    tx.commit().unwrap();
}

/// The same rows in the namespace's Postgres audit table (the server made the schema).
pub(super) fn seed_pg_audit(postgres: &str, ns: &str, n: u64) {
    let mut pg = postgres::Client::connect(postgres, postgres::NoTls).unwrap();
    pg.batch_execute(&format!(
        "INSERT INTO \"{ns}\".audit (op_id, at, project, verb, actor, target, result, epoch, detail)
         SELECT 'seed-' || g, {}, 'seed-' || (g % 1000), 'claim.take', 'seat:seed', 'task', 'unauthorized', NULL,
                '{{\"seed\":true}}'::json
         FROM generate_series(1, {n}) g;
         ANALYZE \"{ns}\".audit;",
        now_ms()
    ))
    .unwrap();
}

// ---------------------------------------------------------------------------------------
// row 8: a store copy and a guess list
// ---------------------------------------------------------------------------------------

/// Common words the guess list is made of.
const WORDS: &[&str] = &[
    "the",
    "be",
    "to",
    "of",
    "and",
    "a",
    "in",
    "that",
    "have",
    "it",
    "for",
    "not",
    "on",
    "with",
    "he",
    "as",
    "you",
    "do",
    "at",
    "this",
    "but",
    "his",
    "by",
    "from",
    "they",
    "we",
    "say",
    "her",
    "she",
    "or",
    "an",
    "will",
    "my",
    "one",
    "all",
    "would",
    "there",
    "their",
    "what",
    "so",
    "up",
    "out",
    "if",
    "about",
    "who",
    "get",
    "which",
    "go",
    "me",
    "when",
    "make",
    "can",
    "like",
    "time",
    "no",
    "just",
    "him",
    "know",
    "take",
    "people",
    "into",
    "year",
    "your",
    "good",
    "some",
    "could",
    "them",
    "see",
    "other",
    "than",
    "then",
    "now",
    "look",
    "only",
    "come",
    "its",
    "over",
    "think",
    "also",
    "back",
    "after",
    "use",
    "two",
    "how",
    "our",
    "work",
    "first",
    "well",
    "way",
    "even",
    "new",
    "want",
    "because",
    "any",
    "these",
    "give",
    "day",
    "most",
    "us",
    "password",
    "admin",
    "secret",
    "token",
    "letmein",
    "welcome",
    "dragon",
    "monkey",
    "sunshine",
    "master",
    "shadow",
    "correct",
    "horse",
    "battery",
    "staple",
    "writer",
    "coordinator",
    "kubernetes",
    "cluster",
    "production",
    "staging",
];

/// `n` guesses: common words alone, capitalised, with years, in pairs and in fours (the
/// shape of the token), with the token itself among them.
pub(super) fn guess_list(n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(n);
    let years = ["2023", "2024", "2025", "123", "1", "!"];
    let push = |g: String, out: &mut Vec<String>| {
        if out.len() < n - 1 {
            out.push(g);
        }
    };
    for w in WORDS {
        push(w.to_string(), &mut out);
        let mut cap = w.to_string();
        cap[..1].make_ascii_uppercase();
        push(cap, &mut out);
        for y in years {
            push(format!("{w}{y}"), &mut out);
        }
    }
    'pairs: for a in WORDS {
        for b in WORDS {
            if out.len() >= n - 1 - 2000 {
                break 'pairs;
            }
            push(format!("{a} {b}"), &mut out);
        }
    }
    let mut k = 0usize;
    while out.len() < n - 1 {
        let pick = |j: usize| WORDS[(k * 7 + j * 13 + j * j * k) % WORDS.len()];
        push(format!("{} {} {} {} {}", pick(1), pick(2), pick(3), pick(4), years[k % 3]), &mut out);
        k += 1;
    }
    // The token, somewhere in the second half (the list is tried in order).
    out.insert(n * 7 / 10, WEAK_TOKEN.to_string());
    out
}

/// The kept-answer seal key as `src/claim/requests/mod.rs::seal_key` derives it for one
/// credential (HKDF-SHA256, the record key as salt, the credential length-prefixed): the
/// derivation is private to the crate, so it is replicated here with the same library calls,
/// as an attacker who read the source would.
fn seal_key_v1(record_key: &str, credential: &str) -> [u8; 32] {
    let bytes = credential.trim().as_bytes();
    let mut ikm = Vec::with_capacity(8 + bytes.len());
    ikm.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    ikm.extend_from_slice(bytes);
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(record_key.as_bytes()), &ikm)
        .expand(b"writerctl kept answer v1", &mut key)
        .unwrap();
    key
}

/// `xchacha20poly1305:` + hex(nonce || ciphertext) opened with `key` (the record key as
/// associated data), as `open_sealed` does.
fn open_v1(key: &[u8; 32], record_key: &str, sealed_hex: &[u8]) -> Option<Vec<u8>> {
    use chacha20poly1305::aead::{Aead, KeyInit, Payload};
    use chacha20poly1305::{XChaCha20Poly1305, XNonce};
    let (nonce, sealed) = sealed_hex.split_at_checked(24)?;
    let nonce: [u8; 24] = nonce.try_into().ok()?;
    XChaCha20Poly1305::new(&(*key).into())
        .decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad: record_key.as_bytes() })
        .ok()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// The kept answers in a copy of the store: (record key, answer as stored).
fn copied_answers(d: &Deployment, copy_dir: &std::path::Path) -> Vec<(String, String)> {
    match &d.backing {
        Backing::Sqlite(path) => {
            // What an attacker copies: the file and its WAL, as they are on disk.
            let copy = copy_dir.join("copy.sqlite");
            std::fs::copy(path, &copy).unwrap();
            let wal = PathBuf::from(format!("{}-wal", path.display()));
            if wal.exists() {
                std::fs::copy(&wal, copy_dir.join("copy.sqlite-wal")).unwrap();
            }
            let conn = rusqlite::Connection::open(&copy).unwrap();
            let mut stmt = conn.prepare("SELECT key, answer FROM requests").unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
        }
        Backing::RedisPg { redis, postgres, ns } => {
            // A dump of the namespace's kept answers (`{ns}:req:<key>`), and Postgres's table.
            let mut out = Vec::new();
            let mut r = redis::Client::open(redis.as_str()).unwrap().get_connection().unwrap();
            let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{{{ns}}}:req:*")).query(&mut r).unwrap_or_default();
            for k in keys {
                let text: Option<String> = redis::cmd("GET").arg(&k).query(&mut r).ok();
                let kept = text.and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
                if let (Some((_, key)), Some(answer)) =
                    (k.rsplit_once(":req:"), kept.and_then(|v| v["answer"].as_str().map(String::from)))
                {
                    out.push((key.to_string(), answer));
                }
            }
            if let Ok(mut pg) = postgres::Client::connect(postgres, postgres::NoTls) {
                for row in pg.query(&format!("SELECT key, answer FROM \"{ns}\".requests"), &[]).unwrap_or_default() {
                    out.push((row.get(0), row.get(1)));
                }
            }
            out
        }
    }
}

/// Row 8: a server started with the token (if it accepts it), kept answers made
/// under it and under an identity key, a copy of the store, and a 10,000-word guess list
/// run against every sealed answer in the copy, offline.
pub(super) fn store_copy(spec: &StoreSpec, cfg: &Config) -> Row {
    let o = |admin_token| DeployOpts { admin_token, max_connections: cfg.max_connections, ..DeployOpts::default() };
    let (d, weak_accepted, why) = match Deployment::deploy(spec, &o(Some(WEAK_TOKEN.into()))) {
        Ok(d) => (d, true, String::new()),
        Err(e) => (Deployment::deploy(spec, &o(None)).unwrap(), false, e),
    };
    let store = d.store;
    let project = fresh("abuse-copy");
    // Kept answers sealed under the admin token (`identity add` with a request id: the
    // answer holds the identity's key) and under an identity key (`register`: the session token).
    let mut secrets: Vec<(String, &'static str)> = Vec::new();
    let mut keys = Vec::new();
    for who in ["alice", "bob", "carol"] {
        let k = enroll(&d.admin_client().with_request(Some(RequestId::generate())), &project, who).unwrap().key;
        secrets.push((k.expose().to_string(), "identity key"));
        keys.push(k);
    }
    let row = ControllerKey { identity: "alice".into(), surface: "abuse".into(), machine_id: "bench".into() };
    let r = register(&d.client().with_request(Some(RequestId::generate())), &project, &row, &keys[0]).unwrap();
    secrets.push((r.token.expose().to_string(), "session token"));
    secrets.push((d.admin.expose().to_string(), "admin token"));
    let copy_dir = tempfile::tempdir().unwrap();
    let answers = copied_answers(&d, copy_dir.path());
    drop(d);
    let sealed: Vec<(String, Vec<u8>)> =
        answers.iter().filter_map(|(k, a)| Some((k.clone(), unhex(a.strip_prefix("xchacha20poly1305:")?)?))).collect();
    let other_forms: Vec<String> = answers
        .iter()
        .filter(|(_, a)| !a.starts_with("xchacha20poly1305:"))
        .map(|(_, a)| a.split(':').next().unwrap_or("").chars().take(24).collect())
        .collect();
    let guesses = guess_list(10_000);
    let t = Instant::now();
    let mut opened: Vec<(String, String)> = Vec::new();
    for (key, bytes) in &sealed {
        for g in &guesses {
            if let Some(plain) = open_v1(&seal_key_v1(key, g), key, bytes) {
                opened.push((g.clone(), String::from_utf8_lossy(&plain).into_owned()));
                break;
            }
        }
    }
    let took = t.elapsed();
    let tries = sealed.len() * guesses.len();
    let recovered = |what: &str| {
        let mut found: Vec<&str> = secrets
            .iter()
            .filter(|(s, w)| *w == what && (opened.iter().any(|(g, p)| p.contains(s.as_str()) || g == s)))
            .map(|(s, _)| s.as_str())
            .collect();
        found.dedup();
        found.len()
    };
    let (keys, tokens, admin) = (recovered("identity key"), recovered("session token"), recovered("admin token"));
    let mut verdict = Vec::new();
    if weak_accepted {
        verdict.push("weak admin token accepted");
    }
    if keys + tokens + admin > 0 {
        verdict.push("store copy opened");
    }
    let notes = format!(
        "admin token {WEAK_TOKEN:?} {}; copy holds {} kept answers, {} sealed (v1 form){}; {} guesses x {} sealed = {tries} tries in {:.2} s ({:.0}/s): opened {} answers, recovered admin token {}, identity keys {keys}/3, session tokens {tokens}/1",
        if weak_accepted {
            "accepted by serve".to_string()
        } else {
            format!("refused by serve ({})", why.lines().next().unwrap_or(""))
        },
        answers.len(),
        sealed.len(),
        if other_forms.is_empty() { String::new() } else { format!(", other forms {other_forms:?}") },
        guesses.len(),
        sealed.len(),
        took.as_secs_f64(),
        tries as f64 / took.as_secs_f64().max(1e-9),
        opened.len(),
        if admin > 0 { "yes" } else { "no" },
    );
    let mut json = serde_json::Map::new();
    for (k, v) in [
        ("weak_token_accepted", serde_json::json!(weak_accepted)),
        ("kept_answers", serde_json::json!(answers.len())),
        ("sealed_v1", serde_json::json!(sealed.len())),
        ("guesses", serde_json::json!(guesses.len())),
        ("tries", serde_json::json!(tries)),
        ("guess_seconds", serde_json::json!(round1(took.as_secs_f64() * 100.0) / 100.0)),
        ("opened", serde_json::json!(opened.len())),
        ("recovered_admin_token", serde_json::json!(admin > 0)),
        ("recovered_identity_keys", serde_json::json!(keys)),
        ("recovered_session_tokens", serde_json::json!(tokens)),
    ] {
        json.insert(k.into(), v);
    }
    Row {
        attack: Attack::StoreCopy.name(),
        store,
        live: false,
        base_handoff: Lat::default(),
        handoff: Lat::default(),
        base_heartbeat: Lat::default(),
        heartbeat: Lat::default(),
        base_claim: Lat::default(),
        claim: Lat::default(),
        probes: Probes::default(),
        probe_port: None,
        mem: None,
        growth_bytes: 0,
        base_growth_per_s: 0.0,
        growth: String::new(),
        refusals: 0,
        audit_rows: None,
        secs: took.as_secs_f64(),
        notes,
        json,
        tokens: 0,
        verdict: Some(verdict),
    }
}
