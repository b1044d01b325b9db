//! Host-side bindings of the component worlds, generated from `wit/`.
//!
//! The imports every guest shares (`types`, `sql`, `kv-store`) are generated
//! once in [`imports`]; each component's world reuses them, so one linker
//! serves every component.

#![allow(missing_docs, reason = "generated bindings")]

/// The storage imports.
pub mod imports {
    wasmtime::component::bindgen!({
        world: "guest-imports",
        path: "../wit",
        with: {
            "stasis:objects/kv-store.bucket": crate::runtime::kv_folder::BucketHandle,
        },
    });
}

/// The event-log component's exports.
pub mod event_log {
    wasmtime::component::bindgen!({
        world: "event-log-component",
        path: "../wit",
        with: {
            "stasis:objects/types": crate::runtime::bindings::imports::stasis::objects::types,
            "stasis:objects/sql": crate::runtime::bindings::imports::stasis::objects::sql,
        },
    });
}

/// The session component's exports.
pub mod session {
    wasmtime::component::bindgen!({
        world: "session-component",
        path: "../wit",
        with: {
            "stasis:objects/types": crate::runtime::bindings::imports::stasis::objects::types,
            "stasis:objects/sql": crate::runtime::bindings::imports::stasis::objects::sql,
        },
    });
}

pub use imports::stasis::objects::types::Error as WitError;
use stasis_domain::{DomainError, Refusal};

/// The WIT error variant as the domain's error.
pub fn from_wit_error(err: WitError) -> DomainError {
    use WitError as E;
    use imports::stasis::objects::types::Refusal as WitRefusal;
    let refusal = |r: WitRefusal| Refusal::new(r.code, r.message);
    match err {
        E::InvalidInput(r) => DomainError::InvalidInput(refusal(r)),
        E::NotFound(r) => DomainError::NotFound(refusal(r)),
        E::Conflict(r) => DomainError::Conflict(refusal(r)),
        E::PreconditionFailed(r) => DomainError::PreconditionFailed(refusal(r)),
        E::TooLarge(l) => DomainError::TooLarge {
            code: l.code,
            message: l.message,
            limit: l.limit,
        },
        E::CursorExpired(first_seq) => DomainError::CursorExpired { first_seq },
        E::Unavailable(r) => DomainError::Unavailable(refusal(r)),
        E::ChunksMissing(missing) => DomainError::ChunksMissing { missing },
        E::Storage(m) => DomainError::Storage(m),
    }
}
