//! Near-valid and hostile requests: one or two mutations of a valid one,
//! each noting the check of the contract's order it breaks (if it surely
//! breaks one), so that the oracle knows which refusal must come.

mod body;
mod head;

use fastrand::Rng;

use super::request::Request;
use super::world::World;

/// What the mutations may do against this server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Send a `Content-Length` larger than the body. The edge cannot answer
    /// before the whole declared body arrived (`wrangler dev` buffers it,
    /// README "Known limits"), so this is off there.
    pub declared_lengths: bool,
}

/// Applies one or two random mutations to `request`.
pub fn mutate(rng: &mut Rng, world: &World, limits: Limits, request: &mut Request) {
    for _ in 0..rng.usize(1..=2) {
        match rng.u8(..12) {
            0 => head::auth(rng, world, request),
            1 => head::method(rng, request),
            2 => head::path_id(rng, request),
            3 => head::path_shape(rng, request),
            4 => head::query(rng, request),
            5 => head::content_type(rng, request),
            6 if limits.declared_lengths => head::declared_length(rng, request),
            7 => head::headers(rng, request),
            8 => head::chunked(request),
            _ => body::mutate(rng, request),
        }
    }
}
