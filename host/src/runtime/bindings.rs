//! Host-side bindings of the component worlds, generated from `wit/`.
//!
//! The imports every guest shares (`types`, `sql`) are generated
//! once in [`imports`]; each component's world reuses them, so one linker
//! serves every component.

#![allow(missing_docs, reason = "generated bindings")]

/// The storage imports.
pub mod imports {
    wasmtime::component::bindgen!({
        world: "guest-imports",
        path: "../wit",
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

/// The state component's exports (the `session` and `town` interfaces).
pub mod state {
    wasmtime::component::bindgen!({
        world: "state-component",
        path: "../wit",
        with: {
            "stasis:objects/types": crate::runtime::bindings::imports::stasis::objects::types,
            "stasis:objects/sql": crate::runtime::bindings::imports::stasis::objects::sql,
        },
    });
}
