//! Issue 28 point 4 ("refusals are cheap and bounded") and point 5's queue wait in
//! `/metrics`, through the real server binary over SQLite:
//!
//! * a flood of wrong-token requests writes a bounded number of audit rows per interval,
//!   and the summary rows account for every refusal;
//! * one seat writing faster than the per-seat rate gets `rate_limited` (429,
//!   `Retry-After`) and nothing more is written;
//! * a correct `master claim` is served while many source addresses flood wrong
//!   passwords, ahead of them (the budget's tier metrics), and `/metrics` shows the time
//!   it queued.
//!
//! Strangers use other loopback addresses (any 127/8 address reaches a 127.0.0.1 listener
//! on Linux): the server tells sources apart by address.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use crate::master::{Co, PASSWORD, PROJECT, ok_doc};
use crate::serve::{http_get, metric};
use crate::support::request_from;

/// One POST on a fresh connection from `from` with a bearer token: (status, head, JSON body).
/// Each also claims another source in the header the server uses internally for the peer
/// address, which the server must ignore (the summaries name the real address).
pub(crate) fn post_from(
    from: IpAddr,
    to: SocketAddr,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, String, Value) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("x-writerctl-peer", "10.6.6.6")];
    if let Some(b) = &bearer {
        headers.insert(0, ("authorization", b.as_str()));
    }
    request_from(from, to, "POST", path, &headers, body)
}

