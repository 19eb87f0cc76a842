//! `deploy/grafana/writerctl.json`: valid JSON a Grafana can import, and every PromQL
//! expression in it names only metrics writerctl exports — collected from the real
//! exporters, as the generated metrics reference is: a served coordinator's `/metrics` and
//! `writerctl status --format prometheus` (never a hand-written list, so a renamed or
//! removed metric fails here).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::serve::{Server, http_get};
use crate::support::*;

/// Every series name an exposition text can carry: each `# TYPE` family, with a
/// histogram's `_bucket`, `_sum` and `_count` series.
fn series_names(text: &str, into: &mut BTreeSet<String>) {
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else { continue };
        let (name, kind) = rest.split_once(' ').unwrap();
        into.insert(name.to_string());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                into.insert(format!("{name}{suffix}"));
            }
        }
    }
}

/// What the exporters export: a coordinator over an embedded store, and a lock-directory scan.
fn exported() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let home = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", home.path().join("store.sqlite").display());
    let server = Server::start(home.path(), &["--store".to_string(), store], &[]);
    let (status, _, body) = http_get(&format!("{}/metrics", server.url));
    assert_eq!(status, 200, "{body}");
    series_names(&body, &mut names);
    let env = TestEnv::new();
    env.lock_dir();
    let r = env.run(&["status", "--format", "prometheus"]);
    series_names(&r.assert_ok().stdout, &mut names);
    assert!(names.contains("writerctl_locks") && names.contains("writerctl_verbs_total"), "{names:?}");
    names
}

/// PromQL words that are not metric names: operators, and the aggregations (which may be
/// followed by `by (...)` rather than by their parenthesis).
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];

/// The metric names an expression uses: every identifier that is not a function (followed
/// by `(`), a keyword, or inside a label matcher `{...}`, a range `[...]`, a string, or the
/// label list after `by`/`without`/`on`/`ignoring`.
fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    let skip_to =
        |i: usize, close: char| chars[i..].iter().position(|c| *c == close).map_or(chars.len(), |p| i + p + 1);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => i = skip_to(i, '}'),
            '[' => i = skip_to(i, ']'),
            '"' => i = skip_to(i + 1, '"'),
            // A number (`0.99`, `1e-9`): its letters are not a name.
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let next = chars[i..].iter().find(|c| !c.is_whitespace());
                if matches!(word.as_str(), "by" | "without" | "on" | "ignoring" | "group_left" | "group_right") {
                    // Its label list.
                    if next == Some(&'(') {
                        i = skip_to(i, ')');
                    }
                } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) {
                    out.push(word);
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Every `expr` of every target, and the templating queries, with where they are.
fn expressions(dash: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push((p["title"].as_str().unwrap().to_string(), t["expr"].as_str().unwrap().to_string()));
        }
    }
    for v in dash["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["definition"].as_str() {
            // label_values(METRIC, LABEL): the metric is the first argument.
            let inner = q.trim_start_matches("label_values(").trim_end_matches(')');
            out.push((format!("variable {}", v["name"]), inner.split(',').next().unwrap().to_string()));
        }
    }
    out
}

#[test]
fn the_dashboard_is_valid_json_and_queries_only_exported_metrics() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/writerctl.json");
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("valid JSON");
    assert_eq!((dash["uid"].as_str(), dash["title"].as_str()), (Some("writerctl"), Some("writerctl")));
    let panels = dash["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids must be unique");
    let exported = exported();
    let exprs = expressions(&dash);
    assert!(exprs.len() >= 20, "{exprs:?}");
    let mut used = BTreeSet::new();
    for (title, expr) in &exprs {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{title}: {expr} names no metric");
        for n in names {
            assert!(exported.contains(&n), "{title}: {expr} uses {n}, which writerctl does not export");
            used.insert(n);
        }
    }
    // Every panel queries through the datasource variable, so an import picks the data source.
    for p in panels.iter().filter(|p| p["type"] != "row") {
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
    }
    // The panels the issue asks for: verbs, readiness, store, queue, lock states.
    for needed in [
        "writerctl_verbs_total",
        "writerctl_verb_duration_seconds_bucket",
        "writerctl_store_degraded",
        "writerctl_audit_retry_queue_oldest_age_seconds",
        "writerctl_verb_queue_seconds_bucket",
        "writerctl_locks",
        "writerctl_open_registration",
    ] {
        assert!(used.contains(needed), "no panel shows {needed}");
    }
    for state in ["active_live", "active_stale", "sealed", "in_transition", "malformed"] {
        assert!(exprs.iter().any(|(_, e)| e.contains(&format!("state=\"{state}\""))), "no panel for state {state}");
    }
}

#[test]
fn the_expression_reader_finds_metrics_and_skips_functions_labels_and_keywords() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (le, verb) (rate(writerctl_verb_duration_seconds_bucket{verb!="x"}[5m])))"#
        ),
        ["writerctl_verb_duration_seconds_bucket"]
    );
    assert_eq!(metric_names("time() - max by (runtime_dir) (a_b) or vector(0) and on (x) up / 1e-9"), ["a_b", "up"]);
}
