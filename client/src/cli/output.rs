//! Where the CLI writes: results on stdout, reports on stderr.

use serde::Serialize;
use stasis_client::Error;
use std::io::Write;

/// Where the CLI writes: results on stdout, reports on stderr (unless quiet).
pub struct Output {
    /// No reports on stderr (errors still print).
    pub quiet: bool,
}

impl Output {
    pub fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    pub fn result(&self, value: &impl Serialize) -> Result<(), Error> {
        let line = serde_json::to_string(value)
            .map_err(|e| Error::Config(format!("encoding the result: {e}")))?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}")
            .and_then(|()| stdout.flush())
            .map_err(|e| Error::io("writing to stdout", e))
    }
}
