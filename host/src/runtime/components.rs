//! Loading the embedded components, with a cache of compiled code, and
//! the state of the store each call group runs them in.
//!
//! Compiling a component with Cranelift takes tens of milliseconds; loading
//! precompiled code takes a fraction of one. The cache key covers the
//! component's bytes and wasmtime's own compatibility hash (version,
//! settings, CPU features), so a stale entry is never loaded.

use super::bindings::{
    event_log::EventLogComponentPre, imports::GuestImports, state::StateComponentPre,
};
use anyhow::Context;
use sha2::{Digest, Sha256};
use stasis_sqlite::SqliteStore;
use std::{
    hash::{Hash, Hasher},
    path::{Path, PathBuf},
};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
    component::{Component, HasSelf, Linker, ResourceTable},
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

const EVENT_LOG_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/stasis_event_log_component.wasm"));
const STATE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stasis_state_component.wasm"));

/// Every component, compiled and linked, ready to instantiate per call group.
pub struct Components {
    /// The engine every store is created on.
    pub engine: Engine,
    /// The event-log component.
    pub event_log: EventLogComponentPre<StoreState>,
    /// The state component (agent state and the town object).
    pub state: StateComponentPre<StoreState>,
}

impl Components {
    /// Compiles (or loads from `cache_dir`) and links every component.
    pub fn load(cache_dir: &Path) -> anyhow::Result<Self> {
        let engine = Engine::new(&engine_config())?;
        let mut linker = Linker::<StoreState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        GuestImports::add_to_linker::<_, HasSelf<StoreState>>(&mut linker, |state| state)?;
        let component = load_cached(&engine, cache_dir, "event-log", EVENT_LOG_WASM)?;
        let event_log = EventLogComponentPre::new(linker.instantiate_pre(&component)?)?;
        let component = load_cached(&engine, cache_dir, "state", STATE_WASM)?;
        let state = StateComponentPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Self {
            engine,
            event_log,
            state,
        })
    }
}

/// The data of one wasmtime store: one object, for one group of calls.
/// The guests' imports are answered over it in [`super::guests`].
pub struct StoreState {
    /// The object's database; the executor owns the transaction around it.
    pub db: SqliteStore,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl StoreState {
    /// State over an open database.
    pub fn new(db: SqliteStore) -> Self {
        Self {
            db,
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Instances come from a pool whose linear memories stay resident between
/// uses: every call group instantiates afresh, and without this a large read
/// spent a sixth of its time in the kernel faulting in zeroed pages.
fn engine_config() -> Config {
    let instances = pooled_instances();
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances)
        .total_tables(instances * 4)
        .max_memory_size(GUEST_MEMORY_LIMIT)
        .linear_memory_keep_resident(RESIDENT_BYTES)
        .table_keep_resident(64 * 1024);
    // Each slot keeps wasmtime's default 4 GiB reservation (virtual address
    // space only), so guests run without explicit bounds checks.
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

/// Instances alive at once: one per call group in flight, and groups run on
/// at most [`crate::runtime::MAX_GROUPS`] blocking threads.
const MAX_INSTANCES: u32 = 2 * crate::runtime::MAX_GROUPS as u32;
/// The pool's size: [`MAX_INSTANCES`], or fewer when
/// `STASIS_POOLED_INSTANCES` says so. Only for running the host under
/// valgrind (`scripts/profile-host`), which cannot reserve the address space
/// of every slot; with fewer slots than call groups in flight, calls fail.
fn pooled_instances() -> u32 {
    std::env::var("STASIS_POOLED_INSTANCES")
        .ok()
        .and_then(|count| count.parse().ok())
        .filter(|count| (1..=MAX_INSTANCES).contains(count))
        .unwrap_or(MAX_INSTANCES)
}
/// A guest's memory ceiling: a 4 MiB batch or an 8 MiB read page, copied a
/// few times over, fits with room to spare.
const GUEST_MEMORY_LIMIT: usize = 256 * 1024 * 1024;
/// Memory kept paged in per pooled slot.
const RESIDENT_BYTES: usize = 16 * 1024 * 1024;

fn load_cached(
    engine: &Engine,
    cache_dir: &Path,
    name: &str,
    wasm: &[u8],
) -> anyhow::Result<Component> {
    let path = cache_path(engine, cache_dir, name, wasm);
    if path.exists() {
        match deserialize(engine, &path) {
            Ok(component) => return Ok(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "ignoring unusable cached component")
            }
        }
    }
    let component = Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("compiling the {name} component"))?;
    if let Err(err) = store_cached(&component, &path) {
        tracing::warn!(path = %path.display(), %err, "could not cache the compiled component");
    }
    Ok(component)
}

fn cache_path(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> PathBuf {
    let mut compat = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut compat);
    let mut key = Sha256::new();
    key.update(wasm);
    key.update(compat.finish().to_le_bytes());
    cache_dir.join(format!(
        "{name}-{}.cwasm",
        hex::encode(&key.finalize()[..16])
    ))
}

#[allow(
    unsafe_code,
    reason = "loading precompiled code is unsafe in wasmtime's API"
)]
fn deserialize(engine: &Engine, path: &Path) -> anyhow::Result<Component> {
    // SAFETY: the file was written by `store_cached` from a component this
    // same engine configuration compiled (the name carries its hash), under
    // our own data folder, and renamed into place whole.
    unsafe { Component::deserialize_file(engine, path) }.map_err(Into::into)
}

fn store_cached(component: &Component, path: &Path) -> anyhow::Result<()> {
    let bytes = component.serialize()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
