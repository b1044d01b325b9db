//! What a caught panic said.

use std::any::Any;

/// A panic's message, when it carried a string.
pub fn message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_read_from_str_and_string_payloads() {
        let text: Box<dyn Any + Send> = Box::new("boom");
        let owned: Box<dyn Any + Send> = Box::new(String::from("bang"));
        let other: Box<dyn Any + Send> = Box::new(7);
        assert_eq!(message(&*text), "boom");
        assert_eq!(message(&*owned), "bang");
        assert_eq!(message(&*other), "a panic without a message");
    }
}
