//! The rebuild against kilo's real event streams.
//!
//! `tests/fixtures/kilo-7.7.9/` holds what `record-fixtures`
//! (tests/kilo-harness) captured from the real Kilo CLI: each
//! conversation's raw `GET /event` stream, `sync` twins included, and kilo's
//! own `GET /session/{id}/message` at the end. Each stream is stored as a
//! container stores events and rebuilt; for every message kilo shows, the
//! rebuilt turn must have the same role and the same finished text (tool
//! lines aside), in the same order, whichever way the twins were stored.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod capture;
mod kilo_view;

mod conversations;
