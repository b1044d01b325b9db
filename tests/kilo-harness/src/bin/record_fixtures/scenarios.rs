//! The scripted conversations recorded, each short.

use stasis_kilo_harness::{Reply, Script};
use std::time::Duration;

/// One conversation: the model's script and what the user does.
pub struct Scenario {
    /// The fixture folder's name.
    pub name: &'static str,
    /// What the fixture shows, for its notes.
    pub about: &'static str,
    pub script: Script,
    pub steps: Vec<Step>,
}

/// One thing the user does.
pub enum Step {
    /// Sends a prompt and waits until the turn is over.
    Prompt(&'static str),
    /// Sends a prompt and SIGKILLs kilo once `after_deltas` pieces of the
    /// reply have streamed.
    PromptThenKill {
        prompt: &'static str,
        after_deltas: usize,
    },
    /// Reverts the session to before the `nth` user message (0-based), then
    /// sends `then`, which makes kilo remove the reverted messages.
    RevertThenPrompt { nth: usize, then: &'static str },
}

/// Every scenario, in recording order.
pub fn all() -> Vec<Scenario> {
    vec![plain(), tool(), cut(), revert()]
}

fn plain() -> Scenario {
    Scenario {
        name: "plain",
        about: "Three user turns, each answered with a short streamed text reply; kilo asks for \
                a title after the second.",
        script: Script::new()
            .when(
                "plan the day",
                Reply::text("First coffee, then the release notes."),
            )
            .when("after lunch", Reply::text("Code review until three."))
            .when("that is all", Reply::text("You are welcome.")),
        steps: vec![
            Step::Prompt("Hello mayor, plan the day"),
            Step::Prompt("What comes after lunch?"),
            Step::Prompt("Thanks, that is all."),
        ],
    }
}

fn tool() -> Scenario {
    Scenario {
        name: "tool",
        about: "The model calls bash (`echo hi`), kilo runs it, and a second assistant message \
                answers; then one more plain turn.",
        script: Script::new()
            .when("build check", Reply::bash("echo hi", "Print hi"))
            .after_tool(Reply::text("The command printed hi."))
            .when("Anything else", Reply::text("No, all done.")),
        steps: vec![
            Step::Prompt("Please run the build check"),
            Step::Prompt("Anything else?"),
        ],
    }
}

fn cut() -> Scenario {
    let long = "Here is the long summary of the week: the release went out on Monday, \
                the migration finished on Wednesday, and the remaining work is the \
                documentation and two small fixes that wait for review.";
    Scenario {
        name: "cut",
        about: "One finished turn, then a reply streamed slowly (150 ms a word) and kilo's \
                whole process group SIGKILLed after 6 of its deltas. The stream ends there.",
        script: Script::new()
            .when("Start the report", Reply::text("Report started."))
            .when(
                "long summary",
                Reply::paced_text(long, Duration::from_millis(150)),
            ),
        steps: vec![
            Step::Prompt("Start the report"),
            Step::PromptThenKill {
                prompt: "Write the long summary",
                after_deltas: 6,
            },
        ],
    }
}

fn revert() -> Scenario {
    Scenario {
        name: "revert",
        about: "Two turns, a revert to before the second user message, then a new prompt: kilo \
                removes the reverted messages (message.removed).",
        script: Script::new()
            .when("first", Reply::text("One."))
            .when("second", Reply::text("Two."))
            .when("instead", Reply::text("Three.")),
        steps: vec![
            Step::Prompt("Say first"),
            Step::Prompt("Say second"),
            Step::RevertThenPrompt {
                nth: 1,
                then: "Say something instead",
            },
        ],
    }
}
