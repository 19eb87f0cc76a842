//! The book (`docs/`, mdBook) and the README: every relative link and `#anchor` resolves,
//! every page is in `SUMMARY.md`, and the commands the tutorials mark as runnable
//! (```` ```sh,run ```` blocks) run, in order, against the binary under test.
//!
//! `mdbook build docs` (in `.ci/run`) proves the book builds; mdBook itself does not check
//! links, so this file does. Anchors are compared with the ids mdBook 0.5 gives headings
//! (`mdbook-html`'s `id_from_content` and `unique_id`), which GitHub's README anchors match
//! for the headings used here.

use std::collections::{BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::BIN;
use crate::throwaway::free_port;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn book_src() -> PathBuf {
    root().join("docs/src")
}

/// Every Markdown file under `dir`, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The README and every page of the book.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    docs.extend(markdown_files(&book_src()));
    docs
}

/// A line's fence marker (```` ``` ```` or `~~~`, possibly indented in a list item) and
/// its info string.
fn fence(line: &str) -> Option<&str> {
    let t = line.trim_start();
    t.strip_prefix("```").or_else(|| t.strip_prefix("~~~"))
}

/// The lines of `text` outside fenced code blocks, with inline code spans blanked out, so a
/// link shown as code is not checked and a `#` in a code block is no heading.
fn prose_lines(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if fence(line).is_some() {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                kept.push_str(part);
            } else {
                kept.push_str(&" ".repeat(part.len()));
            }
        }
        out.push(kept);
    }
    out
}

/// The targets of inline links `[text](target)` in `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("").to_string();
            out.push(target);
            rest = &after[end..];
        }
    }
    out
}

