//! The whole file's sha256, taken while a pull's chunks land: each distinct chunk's bytes are
//! handed over as they arrive, in any order, and a thread of its own hashes them in file order
//! as soon as everything before them is in. The pull then need not read the file back. Bytes
//! that wait for an earlier chunk are held up to a bound; past it the hash gives up, and the
//! caller reads the file back instead.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use super::manifest::Placement;

/// Chunks handed over but not yet taken by the hashing thread, at most.
const QUEUE: usize = 16;

/// A running hash of a file assembled from `placements`.
pub(crate) struct OrderedHash {
    sender: Option<SyncSender<(usize, Vec<u8>)>>,
    thread: Option<JoinHandle<Option<(String, u64)>>>,
}

/// Which placement fills each chunk position, in file order, and how many positions each fills.
struct Layout {
    order: Vec<usize>,
    uses: Vec<usize>,
}

impl OrderedHash {
    /// Starts the hashing thread for a file whose chunks go where `placements` say; bytes held
    /// for later positions beyond `max_held` make it give up.
    pub fn start(placements: &[Placement], max_held: u64) -> Self {
        let mut positions: Vec<(u64, usize)> = placements
            .iter()
            .enumerate()
            .flat_map(|(index, p)| p.offsets.iter().map(move |&offset| (offset, index)))
            .collect();
        positions.sort_unstable();
        let layout = Layout {
            order: positions.into_iter().map(|(_, index)| index).collect(),
            uses: placements.iter().map(|p| p.offsets.len()).collect(),
        };
        let (sender, receiver) = sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("stasis-pull-hash".into())
            .spawn(move || hash_in_order(&receiver, layout, max_held))
            .ok();
        OrderedHash {
            sender: thread.is_some().then_some(sender),
            thread,
        }
    }

    /// Hands over the verified bytes of placement `index`.
    pub fn add(&self, index: usize, bytes: Vec<u8>) {
        if let Some(sender) = &self.sender {
            // A thread that gave up has stopped listening: nothing is lost but the shortcut.
            let _ = sender.send((index, bytes));
        }
    }

    /// The whole file's hex sha256 and size once every placement was handed over; `None` when
    /// the hash gave up (or its thread could not start): read the file back instead.
    pub fn finish(mut self) -> Option<(String, u64)> {
        drop(self.sender.take());
        self.thread.take()?.join().ok().flatten()
    }
}

impl Drop for OrderedHash {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which is left to finish on its own.
        drop(self.sender.take());
    }
}

fn hash_in_order(
    receiver: &Receiver<(usize, Vec<u8>)>,
    mut layout: Layout,
    max_held: u64,
) -> Option<(String, u64)> {
    let mut held: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut held_bytes = 0u64;
    let (mut next, mut size) = (0usize, 0u64);
    let mut whole = Sha256::new();
    while let Ok((index, bytes)) = receiver.recv() {
        held_bytes += bytes.len() as u64;
        held.insert(index, bytes);
        while let Some(&index) = layout.order.get(next) {
            let Some(bytes) = held.get(&index) else { break };
            whole.update(bytes);
            size += bytes.len() as u64;
            next += 1;
            let left = layout.uses.get_mut(index)?;
            *left = left.saturating_sub(1);
            if *left == 0 {
                held_bytes -= held.remove(&index).map_or(0, |b| b.len() as u64);
            }
        }
        if held_bytes > max_held {
            return None;
        }
    }
    (next == layout.order.len()).then(|| (hex::encode(whole.finalize()), size))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use crate::snapshot::chunks::sha256_hex;

    fn placement(bytes: &[u8], offsets: &[u64]) -> Placement {
        Placement {
            sha256: sha256_hex(bytes),
            len: bytes.len() as u64,
            offsets: offsets.to_vec(),
        }
    }

    #[test]
    fn chunks_handed_over_out_of_order_hash_as_the_file() {
        // The file: a b a c (a repeated), chunk size 4, the last chunk short.
        let (a, b, c) = (b"aaaa".to_vec(), b"bbbb".to_vec(), b"cc".to_vec());
        let file = [a.clone(), b.clone(), a.clone(), c.clone()].concat();
        let placements = [
            placement(&a, &[0, 8]),
            placement(&b, &[4]),
            placement(&c, &[12]),
        ];
        let hash = OrderedHash::start(&placements, 1 << 20);
        hash.add(2, c);
        hash.add(1, b);
        hash.add(0, a);
        assert_eq!(hash.finish(), Some((sha256_hex(&file), file.len() as u64)));
    }

    #[test]
    fn too_much_held_or_a_missing_chunk_gives_up() {
        let (a, b) = (vec![1u8; 100], vec![2u8; 100]);
        let placements = [placement(&a, &[0]), placement(&b, &[100])];
        let hash = OrderedHash::start(&placements, 50);
        hash.add(1, b.clone());
        hash.add(0, a.clone());
        assert_eq!(hash.finish(), None, "b waited past the bound");

        let hash = OrderedHash::start(&placements, 1 << 20);
        hash.add(0, a);
        assert_eq!(hash.finish(), None, "b never came");
    }
}
