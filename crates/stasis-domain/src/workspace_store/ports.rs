//! The agent's object as the workspace saga reaches it: its workspace
//! steps and, through [`ChunkObject`], the chunk store's. The KV store is
//! the chunk store's [`crate::chunk_store::ports::BlobStore`].

use super::operations::WorkspaceOperation;
use crate::{
    DomainError,
    chunk_store::ports::{ChunkObject, LocalObject},
    sql::SqlStore,
};
use std::future::Future;

/// The agent's object, as the saga reaches it.
pub trait WorkspaceObject: ChunkObject {
    /// Runs one workspace step atomically on the agent's object.
    fn run_workspace<R: Send + 'static>(
        &self,
        step: WorkspaceOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>>;
}

impl<S: SqlStore> WorkspaceObject for LocalObject<'_, S> {
    async fn run_workspace<R: Send + 'static>(
        &self,
        step: WorkspaceOperation<R>,
    ) -> Result<R, DomainError> {
        step.run_with(|call| super::execute(self.store, &call, &self.env))
    }
}
