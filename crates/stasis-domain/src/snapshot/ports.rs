//! The agent's object as the snapshot sagas reach it. It answers the chunk
//! store's steps too ([`ChunkObject`]), so that one object serves both a
//! whole-file PUT's snapshot steps and its chunks' uploads. The KV store is
//! the chunk store's [`crate::chunk_store::ports::BlobStore`].

use super::operations::SnapshotOperation;
use crate::{
    DomainError,
    chunk_store::ports::{ChunkObject, LocalObject},
    sql::SqlStore,
};
use std::future::Future;

/// The agent's object, as the saga reaches it.
pub trait SnapshotObject: ChunkObject {
    /// Runs one step atomically on the agent's object.
    fn run<R: Send + 'static>(
        &self,
        step: SnapshotOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>>;
}

impl<S: SqlStore> SnapshotObject for LocalObject<'_, S> {
    async fn run<R: Send + 'static>(&self, step: SnapshotOperation<R>) -> Result<R, DomainError> {
        step.run_with(|call| super::execute(self.store, &call, &self.env))
    }
}
