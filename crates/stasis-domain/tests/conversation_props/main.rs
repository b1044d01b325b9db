//! Properties of the conversation rebuild over generated event streams.
//!
//! The streams look like real ones: several messages, some with several
//! parts, texts streamed as deltas cut at random points (or sent whole, or
//! both), every way of naming ids, interleaved at random. Whatever the
//! interleaving, duplicated full texts, junk or repeated pages, the rebuild
//! must give back exactly the texts that were streamed.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "tests write their JSON inputs with json! and read answers as Values"
)]
#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod kilo_spec;
mod kilo_stream;
mod spec;
mod stream;

mod arbitrary_events;
mod escaping;
mod kilo_rules;
mod rebuild;
mod token_budget;
mod tool_line;
