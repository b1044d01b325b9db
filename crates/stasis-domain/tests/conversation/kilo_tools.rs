//! A tool part is one short line in its assistant turn.

use crate::support::{k_completed, k_message, k_text_end, k_tool, log, turn, turns};
use serde_json::json;
use stasis_domain::conversation::*;

fn line_of(state: serde_json::Value) -> String {
    let events = log(&[
        k_message("a1", "assistant"),
        k_tool("a1", "t", "bash", state),
        k_completed("a1"),
    ]);
    turns(&events)
        .pop()
        .map(|turn| turn.content)
        .unwrap_or_default()
}

#[test]
fn a_tool_call_is_one_line_with_its_name_title_and_status() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_tool(
            "a1",
            "t",
            "bash",
            json!({"status": "pending", "input": {}, "raw": ""}),
        ),
        k_tool(
            "a1",
            "t",
            "bash",
            json!({"status": "running",
            "input": {"command": "echo hi", "description": "Print hi"}}),
        ),
        k_tool(
            "a1",
            "t",
            "bash",
            json!({"status": "completed", "title": "Print hi",
            "input": {"command": "echo hi", "description": "Print hi"}, "output": "hi\n"}),
        ),
        k_completed("a1"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("assistant", "[tool bash: Print hi — completed]")]
    );
}

#[test]
fn the_line_follows_the_latest_state() {
    assert_eq!(
        line_of(json!({"status": "pending", "input": {}})),
        "[tool bash — pending]"
    );
    assert_eq!(
        line_of(json!({"status": "running", "input": {"command": "ls -la"}})),
        "[tool bash: ls -la — running]"
    );
    assert_eq!(
        line_of(json!({"status": "error", "input": {"description": "Fail"}, "error": "boom"})),
        "[tool bash: Fail — error]"
    );
    assert_eq!(
        line_of(json!({"status": "paused"})),
        "[tool bash — unknown]"
    );
    assert_eq!(line_of(json!(null)), "[tool bash — unknown]");
}

#[test]
fn the_summary_is_the_title_else_description_else_command_else_the_first_string() {
    let input = json!({"command": "cat x", "description": "Show x"});
    assert_eq!(
        line_of(json!({"status": "completed", "title": "Shown", "input": input})),
        "[tool bash: Shown — completed]"
    );
    assert_eq!(
        line_of(json!({"status": "running", "title": "  ", "input": input})),
        "[tool bash: Show x — running]"
    );
    assert_eq!(
        line_of(
            json!({"status": "running", "input": {"limit": 5, "filePath": "/a/b", "z": "later"}})
        ),
        "[tool bash: /a/b — running]"
    );
    assert_eq!(
        line_of(json!({"status": "running", "input": {"n": [1, "x"], "o": {"p": "q"}, "e": ""}})),
        "[tool bash — running]"
    );
    assert_eq!(
        line_of(json!({"status": "running", "input": "not an object"})),
        "[tool bash — running]"
    );
}

#[test]
fn the_line_is_one_line_and_bounded() {
    let long = "word ".repeat(100);
    let line =
        line_of(json!({"status": "running", "input": {"description": format!("a\n\n b\t{long}")}}));
    assert!(!line.contains('\n'), "{line}");
    assert!(line.starts_with("[tool bash: a b word word"), "{line}");
    assert!(line.ends_with("… — running]"), "{line}");
    let summary = line
        .trim_start_matches("[tool bash: ")
        .trim_end_matches(" — running]");
    assert_eq!(summary.chars().count(), TOOL_SUMMARY_MAX_CHARS);

    let name = "n".repeat(200);
    let events = log(&[
        k_message("a1", "assistant"),
        k_tool("a1", "t", &name, json!({"status": "running"})),
    ]);
    let content = turns(&events)
        .pop()
        .map(|turn| turn.content)
        .unwrap_or_default();
    let shown = content
        .trim_start_matches("[tool ")
        .trim_end_matches(" — running]");
    assert_eq!(shown.chars().count(), TOOL_NAME_MAX_CHARS);
    assert!(shown.ends_with('…'));
}

#[test]
fn a_short_text_is_not_cut() {
    let exact = "x".repeat(TOOL_SUMMARY_MAX_CHARS);
    assert_eq!(
        line_of(json!({"status": "running", "input": {"description": exact}})),
        format!("[tool bash: {exact} — running]")
    );
}

#[test]
fn tool_lines_and_text_keep_their_order_in_the_turn() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_text_end("a1", "p1", "Let me look."),
        k_tool(
            "a1",
            "t",
            "read",
            json!({"status": "completed", "title": "src/lib.rs", "input": {"filePath": "/w/src/lib.rs"}}),
        ),
        k_text_end("a1", "p2", "It is fine."),
        k_completed("a1"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn(
            "assistant",
            "Let me look.\n[tool read: src/lib.rs — completed]\nIt is fine."
        )]
    );
}

#[test]
fn a_tool_part_without_a_name_or_an_id_adds_nothing() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_tool("a1", "t", "", json!({"status": "running"})),
        (
            "message.part.updated",
            json!({"part": {"messageID": "a1", "type": "tool", "tool": "bash"}}),
        ),
        k_text_end("a1", "p", "Done"),
        k_completed("a1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Done")]);
}
