//! Printing: one JSON document on stdout with `--json`, human text otherwise. Every write
//! returns its I/O error so `main` can exit quietly on a broken pipe.

use std::io::{self, Write};

use serde::Serialize;

/// Output mode shared by every command.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// `--json`.
    pub json: bool,
}

impl Output {
    /// Writes `value` as one pretty JSON document and a newline.
    pub fn json<T: Serialize>(&self, value: &T) -> io::Result<()> {
        // Buffered: stdout is line-buffered, and a pretty document has a line per field
        // (`status --json` over 10,000 locks made 300,000 write calls unbuffered).
        let mut out = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
        out.flush()
    }

    /// Writes a line to stdout. Control characters other than the line breaks the text
    /// is built with are escaped ([`clean_lines`]); fields from files still need [`clean`],
    /// which escapes their line breaks too.
    pub fn line(&self, text: &str) -> io::Result<()> {
        let mut out = io::stdout().lock();
        writeln!(out, "{}", clean_lines(text))?;
        out.flush()
    }

    /// Writes a note to stderr (human mode only; JSON mode keeps stderr quiet).
    pub fn note(&self, text: &str) {
        if !self.json {
            let _ = writeln!(io::stderr(), "{}", clean_lines(text));
        }
    }
}

/// Should `c` be shown escaped on a terminal? Every control character (C0 including
/// CR and LF, DEL, C1) and the bidirectional-text overrides, which reorder what a terminal
/// shows without changing the bytes.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One field of text output, escaped for a terminal (issue 22): `\n`, `\r`, `\t`, `\u{1b}`…
///
/// Why: record fields (hostname, process kind, times), file names and session ids from a
/// lock directory are written by whoever can write there. Printed raw, an ESC sequence can
/// clear the screen or recolour it, and a CR or LF can forge a whole line
/// (`state: missing`) in `status` or an error. JSON output is escaped by the serializer.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars().map(|c| if needs_escape(c) { c.escape_default().to_string() } else { c.to_string() }).collect(),
    )
}

/// [`clean`] for text we laid out ourselves over several lines: keeps `\n`, escapes every
/// other control character.
pub fn clean_lines(s: &str) -> String {
    s.split('\n').map(|l| clean(l).into_owned()).collect::<Vec<_>>().join("\n")
}

/// A table in the house style (status, master status, audit).
pub fn table(header: &[&str]) -> comfy_table::Table {
    use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    table.set_header(header.to_vec());
    table
}

/// A progress reporter for hashing large transcripts: a bar on stderr when stderr is a
/// terminal and the transcript is at least 64 MiB; nothing otherwise.
pub fn hash_progress(out: Output) -> std::sync::Arc<dyn Fn(u64, u64) + Send + Sync> {
    use std::io::IsTerminal;
    use std::sync::OnceLock;
    const MIN_BYTES: u64 = 64 << 20;
    let tty = !out.json && std::io::stderr().is_terminal();
    let bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    std::sync::Arc::new(move |done, total| {
        if !tty || total < MIN_BYTES {
            return;
        }
        let b = bar.get_or_init(|| {
            let b = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "hashing transcript {bar:40} {bytes}/{total_bytes} {bytes_per_sec}",
            ) {
                b.set_style(style);
            }
            b
        });
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
        }
    })
}

/// One structured log line on stderr (seed 001 "Failure contract": session id, previous
/// host/pid, sealing time; never an owner id or a transcript path).
pub fn log_event(event: &str, fields: &[(&str, String)]) {
    let mut line = format!("writerctl: event={event}");
    for (k, v) in fields {
        line.push_str(&format!(" {k}={v:?}"));
    }
    // One write(2) per line: a supervised writer shares this stderr, and two writes (text,
    // then newline) let its output land inside our line.
    line.push('\n');
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(clean("host"), "host");
        assert_eq!(clean("h\x1b[2Jx"), "h\\u{1b}[2Jx");
        assert_eq!(clean("a\r\nstate: missing"), "a\\r\\nstate: missing");
        assert_eq!(clean("x\u{202e}y\u{85}"), "x\\u{202e}y\\u{85}");
        assert_eq!(clean_lines("one\ntwo\x07"), "one\ntwo\\u{7}");
        assert_eq!(clean("émoji ✓"), "émoji ✓");
    }
}
