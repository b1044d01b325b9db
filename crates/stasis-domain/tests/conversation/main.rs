//! The conversation rebuild, rule by rule: which events count (kilo's and
//! the older spellings), how a message is assembled, tool lines, the budget,
//! and the dispatch prompt.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "tests write their JSON inputs with json! and read answers as Values"
)]
#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

mod budget;
mod dispatch_prompt;
mod kilo_events;
mod kilo_tools;
mod message_lifecycle;
mod parts;
mod sent_by_stasis;
mod summary;
mod which_events;
