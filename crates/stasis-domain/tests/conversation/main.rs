//! The conversation rebuild, rule by rule: which events count, how a message
//! is assembled, the budget, and the dispatch prompt.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "tests write their JSON inputs with json! and read answers as Values"
)]
#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

mod budget;
mod dispatch_prompt;
mod message_lifecycle;
mod parts;
mod which_events;