/// The text a heading renders to: code spans lose their backticks, emphasis its stars,
/// links keep their text.
fn heading_text(raw: &str) -> String {
    let raw = raw.trim().trim_end_matches('#').trim();
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' | '*' => {}
            '[' => {}
            ']' if chars.peek() == Some(&'(') => {
                for c in chars.by_ref() {
                    if c == ')' {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// mdBook's `id_from_content`: lowercase; alphanumerics, `_` and `-` kept; whitespace
/// becomes `-`; everything else is dropped.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a page's headings, made unique as mdBook does (`-1`, `-2`, … on repeats).
fn heading_ids(text: &str) -> HashSet<String> {
    let mut used = HashSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if fence(line).is_some() {
            in_code = !in_code;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if in_code || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = slug(&heading_text(&line[hashes..]));
        let mut unique = id.clone();
        let mut n = 1;
        while !used.insert(unique.clone()) {
            unique = format!("{id}-{n}");
            n += 1;
        }
    }
    used
}

fn heading_ids_of(path: &Path) -> HashSet<String> {
    heading_ids(&std::fs::read_to_string(path).unwrap())
}

/// `a/b/../c` → `a/c`, without touching the filesystem.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let src = book_src();
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() { doc.clone() } else { normalize(&doc.parent().unwrap().join(file)) };
            if !resolved.exists() {
                broken.push(format!("{name}: `{target}`: {} does not exist", resolved.display()));
                continue;
            }
            // mdBook copies only docs/src: a page linking outside it breaks in the HTML book.
            if doc.starts_with(&src) && !resolved.starts_with(&src) {
                broken.push(format!("{name}: `{target}` leaves docs/src (name the repository path as code instead)"));
                continue;
            }
            if let Some(anchor) = anchor {
                if resolved.extension().is_none_or(|e| e != "md") {
                    broken.push(format!("{name}: `{target}`: an anchor into a file that is not Markdown"));
                } else if !heading_ids_of(&resolved).contains(anchor) {
                    let mut ids: Vec<_> = heading_ids_of(&resolved).into_iter().collect();
                    ids.sort();
                    broken.push(format!("{name}: `{target}`: no heading with id `{anchor}` (ids: {})", ids.join(", ")));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 50, "only {checked} links found: is the parser broken?");
}

#[test]
fn every_page_is_in_the_summary() {
    let src = book_src();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = link_targets(&summary).iter().map(|t| normalize(&src.join(t))).collect();
    let pages: BTreeSet<PathBuf> = markdown_files(&src).into_iter().filter(|p| !p.ends_with("SUMMARY.md")).collect();
    let missing: Vec<_> = pages.difference(&listed).map(|p| p.display().to_string()).collect();
    assert!(missing.is_empty(), "pages not in docs/src/SUMMARY.md (mdBook would not render them): {missing:?}");
    let absent: Vec<_> = listed.difference(&pages).map(|p| p.display().to_string()).collect();
    assert!(absent.is_empty(), "SUMMARY.md lists pages that do not exist: {absent:?}");
}

#[test]
fn heading_ids_follow_mdbook() {
    let ids = heading_ids("# The `run` supervisor\n## A lock's life\n## Usage\n## Usage\n### `status`: states\n");
    for id in ["the-run-supervisor", "a-locks-life", "usage", "usage-1", "status-states"] {
        assert!(ids.contains(id), "{id} not in {ids:?}");
    }
    assert_eq!(heading_text("[Retention](retention.md) and `x`"), "Retention and x");
    assert_eq!(link_targets("see [a](b.md#c) and `[d](e.md)`\n```\n[f](g.md)\n```\n"), vec!["b.md#c"]);
}

/// The ```` ```sh,run ```` blocks of a page, joined in order into one script.
fn runnable_script(text: &str) -> Option<String> {
    let mut script = String::new();
    let mut in_run = false;
    let mut in_code = false;
    for line in text.lines() {
        if let Some(info) = fence(line) {
            if in_code {
                in_code = false;
                in_run = false;
            } else {
                in_code = true;
                in_run = info.split([',', ' ']).any(|w| w == "run");
            }
            continue;
        }
        if in_run {
            script.push_str(line);
            script.push('\n');
        }
    }
    (!script.is_empty()).then_some(script)
}

/// Runs `script` as a reader would paste it into one shell, with `set -euo pipefail`, the
/// binary under test first on PATH, and a private HOME, state, runtime and temp directory.
/// Everything the script starts runs in its own process group, killed afterwards.
fn run_script(name: &str, script: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let xdg_runtime = tmp.path().join("xdg-runtime");
    let scratch = tmp.path().join("tmp");
    for d in [&home, &xdg_runtime, &scratch] {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    }
    // The tutorials say 7700; tests run side by side.
    let script = script.replace("127.0.0.1:7700", &format!("127.0.0.1:{}", free_port()));
    let file = tmp.path().join("script.sh");
    std::fs::write(&file, format!("set -euo pipefail\n{script}")).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = std::os::unix::process::CommandExt::process_group(
        Command::new("bash")
            .arg(&file)
            .current_dir(tmp.path())
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_RUNTIME_DIR", &xdg_runtime)
            .env("TMPDIR", &scratch)
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        0,
    )
    .spawn()
    .unwrap();
    let pgid = child.id();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Stand-in writers, servers and supervisors a failed script left behind.
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pgid}")]).stderr(Stdio::null()).status();
    let out = child.wait_with_output().unwrap();
    let log = format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match status {
        Some(s) => assert!(s.success(), "{name}: the runnable commands failed ({s})\n{log}"),
        None => panic!("{name}: the runnable commands did not finish within 120 s\n{log}"),
    }
}

#[test]
fn the_tutorials_runnable_commands_work_as_written() {
    let mut ran = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        if let Some(script) = runnable_script(&text) {
            let name = doc.strip_prefix(root()).unwrap().display().to_string();
            run_script(&name, &script);
            ran.push(name);
        }
    }
    for page in ["README.md", "docs/src/tutorial/first-handoff.md", "docs/src/tutorial/coordinator.md"] {
        assert!(ran.iter().any(|r| r == page), "{page} has no ```sh,run block any more (ran: {ran:?})");
    }
}
