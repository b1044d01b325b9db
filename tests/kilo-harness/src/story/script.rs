//! What is said in the story: the user's prompts and the fake model's replies.

use super::stasis::Turn;
use crate::{Reply, Script};
use std::time::Duration;

/// The Mayor's rig and id.
pub const RIG: &str = "hq";
/// The agent: the town's Mayor.
pub const MAYOR: &str = "mayor";

/// Turn 1: plain text.
pub const PROMPT_PLAN: &str = "What is on today's plan?";
/// Its reply.
pub const REPLY_PLAN: &str = "First the release notes, then the build check.";
/// Turn 2: the model calls `bash`, kilo runs it, a second assistant message answers.
pub const PROMPT_TOOL: &str = "Please run the build check";
/// The command the model asks for, and its description (kilo's title for the call).
pub const TOOL_COMMAND: &str = "echo build ok";
/// The tool call's description.
pub const TOOL_TITLE: &str = "Run the build check";
/// The answer once the command ran.
pub const REPLY_AFTER_TOOL: &str = "The build check passed.";
/// Turn 3: plain text again.
pub const PROMPT_LEFT: &str = "Anything left after that?";
/// Its reply.
pub const REPLY_LEFT: &str = "Only the changelog, and it can wait until tomorrow.";
/// Turn 4: the reply that streams slowly and is cut by the kill.
pub const PROMPT_LONG: &str = "Write the long summary of the release";
/// Turn 5, in container B.
pub const PROMPT_AFTER: &str = "Where were we before the restart?";
/// Its reply.
pub const REPLY_AFTER: &str = "We were writing the release summary.";
/// The title kilo's title generator gets.
pub const TITLE: &str = "Release day";

/// The pause between the words of the cut reply: long enough to kill kilo mid-reply on a busy
/// machine, while the story waits only for the first few words.
pub const LONG_REPLY_PACE: Duration = Duration::from_millis(150);

/// The scripted 4th reply, of which only a prefix is ever streamed.
pub fn long_reply() -> String {
    let sentences = [
        "The release went out on time with every polecat reporting green.",
        "The refinery merged eleven branches and rejected two for failing tests.",
        "The changelog still needs a pass before it can be published tomorrow.",
        "Nothing is blocked, and the next milestone starts on Monday morning.",
    ];
    sentences.join(" ")
}

/// The fake model's script for the whole story.
pub fn script() -> Script {
    Script::new()
        .when(PROMPT_PLAN, Reply::text(REPLY_PLAN))
        .when(PROMPT_TOOL, Reply::bash(TOOL_COMMAND, TOOL_TITLE))
        .when(PROMPT_LEFT, Reply::text(REPLY_LEFT))
        .when(
            PROMPT_LONG,
            Reply::paced_text(&long_reply(), LONG_REPLY_PACE),
        )
        .when(PROMPT_AFTER, Reply::text(REPLY_AFTER))
        .after_tool(Reply::text(REPLY_AFTER_TOOL))
        .title(TITLE)
}

/// The finished turns of container A as (role, text) in order: what must survive.
pub fn finished_texts() -> [(&'static str, &'static str); 6] {
    [
        ("user", PROMPT_PLAN),
        ("assistant", REPLY_PLAN),
        ("user", PROMPT_TOOL),
        ("assistant", REPLY_AFTER_TOOL),
        ("user", PROMPT_LEFT),
        ("assistant", REPLY_LEFT),
    ]
}

/// The turns container A holds after its three finished turns, as the rebuild writes them:
/// the tool call is its own assistant turn, one line.
pub fn held_turns() -> Vec<Turn> {
    let turn = |role: &str, content: &str| Turn {
        role: role.to_owned(),
        content: content.to_owned(),
        unfinished: false,
    };
    vec![
        turn("user", PROMPT_PLAN),
        turn("assistant", REPLY_PLAN),
        turn("user", PROMPT_TOOL),
        turn(
            "assistant",
            &format!("[tool bash: {TOOL_TITLE} — completed]"),
        ),
        turn("assistant", REPLY_AFTER_TOOL),
        turn("user", PROMPT_LEFT),
        turn("assistant", REPLY_LEFT),
    ]
}
