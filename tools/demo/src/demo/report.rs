//! What the demo prints: a numbered heading per step, indented lines with
//! the figures, a mark on every verified result, and the summary. Checks go
//! through here too, so that the summary can count them.

use anyhow::bail;
use std::{
    fmt::{Debug, Display},
    time::{Duration, Instant},
};

/// The demo's output and its tally of passed checks.
pub struct Report {
    quiet: bool,
    started: Instant,
    checks: u32,
    step: Option<String>,
}

impl Report {
    /// Starts the clock; `quiet` prints only headings and the summary.
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            started: Instant::now(),
            checks: 0,
            step: None,
        }
    }

    /// A line outside any step.
    pub fn say(&self, text: impl Display) {
        if !self.quiet {
            println!("{text}");
        }
    }

    /// The heading of step `number`.
    pub fn step(&mut self, number: u8, title: &str) {
        self.step = Some(format!("step {number} ({title})"));
        println!("\n{number}. {title}");
    }

    /// A plain line of the current step.
    pub fn line(&self, text: impl Display) {
        if !self.quiet {
            println!("   {text}");
        }
    }

    /// A line stating a verified result.
    pub fn ok(&self, text: impl Display) {
        if !self.quiet {
            println!("   ✓ {text}");
        }
    }

    /// Fails unless `actual` equals `expected`, naming `what`.
    pub fn equal<T: PartialEq + Debug>(
        &mut self,
        what: &str,
        actual: T,
        expected: T,
    ) -> anyhow::Result<()> {
        if actual != expected {
            bail!("{what}: expected {expected:?}, got {actual:?}");
        }
        self.checks += 1;
        Ok(())
    }

    /// Fails with `explain()` unless `holds`.
    pub fn that(&mut self, holds: bool, explain: impl FnOnce() -> String) -> anyhow::Result<()> {
        if !holds {
            bail!("{}", explain());
        }
        self.checks += 1;
        Ok(())
    }

    /// Checks passed so far.
    pub fn checks(&self) -> u32 {
        self.checks
    }

    /// Time since the demo started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The step running now, to name it when something fails.
    pub fn current_step(&self) -> &str {
        self.step.as_deref().unwrap_or("setup")
    }
}

/// Bytes for people: `20.0 MB` (decimal units), or `812 B`.
pub fn bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

/// The first 12 hex digits of a sha256, enough to tell versions apart.
pub fn sha(hex: &str) -> String {
    let short: String = hex.chars().take(12).collect();
    format!("{short}…")
}

/// Milliseconds: `42 ms`.
pub fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_decimal_units() {
        assert_eq!(bytes(20_123_456), "20.1 MB");
        assert_eq!(bytes(3_400), "3.4 kB");
        assert_eq!(bytes(12), "12 B");
    }

    #[test]
    fn a_failed_check_names_what_was_expected() {
        let mut report = Report::new(true);
        let err = report.equal("draining", true, false).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("draining: expected false, got true")
        );
        assert_eq!(report.checks(), 0);
    }
}
