//! Where each section goes in BENCHMARKS.md, and rewriting one section of
//! that file while keeping the rest.

use anyhow::{Context, Result};
use std::path::Path;

/// Where a section starts and ends in BENCHMARKS.md.
#[derive(Debug, Clone, Copy)]
pub struct Marks {
    /// The line opening the section.
    pub start: &'static str,
    /// The line closing it.
    pub end: &'static str,
    /// Where the section goes in a file that has none yet: before this
    /// line when the file has it, else at the end.
    pub before: Option<&'static str>,
}

/// The event-log section (the table of `report::table`).
pub const EVENT_LOG: Marks = Marks {
    start: "<!-- bench:event-log:start -->",
    end: "<!-- bench:event-log:end -->",
    before: None,
};
/// The snapshots section: snapshots, `snapshot push`, the conversation
/// rebuild, recovery and peak memory.
pub const SNAPSHOTS: Marks = Marks {
    start: "<!-- bench:snapshots:start -->",
    end: "<!-- bench:snapshots:end -->",
    before: Some(EDGE.start),
};

/// Where the edge section starts and ends in BENCHMARKS.md.
pub const EDGE: Marks = Marks {
    start: "<!-- bench:edge:start -->",
    end: "<!-- bench:edge:end -->",
    before: None,
};

/// Writes `section` into `path`, replacing the previous section between
/// `marks` and keeping everything else in the file.
pub fn record(path: &Path, marks: Marks, section: &str) -> Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            "# Benchmarks\n\nProduced by `scripts/bench`; each section is rewritten by its own run.\n"
                .to_owned()
        }
        Err(error) => return Err(error).context(format!("reading {}", path.display())),
    };
    let updated = splice(&existing, marks, section);
    std::fs::write(path, updated).with_context(|| format!("writing {}", path.display()))
}

/// `text` with the section between `marks` replaced by `section`, or
/// `section` added where `marks.before` says when there is none.
fn splice(text: &str, marks: Marks, section: &str) -> String {
    if let Some(start) = text.find(marks.start)
        && let Some(end_at) = text[start..].find(marks.end)
    {
        let mut end = start + end_at + marks.end.len();
        if text[end..].starts_with('\n') {
            end += 1;
        }
        return format!("{}{section}{}", &text[..start], &text[end..]);
    }
    if let Some(at) = marks.before.and_then(|line| text.find(line)) {
        return format!("{}{section}\n{}", &text[..at], &text[at..]);
    }
    let separator = if text.ends_with("\n\n") || text.is_empty() {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{separator}{section}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const START_MARK: &str = EVENT_LOG.start;
    const END_MARK: &str = EVENT_LOG.end;

    #[test]
    fn a_recorded_section_replaces_only_its_own_part() {
        let old = format!("# B\n\nintro\n\n{START_MARK}\nold\n{END_MARK}\n\n## other\nkeep\n");
        let new = splice(&old, EVENT_LOG, &format!("{START_MARK}\nnew\n{END_MARK}\n"));
        assert_eq!(
            new,
            format!("# B\n\nintro\n\n{START_MARK}\nnew\n{END_MARK}\n\n## other\nkeep\n")
        );
    }

    #[test]
    fn a_file_without_the_section_gets_it_appended() {
        let new = splice("# B\nintro\n", EVENT_LOG, "S\n");
        assert_eq!(new, "# B\nintro\n\nS\n");
    }

    #[test]
    fn sections_with_other_marks_are_left_alone() {
        const OTHER: Marks = Marks {
            start: "<!-- o:start -->",
            end: "<!-- o:end -->",
            before: None,
        };
        let old = format!(
            "{START_MARK}\nlog\n{END_MARK}\n\n{}\nold\n{}\n",
            OTHER.start, OTHER.end
        );
        let new = splice(
            &old,
            OTHER,
            &format!("{}\nnew\n{}\n", OTHER.start, OTHER.end),
        );
        assert_eq!(
            new,
            format!(
                "{START_MARK}\nlog\n{END_MARK}\n\n{}\nnew\n{}\n",
                OTHER.start, OTHER.end
            )
        );
    }

    #[test]
    fn a_new_snapshots_section_goes_before_the_edge_section() {
        let edge = format!("{}\nedge\n{}\n", EDGE.start, EDGE.end);
        let old = format!("{START_MARK}\nlog\n{END_MARK}\n\n{edge}");
        let new = splice(&old, SNAPSHOTS, "S\n");
        assert_eq!(new, format!("{START_MARK}\nlog\n{END_MARK}\n\nS\n\n{edge}"));
        assert_eq!(splice("# B\n", SNAPSHOTS, "S\n"), "# B\n\nS\n");
    }
}