pub(crate) fn ip(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// Refusals the audit rows of `verb` with `result` account for: one per row, or a summary
/// row's count.
fn accounted(audit: &[Value], verb: &str, result: &str) -> (usize, u64) {
    let rows: Vec<&Value> = audit.iter().filter(|a| a["verb"] == verb && a["result"] == result).collect();
    let n = rows.iter().map(|a| a["detail"]["refusals"].as_u64().unwrap_or(1)).sum();
    (rows.len(), n)
}

/// Issue 28 point 4: N wrong-token heartbeats from one source used to write N audit rows
/// (2.9 MB/s into SQLite under a flood). Now: a bounded number of rows per interval (the
/// first ones, then one summary) whose counts add up to N. Fails on main (N rows).
#[test]
fn a_refusal_flood_writes_a_bounded_number_of_audit_rows_with_its_count() {
    const N: u64 = 200;
    let co = Co::http_sqlite();
    let alice = co.reg("alice");
    let to = co.addr();
    let path = format!("/v1/projects/{PROJECT}/sessions/{}/heartbeat", alice.sid);
    for i in 0..N {
        // A new wrong token each time: each has a rate bucket of its own, so every one of
        // these is an `unauthorized` refusal, not a `rate_limited` one.
        let (status, _, doc) = post_from(ip(2), to, &path, Some(&format!("wrong-token-{i}")), &json!({}));
        assert_eq!((status, doc["error"]["code"].as_str()), (401, Some("unauthorized")), "{doc}");
    }
    // Reading the audit writes the counts so far (a summary row), then shows them.
    let audit = co.audit(Some(PROJECT));
    let (rows, refusals) = accounted(&audit, "session.heartbeat", "unauthorized");
    assert_eq!(refusals, N, "every refusal is a row or in a summary's count: {audit:#?}");
    // 200 requests take far less than 20 intervals of 10 s, each with at most 8 rows and
    // a summary; main wrote 200.
    assert!(rows <= 40, "{rows} audit rows for {N} refusals");
    let summary = audit.iter().find(|a| a["detail"]["summary"] == true).expect("a summary row");
    assert_eq!((&summary["actor"], &summary["detail"]["source"]), (&json!("source:127.0.0.2"), &json!("127.0.0.2")));
    let (_, _, body) = http_get(&format!("{}/metrics", co.url()));
    assert!(metric(&body, "writerctl_refusals_summarized_total").unwrap() >= (N - rows as u64) as f64, "{body}");
}

/// Issue 28 point 4: one seat grew Redis by 54 MB in 5 s. Writes past the per-seat rate
/// answer `rate_limited` (HTTP 429, `Retry-After`, exit 75 for the CLI) and write nothing:
/// the claim's version counts exactly the accepted touches. Fails on main (no limit).
#[test]
fn per_seat_writes_over_the_rate_are_rate_limited_and_write_nothing() {
    let co = Co::http_sqlite();
    let alice = co.reg("alice");
    co.reg("bob");
    co.ok(&["channel", "create", "--project", PROJECT, "--channel", "ch", "--steward", "bob"]);
    let take = ["claim", "take", "--project", PROJECT, "--channel", "ch", "--task", "t", "--seat", "alice"];
    let mut take = take.to_vec();
    take.extend(["--token-file", alice.token_file.to_str().unwrap()]);
    let v0 = co.ok(&take)["version"].as_u64().unwrap();
    let to = co.addr();
    let path = format!("/v1/projects/{PROJECT}/channels/ch/claims/t/touch");
    // 4 x 100 touches back to back: far past a burst of 60 at 20/s unless they took 17 s.
    let answers: Vec<(u16, String, Value)> = (0..4)
        .map(|_| {
            let (path, token) = (path.clone(), alice.token.clone());
            thread::spawn(move || {
                (0..100)
                    .map(|_| post_from(ip(1), to, &path, Some(&token), &json!({"seat": "alice"})))
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let accepted = answers.iter().filter(|(status, ..)| *status == 200).count() as u64;
    let limited: Vec<(String, Value)> =
        answers.iter().filter(|(status, ..)| *status == 429).map(|(_, h, d)| (h.clone(), d.clone())).collect();
    assert_eq!(accepted + limited.len() as u64, 400, "only 200 and 429: {answers:?}");
    assert!(!limited.is_empty(), "no write was rate limited ({accepted} accepted)");
    let (head, doc) = &limited[0];
    assert_eq!(doc["error"]["code"], "rate_limited", "{doc}");
    assert!(doc["error"]["hint"].as_str().unwrap().starts_with("retry after "), "{doc}");
    assert!(doc["error"]["retry_after_ms"].as_u64().unwrap() >= 1, "{doc}");
    assert!(head.contains("\r\nretry-after: "), "{head}");
    let show = co.ok(&["claim", "show", "--project", PROJECT, "--channel", "ch", "--task", "t"]);
    assert_eq!(show["version"].as_u64().unwrap(), v0 + accepted, "a refused touch wrote nothing: {show}");
    let (_, _, body) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(metric(&body, "writerctl_rate_limited_total"), Some(limited.len() as f64), "{body}");
    // The refusals are audited through the per-source limiter: a bounded number of rows.
    let (rows, n) = accounted(&co.audit(Some(PROJECT)), "claim.touch", "rate_limited");
    assert_eq!(n, limited.len() as u64);
    assert!(rows <= 20, "{rows} rows");
}

/// Issue 28 points 4 and 5: many source addresses flooding wrong passwords saturated
/// argon2 (a correct claim went from 0.04 s to 20 s at 450 sources). Once every flooding
/// source has been refused, each of its guesses queues in the budget's last tier; the
/// correct claim, from the address the operator claimed from before (issue 39 point 7: a
/// dry run proves the pair here), is the one verification admitted in tier 0 meanwhile,
/// so it goes ahead of every queued guess (the ordering itself is
/// `budget::tests::the_operator_from_a_proven_address_goes_before_any_number_of_fresh_addresses`),
/// and `/metrics` shows how long it queued. Fails on main (no budget, no queue histogram).
#[test]
fn a_correct_claim_goes_ahead_of_a_flood_from_many_sources() {
    const SOURCES: u8 = 12;
    let co = Co::http_sqlite();
    co.reg("alice");
    let bob = co.reg("bob");
    co.add_operator("ops", PASSWORD);
    let to = co.addr();
    let path = format!("/v1/projects/{PROJECT}/master/claim");
    // The operator's earlier claim from this address (a dry run: every check, nothing
    // changed) proves the (address, ops) pair; an address never seen would be in tier 1.
    let (_, _, unproven) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(metric(&unproven, "writerctl_argon2_proven"), Some(0.0), "{unproven}");
    ok_doc(&co.claim("bob", "ops", PASSWORD, &["--expect-epoch", "1", "--dry-run"]));
    let (_, _, proven) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(metric(&proven, "writerctl_argon2_proven"), Some(1.0), "{proven}");
    let stop = Arc::new(AtomicBool::new(false));
    // Two connections per source (its running slots), each guessing until stopped, with a
    // new unknown operator id each time (each id's back-off stays short).
    let answered: Vec<Arc<AtomicU32>> = (0..2 * usize::from(SOURCES)).map(|_| Arc::default()).collect();
    let flood: Vec<_> = answered
        .iter()
        .enumerate()
        .map(|(n, count)| {
            let (stop, path, count) = (stop.clone(), path.clone(), count.clone());
            let from = ip(10 + (n / 2) as u8);
            thread::spawn(move || {
                let mut refused = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let guess = json!({"to": "bob", "expect_epoch": 1, "operator": format!("guess-{n}-{refused}"),
                                       "password": "a wrong guess"});
                    let (status, _, doc) = post_from(from, to, &path, None, &guess);
                    assert_eq!(status, 401, "{doc}");
                    refused += 1;
                    count.store(refused, Ordering::Relaxed);
                }
                refused
            })
        })
        .collect();
    // Once every connection has had an answer, every guess it sends comes from a source
    // remembered as refused.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while answered.iter().any(|c| c.load(Ordering::Relaxed) == 0) {
        assert!(std::time::Instant::now() < deadline, "the flood never got going");
        thread::sleep(Duration::from_millis(100));
    }
    let tier = |body: &str, t: u8| metric(body, &format!("writerctl_argon2_admitted_total{{tier=\"{t}\"}}")).unwrap();
    let (_, _, before) = http_get(&format!("{}/metrics", co.url()));
    let v = ok_doc(&co.claim("bob", "ops", PASSWORD, &["--expect-epoch", "1"]));
    assert_eq!(v["new_master"]["session_id"], json!(bob.sid));
    let (_, _, body) = http_get(&format!("{}/metrics", co.url()));
    stop.store(true, Ordering::Relaxed);
    let refused: u32 = flood.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(refused >= 2 * u32::from(SOURCES), "{refused}");
    // Meanwhile the flood's guesses were admitted in tier 2 only; the claim in tier 0.
    assert_eq!((tier(&body, 0) - tier(&before, 0), tier(&body, 1) - tier(&before, 1)), (1.0, 0.0), "{before}\n{body}");
    // Every guess and the claim were admitted once, and the flood's later guesses in tier
    // 2 (how many depends on how fast this machine ran the flood: counts, not a rate).
    let (_, _, after) = http_get(&format!("{}/metrics", co.url()));
    assert_eq!(tier(&after, 0) + tier(&after, 1) + tier(&after, 2), f64::from(refused) + 2.0, "{after}");
    assert!(tier(&after, 2) >= 1.0, "{after}");
    // The queue wait is on /metrics, apart from the duration histogram.
    let queued = metric(&body, "writerctl_verb_queue_seconds_count{verb=\"master.claim\"}").unwrap();
    assert!(queued >= 2.0 * f64::from(SOURCES) + 1.0, "{body}");
    assert!(body.contains("writerctl_verb_queue_seconds_bucket{verb=\"master.claim\",le=\"+Inf\"}"), "{body}");
    assert!(metric(&body, "writerctl_argon2_permits").unwrap() >= 1.0, "{body}");
}

/// Issue 39 point 3: names are checked by the server before anything else sees them. On
/// main a refused admin request with a 30 KB project and a 60 KB identity wrote a 90 KB
/// audit row (2,000 of them: +236 MB of SQLite), and one source varying the project name
/// wrote a row per name. Now an oversized or malformed name is `invalid_argument` (400)
/// with no row at all, and wrong-token admin requests over 300 distinct projects write at
/// most one window's rows and a summary naming a few of the projects.
#[test]
fn names_are_checked_at_the_edge_and_cannot_multiply_audit_rows() {
    let co = Co::http_sqlite();
    co.reg("alice");
    let to = co.addr();
    // (A 30 KB name in the path no longer fits a request head of 16 KiB: 431, see
    // `memory_budget`.)
    let big_project = "p".repeat(10_000);
    let big_identity = "i".repeat(60_000);
    let cases = [
        (format!("/v1/projects/{big_project}/identities"), json!({"identity": "ok"}), "project"),
        (format!("/v1/projects/{PROJECT}/identities"), json!({"identity": big_identity}), "identity"),
        (format!("/v1/projects/{PROJECT}/identities"), json!({"identity": "ali\u{200b}ce"}), "identity"),
    ];
    for (i, (path, body, what)) in cases.iter().enumerate() {
        let (status, _, doc) = post_from(ip(20 + i as u8), to, path, Some("wrong-admin-token"), body);
        assert_eq!((status, doc["error"]["code"].as_str()), (400, Some("invalid_argument")), "{what}: {doc}");
        assert!(doc["error"]["message"].as_str().unwrap().starts_with(what), "{doc}");
    }
    for i in 0..300 {
        let path = format!("/v1/projects/p{i}/identities");
        let (status, _, doc) = post_from(ip(30), to, &path, Some("wrong-admin-token"), &json!({"identity": "x"}));
        assert_eq!((status, doc["error"]["code"].as_str()), (401, Some("unauthorized")), "{doc}");
    }
    let audit = co.audit(None);
    let oversized = audit.iter().filter(|a| a.to_string().len() > 4_096).count();
    assert_eq!(oversized, 0, "no audit row carries a request-sized string");
    let (rows, refusals) = accounted(&audit, "identity.add", "unauthorized");
    assert_eq!(refusals, 300, "every refusal is a row or in a summary's count");
    assert!(rows <= 10, "{rows} audit rows for 300 refusals over 300 project names");
    let summary = audit.iter().find(|a| a["verb"] == "identity.add" && a["detail"]["summary"] == true).unwrap();
    assert!(summary["detail"]["projects"].as_array().unwrap().len() <= 4, "{summary}");
}
