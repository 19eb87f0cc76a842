//! What `status --watch` and `master status --watch` share: ending on SIGINT/SIGTERM with
//! exit 0, the timestamped output (a JSON document per line with `"at"`, or a text report
//! under a time line), and the one-line notes on stderr.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::output::{clean, clean_lines};

/// Held while one watched state is written, so that SIGINT/SIGTERM ends the process between
/// two documents, never inside one (a consumer reading line by line never sees half a line).
static PRINTING: Mutex<()> = Mutex::new(());

/// How long a signal waits for the document being written before exiting anyway (stdout may
/// be a pipe nobody reads any more).
const FINISH_LINE: Duration = Duration::from_secs(1);

/// From now on, SIGINT or SIGTERM ends the process with exit status 0 once the document
/// being printed (if any) is complete. A watch holds nothing that needs undoing: no lock,
/// no file, at most an idle connection the kernel closes.
pub fn exit_on_signal() -> Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if signals.forever().next().is_some() {
            let until = Instant::now() + FINISH_LINE;
            while Instant::now() < until {
                if let Ok(_printing) = PRINTING.try_lock() {
                    std::process::exit(0);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            std::process::exit(0);
        }
    })?;
    Ok(())
}

/// Now, as the `"at"` of a watched document (RFC 3339, UTC, milliseconds).
pub fn at_now() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    super::coord::rfc3339(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// Prints one watched state with `--json`: `doc` plus `"at"`, as one line.
pub fn print_json_state(doc: &serde_json::Value) -> std::io::Result<()> {
    let mut doc = doc.clone();
    if let Some(map) = doc.as_object_mut() {
        map.insert("at".into(), serde_json::Value::String(at_now()));
    }
    // Not through `Output::line`: JSON escapes what it must itself, and text escaping would
    // change the document's strings.
    emit(&format!("{}\n", serde_json::to_string(&doc)?))
}

/// Prints one watched state as text: `text` under a line with the time, then a blank line.
pub fn print_text_state(text: &str) -> std::io::Result<()> {
    emit(&format!("[{}]\n{}\n\n", at_now(), clean_lines(text)))
}

/// Writes `text` in one piece and flushes it (a pipe reader sees each change as it comes),
/// holding [`PRINTING`].
fn emit(text: &str) -> std::io::Result<()> {
    let _printing = PRINTING.lock().unwrap_or_else(|p| p.into_inner());
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// One line on stderr, prefixed `writerctl: ` — also with `--json`: it says how the watch
/// works or that it lost its source, which a script reading stdout must not parse, and an
/// operator must still see.
pub fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "writerctl: {}", clean(text));
}

/// A human duration for the notes: `2s`, `0.5s`.
pub fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
