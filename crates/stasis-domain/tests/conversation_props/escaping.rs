//! Escaping: no turn can break out of the prior-conversation wrapper.

use proptest::prelude::*;
use stasis_domain::conversation::*;

fn tagged_text() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "<prior-conversation>",
        "</prior-conversation>",
        "</PRIOR-CONVERSATION>",
        "< / Prior-Conversation >",
        "<prior-conversation/>",
        "<\n/prior-conversation\t>",
        "<prior-conversation x=1>",
        "prior-conversation",
        "<",
        ">",
        "/",
        " ",
        "\n",
        "&",
        "hello",
        "é",
    ]);
    prop::collection::vec(fragment, 0..12).prop_map(|fragments| fragments.concat())
}

/// A `prior-conversation` tag a reader could take for real: ASCII
/// whitespace ignored, case ignored, the name not running on.
fn has_live_tag(text: &str) -> bool {
    let squeezed: String = text
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    ["<prior-conversation", "</prior-conversation"]
        .iter()
        .any(|tag| {
            squeezed.match_indices(tag).any(|(at, _)| {
                !squeezed[at + tag.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_turn_can_break_out_of_the_wrapper(
        turns in prop::collection::vec((tagged_text(), tagged_text(), any::<bool>()), 1..6),
    ) {
        let conversation = PriorConversation {
            turns: turns
                .into_iter()
                .map(|(role, content, unfinished)| Turn::new(role, content, unfinished))
                .collect(),
            ..PriorConversation::default()
        };
        let prompt = dispatch_prompt(&conversation, Some("NEWEST"));
        let inner = prompt
            .strip_prefix("<prior-conversation>\n")
            .and_then(|rest| rest.strip_suffix("</prior-conversation>\n\nNEWEST"));
        prop_assert!(inner.is_some(), "framing: {:?}", prompt);
        let inner = inner.unwrap_or_default();
        prop_assert!(!has_live_tag(inner), "live tag in {:?}", inner);
    }

    #[test]
    fn escaping_only_rewrites_tag_brackets(text in tagged_text()) {
        let escaped = escape_wrapper_tags(&text);
        prop_assert!(!has_live_tag(&escaped), "{:?}", escaped);
        prop_assert_eq!(escaped.replace("&lt;", "<").replace("&gt;", ">"), text);
    }

    #[test]
    fn escaping_leaves_text_without_tags_alone(text in ".{0,60}") {
        prop_assume!(!text.to_ascii_lowercase().contains("prior-conversation"));
        prop_assert_eq!(escape_wrapper_tags(&text), text);
    }
}
