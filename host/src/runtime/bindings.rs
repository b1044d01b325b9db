//! Host-side bindings of the component worlds, generated from `wit/`.

#![allow(missing_docs, reason = "generated bindings")]

wasmtime::component::bindgen!({
    world: "event-log-component",
    path: "../wit",
});
