//! Progress bars for long transfers, drawn on stderr only when it is a terminal.

use std::io::{IsTerminal, Read};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar for `len` bytes labelled `label`, or a hidden one when `wanted` is false or
/// stderr is not a terminal (logs and pipes get no control characters).
pub(crate) fn bar(wanted: bool, len: u64, label: &str) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(label.to_owned());
    bar
}

/// A reader that advances `bar` by the bytes read through it.
pub(crate) struct Counted<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Counted<R> {
    pub(crate) fn new(inner: R, bar: ProgressBar) -> Self {
        Counted { inner, bar }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}
