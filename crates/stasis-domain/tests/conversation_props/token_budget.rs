//! The budget keeps the newest turns that fit; tokens are estimated from chars.

use crate::stream::{event, everything};
use proptest::prelude::*;
use serde_json::json;
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;

fn budget() -> impl Strategy<Value = Budget> {
    (1_u32..=12, 1_u64..=200)
        .prop_map(|(turns, tokens)| Budget::new(turns, tokens).expect("generated within range"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_budget_keeps_the_newest_turns_that_fit(
        lengths in prop::collection::vec(0_usize..120, 0..30),
        budget in budget(),
    ) {
        let log: Vec<Event> = lengths
            .iter()
            .zip(1..)
            .map(|(&len, seq)| {
                let data = json!({"info": {"id": format!("m{seq}"), "role": "user"},
                                  "part": {"id": "p", "text": "é".repeat(len)}});
                event(seq, "message.completed", &data.to_string())
            })
            .collect();
        let all = rebuild(&log, &everything()).turns;
        prop_assert_eq!(all.len(), lengths.iter().filter(|&&len| len > 0).count());

        let kept = rebuild(&log, &budget);
        let count = kept.turns.len();
        let omitted = usize::try_from(kept.omitted_turns).expect("small");
        let max_turns = usize::try_from(budget.max_turns).expect("small");
        prop_assert_eq!(omitted + count, all.len());
        prop_assert_eq!(&kept.turns[..], &all[omitted..], "the newest turns, in order");
        prop_assert!(count <= max_turns);
        prop_assert_eq!(count == 0, all.is_empty(), "the newest turn is always kept");
        let sum: u64 = kept.turns.iter().map(Turn::token_estimate).sum();
        prop_assert_eq!(kept.token_estimate, sum);
        prop_assert!(
            kept.token_estimate <= budget.max_tokens || count == 1,
            "only a lone newest turn may pass max_tokens"
        );
        prop_assert_eq!(kept.truncated, omitted > 0);
        if omitted > 0 {
            let next_older = all[omitted - 1].token_estimate();
            prop_assert!(
                count == max_turns || kept.token_estimate + next_older > budget.max_tokens,
                "no more turns would have fit"
            );
        }
    }

    #[test]
    fn the_token_estimate_is_a_quarter_of_the_chars_rounded_up(a in ".{0,50}", b in ".{0,50}") {
        let chars = u64::try_from(a.chars().count()).expect("small");
        prop_assert_eq!(estimate_tokens(&a), chars.div_ceil(4));
        let joined = estimate_tokens(&format!("{a}{b}"));
        prop_assert!(joined <= estimate_tokens(&a) + estimate_tokens(&b));
        prop_assert!(estimate_tokens(&a) + estimate_tokens(&b) <= joined + 1);
    }
}
