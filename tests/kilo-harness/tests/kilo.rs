//! The real Kilo CLI driven through the harness. Ignored by default: they
//! need the CLI (`source scripts/setup.sh && stasis_kilo`, or
//! `STASIS_KILO_BIN`); run them with `cargo test -p stasis-kilo-harness --
//! --ignored`.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_kilo_harness::{FakeModel, Kilo, KiloOptions, Reply, Script};
use std::time::Duration;

const TURN: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::new()
        .when("plan the day", Reply::text("Coffee, then code."))
        .when("after lunch", Reply::text("Review until three."))
}

#[test]
#[ignore = "needs the Kilo CLI from npm (stasis_kilo in scripts/setup.sh)"]
fn kilo_sends_the_model_the_whole_earlier_conversation() {
    let home = tempfile::tempdir().expect("a home");
    let model = FakeModel::start(script()).expect("model");
    let kilo = Kilo::start(&KiloOptions::new(home.path(), &model.base_url())).expect("kilo");
    let events = kilo.events().expect("events");
    let api = kilo.api();
    let session = api.create_session().expect("session");
    for prompt in ["Hello, plan the day", "And after lunch?"] {
        let mark = events.len();
        api.prompt_async(&session, prompt).expect("prompt");
        events.wait_for_idle(&session, mark, TURN).expect("idle");
    }
    let chats: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| !r.is_title_request())
        .collect();
    assert_eq!(chats.len(), 2);
    let second: Vec<(&str, &str)> = chats[1]
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| (m.role.as_str(), m.text.as_str()))
        .collect();
    assert_eq!(second.len(), 3, "{second:?}");
    assert!(second[0].1.starts_with("Hello, plan the day"), "{second:?}");
    assert_eq!(second[1], ("assistant", "Coffee, then code."));
    assert!(second[2].1.starts_with("And after lunch?"), "{second:?}");

    let messages = api.messages(&session).expect("messages");
    let texts: Vec<(String, String)> = messages
        .iter()
        .map(|m| (m.info.role.clone(), m.text()))
        .collect();
    assert_eq!(
        texts,
        [
            ("user".to_owned(), "Hello, plan the day".to_owned()),
            ("assistant".to_owned(), "Coffee, then code.".to_owned()),
            ("user".to_owned(), "And after lunch?".to_owned()),
            ("assistant".to_owned(), "Review until three.".to_owned()),
        ]
    );
    assert!(kilo.db_path().exists(), "the database is under the home");
    assert_eq!(api.sessions().expect("sessions").len(), 1);
    kilo.stop();
    events
        .wait_until_ended(TURN)
        .expect("the stream ends with kilo");
}

#[test]
#[ignore = "needs the Kilo CLI from npm (stasis_kilo in scripts/setup.sh)"]
fn kill_takes_kilo_down_at_once_and_ends_its_event_stream() {
    let home = tempfile::tempdir().expect("a home");
    let model = FakeModel::start(script()).expect("model");
    let kilo = Kilo::start(&KiloOptions::new(home.path(), &model.base_url())).expect("kilo");
    let events = kilo.events().expect("events");
    let api = kilo.api();
    assert!(api.is_healthy());
    kilo.kill();
    events.wait_until_ended(TURN).expect("the stream ends");
    assert!(!api.is_healthy());
}
