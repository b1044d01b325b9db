//! placeholder, replaced by the stasis-client work in progress
