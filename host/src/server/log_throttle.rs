//! A warning that may repeat thousands of times a second (accept failing
//! on a full descriptor table, connections refused over the cap) is logged
//! at most once per interval, with how many times it happened.

use std::time::{Duration, Instant};

/// Counts occurrences and says when a line is due.
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    last_line: Option<Instant>,
    unlogged: u64,
}

impl LogThrottle {
    /// At most one line per `every`.
    pub const fn new(every: Duration) -> Self {
        Self {
            every,
            last_line: None,
            unlogged: 0,
        }
    }

    /// Counts one occurrence; when a line is due, returns how many
    /// occurrences it reports (this one included).
    pub fn occurred(&mut self, now: Instant) -> Option<u64> {
        self.unlogged += 1;
        self.due(now)
    }

    /// When a line is due and some occurrences went unreported, how many.
    pub fn pending(&mut self, now: Instant) -> Option<u64> {
        if self.unlogged == 0 {
            return None;
        }
        self.due(now)
    }

    /// The occurrences not yet reported, due or not (for a last line).
    pub fn rest(&mut self) -> Option<u64> {
        let rest = std::mem::take(&mut self.unlogged);
        (rest > 0).then_some(rest)
    }

    fn due(&mut self, now: Instant) -> Option<u64> {
        if self
            .last_line
            .is_some_and(|last| now.saturating_duration_since(last) < self.every)
        {
            return None;
        }
        self.last_line = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_gives_one_line_then_one_with_the_rest() {
        let start = Instant::now();
        let mut throttle = LogThrottle::new(Duration::from_secs(10));
        let lines: Vec<u64> = (0..1000)
            .filter_map(|i| throttle.occurred(start + Duration::from_millis(i)))
            .collect();
        assert_eq!(lines, vec![1], "the first occurrence is logged at once");
        assert_eq!(throttle.pending(start + Duration::from_secs(5)), None);
        assert_eq!(throttle.pending(start + Duration::from_secs(11)), Some(999));
        assert_eq!(throttle.occurred(start + Duration::from_secs(15)), None);
        assert_eq!(throttle.rest(), Some(1), "a last line reports it");
    }
}
