//! The auth matrix (see `stasis_conformance::matrix`): every endpoint under
//! no token, a malformed, expired, unknown-key or forged token, another
//! town's token, a read-only token, the superseded and the current
//! container's tokens, an admin token, and a bootstrap token. One test per credential, so the
//! rows run in parallel.

use stasis_conformance::matrix::{Credential, run_row};

#[test]
fn without_a_token_every_endpoint_is_unauthorized_as_missing() {
    run_row(Credential::NoToken);
}

#[test]
fn a_malformed_token_is_unauthorized_as_malformed_everywhere() {
    run_row(Credential::Malformed);
}

#[test]
fn an_expired_token_is_unauthorized_as_expired_everywhere() {
    run_row(Credential::Expired);
}

#[test]
fn a_token_of_an_unknown_key_is_unauthorized_as_unknown_key_everywhere() {
    run_row(Credential::UnknownKey);
}

#[test]
fn a_forged_signature_is_unauthorized_as_bad_signature_everywhere() {
    run_row(Credential::BadSignature);
}

#[test]
fn another_towns_token_is_forbidden_everywhere_but_its_own_refresh() {
    run_row(Credential::OtherTown);
}

#[test]
fn a_read_only_token_reads_and_mints_but_every_write_is_forbidden() {
    run_row(Credential::ReadOnly);
}

#[test]
fn a_superseded_container_reads_and_every_write_of_it_is_fenced() {
    run_row(Credential::Superseded);
}

#[test]
fn the_current_container_reaches_every_endpoint() {
    run_row(Credential::Current);
}

#[test]
fn an_admin_token_reaches_every_endpoint() {
    run_row(Credential::Admin);
}

#[test]
fn a_bootstrap_token_is_forbidden_everywhere_but_its_exchange() {
    run_row(Credential::Bootstrap);
}
