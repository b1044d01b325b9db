//! Percent-encoding for query strings.

/// `text` percent-encoded for a query string.
pub fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escape_keeps_unreserved_bytes_only() {
        assert_eq!(escape("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(escape("x y/é&"), "x%20y%2F%C3%A9%26");
    }
}
