//! A tool part's line: one line, its summary squeezed and bounded,
//! whatever the title holds.

use crate::stream::{event, everything};
use proptest::prelude::*;
use serde_json::json;
use stasis_domain::conversation::*;

/// `text` as the line shows it: whitespace runs as one space, at most
/// `max` characters, the last `…` when cut.
fn squeezed(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_tool_line_is_one_bounded_line(
        name in "[a-z_]{1,60}",
        title in "[a-zA-Z é\u{2003}\n\t]{0,120}",
    ) {
        let part = json!({"part": {"id": "t", "messageID": "m", "type": "tool", "tool": name,
            "state": {"status": "completed", "title": title, "input": {}}}});
        let log = [event(1, "message.part.updated", &part.to_string())];
        let turns = rebuild(&log, &everything()).turns;
        let line = &turns[0].content;
        let summary = squeezed(&title, TOOL_SUMMARY_MAX_CHARS);
        let want = if summary.is_empty() {
            format!("[tool {} — completed]", squeezed(&name, TOOL_NAME_MAX_CHARS))
        } else {
            format!("[tool {}: {summary} — completed]", squeezed(&name, TOOL_NAME_MAX_CHARS))
        };
        prop_assert_eq!(line, &want);
        prop_assert!(!line.contains('\n'));
        // `[tool `, `: `, ` — `, `completed` (the longest status) and `]`.
        let framing = 6 + 2 + 3 + 9 + 1;
        prop_assert!(line.chars().count() <= TOOL_NAME_MAX_CHARS + TOOL_SUMMARY_MAX_CHARS + framing);
    }
}
