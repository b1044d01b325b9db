//! Where the CLI writes: results on stdout, reports on stderr.

use serde::Serialize;
use stasis_client::Error;
use stasis_client::sidecar::Log;
use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

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

    /// A log for a long-running command: each line on stderr after the UTC time (to the
    /// millisecond, so a container's log tells how long each step took) and `prefix`.
    pub fn log(&self, prefix: String) -> Log {
        let quiet = self.quiet;
        Arc::new(move |line| {
            if !quiet {
                let now = humantime::format_rfc3339_millis(SystemTime::now());
                eprintln!("{now} {prefix} {line}");
            }
        })
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
