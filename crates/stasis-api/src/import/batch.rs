//! Elements of the manifest's arrays gathered into batches, so that each
//! call to the agent's object stages many small elements or a few large
//! ones, within a bounded size.

use stasis_domain::agent_state::{ImportBatch, ManifestEvent, ManifestMemory, ManifestSession};

/// Elements per batch, at most: a fork's 10,000 small events go in one or
/// two calls (the byte bound below is what keeps a call's memory small).
const BATCH_ITEMS: usize = 10_000;
/// JSON text per batch, at most (past it the batch goes; an element is
/// never split).
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// The batch being gathered: elements of one array, in order.
#[derive(Default)]
pub(crate) struct Batch {
    items: Option<ImportBatch>,
    count: usize,
    bytes: usize,
}

impl Batch {
    /// Adds an event; returns a batch to stage first when the element
    /// belongs to another array, and the batch itself once it is full.
    pub fn add_event(&mut self, event: ManifestEvent, len: usize) -> Option<ImportBatch> {
        self.add(len, |batch| match batch {
            Some(ImportBatch::Events(events)) => {
                events.push(event);
                None
            }
            _ => Some(ImportBatch::Events(vec![event])),
        })
    }

    /// Adds a session, as [`Batch::add_event`] does.
    pub fn add_session(&mut self, session: ManifestSession, len: usize) -> Option<ImportBatch> {
        self.add(len, |batch| match batch {
            Some(ImportBatch::Sessions(sessions)) => {
                sessions.push(session);
                None
            }
            _ => Some(ImportBatch::Sessions(vec![session])),
        })
    }

    /// Adds a memory entry, as [`Batch::add_event`] does.
    pub fn add_memory(&mut self, entry: ManifestMemory, len: usize) -> Option<ImportBatch> {
        self.add(len, |batch| match batch {
            Some(ImportBatch::Memory(entries)) => {
                entries.push(entry);
                None
            }
            _ => Some(ImportBatch::Memory(vec![entry])),
        })
    }

    /// What is gathered, leaving the batch empty.
    pub fn take(&mut self) -> Option<ImportBatch> {
        self.count = 0;
        self.bytes = 0;
        self.items.take()
    }

    /// `append` pushes onto the current batch when it is of the same array
    /// (answering `None`), else answers a new batch holding the element.
    fn add(
        &mut self,
        len: usize,
        append: impl FnOnce(&mut Option<ImportBatch>) -> Option<ImportBatch>,
    ) -> Option<ImportBatch> {
        let mut ready = None;
        if let Some(fresh) = append(&mut self.items) {
            ready = self.take();
            self.items = Some(fresh);
        }
        self.count += 1;
        self.bytes += len;
        if ready.is_none() && (self.count >= BATCH_ITEMS || self.bytes >= BATCH_BYTES) {
            ready = self.take();
        }
        ready
    }
}
