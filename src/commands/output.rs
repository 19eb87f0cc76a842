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
        let mut out = io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
        out.flush()
    }

    /// Writes a line to stdout.
    pub fn line(&self, text: &str) -> io::Result<()> {
        let mut out = io::stdout().lock();
        writeln!(out, "{text}")?;
        out.flush()
    }

    /// Writes a note to stderr (human mode only; JSON mode keeps stderr quiet).
    pub fn note(&self, text: &str) {
        if !self.json {
            let _ = writeln!(io::stderr(), "{text}");
        }
    }
}
