//! `kv-store`'s `bucket.set`, linked to write straight from the guest's
//! memory.
//!
//! The generated binding lifts the value into a fresh `Vec<u8>` first: a
//! third copy of a snapshot body, beside the request buffer and the guest's
//! own. Reading the guest's list in place keeps a 25 MiB PUT at two.

use super::{
    bindings::imports::stasis::objects::kv_store, guest_state::GuestState, kv_folder::BucketHandle,
};
use wasmtime::{
    StoreContextMut,
    component::{Linker, Resource, WasmList},
};

/// The instance the binding defined `bucket.set` in.
const KV_STORE: &str = "stasis:objects/kv-store@0.1.0";

/// Replaces the generated `bucket.set` in `linker` with one that reads the
/// value from guest memory. Call after the generated imports are added.
pub fn link_in_place_set(linker: &mut Linker<GuestState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let defined = linker.instance(KV_STORE).and_then(|mut kv| {
        kv.func_wrap(
            "[method]bucket.set",
            |store: StoreContextMut<'_, GuestState>,
             (bucket, key, value): (Resource<BucketHandle>, String, WasmList<u8>)|
             -> wasmtime::Result<(Result<(), kv_store::Error>,)> {
                let bytes = value.as_le_slice(&store);
                Ok((store.data().kv_set(&bucket, &key, bytes),))
            },
        )
    });
    linker.allow_shadowing(false);
    Ok(defined?)
}

#[cfg(test)]
mod tests {
    use super::KV_STORE;

    /// A stale name would define the function in a new, unused instance and
    /// silently bring the third copy back.
    #[test]
    fn the_instance_name_follows_the_wit_package() {
        let worlds = include_str!("../../../wit/worlds.wit");
        let storage = include_str!("../../../wit/storage.wit");
        let package = worlds
            .lines()
            .find_map(|line| line.strip_prefix("package "))
            .and_then(|line| line.strip_suffix(';'))
            .and_then(|name| name.split_once('@'));
        let Some((namespace, version)) = package else {
            unreachable!("wit/worlds.wit names its package with a version")
        };
        assert_eq!(KV_STORE, format!("{namespace}/kv-store@{version}"));
        assert!(storage.contains("interface kv-store {"));
    }
}
