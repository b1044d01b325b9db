//! How numbers, counts, durations, sizes and error texts are written in the tables.

use std::time::Duration;

/// `12.3k` above ten thousand, whole numbers below.
pub fn thousands(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.1}k", value / 1000.0)
    } else {
        format!("{value:.0}")
    }
}

/// Milliseconds with two decimals below 10 ms, one up to a second;
/// seconds with two decimals from a second.
pub fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

/// A byte count as written in the tables: `24 MiB` for whole mebibytes,
/// `20 MB` (one decimal when needed) from a million bytes, else bytes.
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1_000_000 {
        let mb = format!("{:.1}", bytes as f64 / 1e6);
        format!("{} MB", mb.trim_end_matches(".0"))
    } else {
        format!("{bytes} B")
    }
}

/// `text` on one line, without table pipes, at most 160 characters.
pub fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace('|', "/");
    if flat.chars().count() > 160 {
        format!("{}…", flat.chars().take(160).collect::<String>())
    } else {
        flat
    }
}

/// `10,000`.
pub fn thousands_sep(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_mebibytes_or_megabytes() {
        assert_eq!(size(25_165_824), "24 MiB");
        assert_eq!(size(26_214_400), "25 MiB");
        assert_eq!(size(20_000_000), "20 MB");
        assert_eq!(size(20_480_000), "20.5 MB");
        assert_eq!(size(1024), "1024 B");
        assert_eq!(millis(Duration::from_millis(2500)), "2.50 s");
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(thousands_sep(10_000), "10,000");
        assert_eq!(thousands_sep(300), "300");
        assert_eq!(thousands_sep(1_234_567), "1,234,567");
    }
}
