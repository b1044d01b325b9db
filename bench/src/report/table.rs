//! The rows of a results table, the targets they are held to, and the
//! markdown table of them.

use super::{
    Figure,
    format::{millis, thousands},
};
use std::{fmt::Write as _, time::Duration};

/// What a row should reach.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    /// At least this many items per second.
    MinRate(f64, &'static str),
    /// A median of at most this.
    MaxMedian(Duration),
    /// stasis ÷ baseline at least this.
    MinRatio(f64),
    /// stasis ÷ baseline at most this (latencies).
    MaxRatio(f64),
    /// A peak memory growth of at most this many times the body.
    MaxCopies(f64),
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub workload: String,
    /// stasis's figure.
    pub stasis: Figure,
    /// Extra words after stasis's figure.
    pub stasis_note: Option<String>,
    /// What the baseline or peer is.
    pub baseline_name: String,
    /// The baseline's or peer's figure, if the row has one.
    pub baseline: Option<Figure>,
    /// What stasis should reach.
    pub goals: Vec<Goal>,
}

impl Row {
    /// stasis ÷ baseline (rates: above 1 is faster; latencies: below 1 is
    /// faster).
    pub fn ratio(&self) -> Option<f64> {
        match (&self.stasis, self.baseline.as_ref()?) {
            (Figure::Rate(s, _), Figure::Rate(b, _)) if b.per_sec() > 0.0 => {
                Some(s.per_sec() / b.per_sec())
            }
            (Figure::Latency(s), Figure::Latency(b)) if !b.median.is_zero() => {
                Some(s.median.as_secs_f64() / b.median.as_secs_f64())
            }
            _ => None,
        }
    }

    /// True when a workload of this row failed.
    pub fn failed(&self) -> bool {
        self.stasis.is_failure() || self.baseline.as_ref().is_some_and(Figure::is_failure)
    }

    fn goal_cell(&self) -> String {
        let verdicts: Vec<String> = self
            .goals
            .iter()
            .map(|goal| {
                let (text, met) = match *goal {
                    Goal::MinRate(min, unit) => (
                        format!("≥ {} {unit}", thousands(min)),
                        match &self.stasis {
                            Figure::Rate(rate, _) => Some(rate.per_sec() >= min),
                            _ => None,
                        },
                    ),
                    Goal::MaxMedian(max) => (
                        format!("median ≤ {}", millis(max)),
                        match &self.stasis {
                            Figure::Latency(l) => Some(l.median <= max),
                            _ => None,
                        },
                    ),
                    Goal::MinRatio(min) => {
                        (format!("ratio ≥ {min}"), self.ratio().map(|r| r >= min))
                    }
                    Goal::MaxRatio(max) => {
                        (format!("ratio ≤ {max}"), self.ratio().map(|r| r <= max))
                    }
                    Goal::MaxCopies(max) => (
                        format!("≤ {max} × the body"),
                        match &self.stasis {
                            Figure::Memory(m) => Some(m.copies() <= max),
                            _ => None,
                        },
                    ),
                };
                match met {
                    Some(true) => format!("{text}: met"),
                    Some(false) => format!("{text}: **missed**"),
                    None => text,
                }
            })
            .collect();
        if verdicts.is_empty() {
            "—".to_owned()
        } else {
            verdicts.join("; ")
        }
    }
}

/// The markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| workload | stasis | baseline / peer | stasis ÷ baseline | target |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let mut stasis = row.stasis.cell();
        if let Some(note) = &row.stasis_note {
            let _ = write!(stasis, "; {note}");
        }
        let baseline = match &row.baseline {
            Some(figure) => format!("{}: {}", row.baseline_name, figure.cell()),
            None => row.baseline_name.clone(),
        };
        let ratio = row
            .ratio()
            .map_or_else(|| "—".to_owned(), |r| format!("{r:.2}×"));
        let _ = writeln!(
            out,
            "| {} | {stasis} | {baseline} | {ratio} | {} |",
            row.workload,
            row.goal_cell()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Rate;

    #[test]
    fn ratios_divide_stasis_by_the_baseline() {
        let rate = |items| {
            Figure::Rate(
                Rate {
                    items,
                    elapsed: Duration::from_secs(1),
                },
                "ev/s",
            )
        };
        let row = Row {
            workload: "w".into(),
            stasis: rate(150),
            stasis_note: None,
            baseline_name: "b".into(),
            baseline: Some(rate(300)),
            goals: vec![Goal::MinRatio(0.3), Goal::MinRate(200.0, "ev/s")],
        };
        assert_eq!(row.ratio(), Some(0.5));
        assert_eq!(row.goal_cell(), "ratio ≥ 0.3: met; ≥ 200 ev/s: **missed**");
    }
}
