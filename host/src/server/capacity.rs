//! Who holds the server's places: request connections under one cap, live
//! tails under another.
//!
//! A client that opens connections and never sends a request head (a slow
//! or hostile one) must not keep others out: at the connection cap, a new
//! connection takes the place of the oldest connection that has sent no
//! byte yet (else the oldest that has sent part of a head only), which is
//! closed. Only when every connection has had a whole request head is the
//! new one answered 503.
//!
//! A connection is taken only once it has been open [`MIN_AGE`]: a client
//! that sent its head at once may not have been read yet on a busy machine,
//! and a flood reconnecting as fast as it is closed would otherwise make
//! every fresh connection the oldest within milliseconds. A new connection
//! waits for that instead (and the flood's wait in the listen queue).
//!
//! A request that becomes a live tail gives its connection's place back
//! and holds a tail's place instead (its response closes the connection
//! at its end), so tails left open never crowd out requests, and requests
//! never crowd out tails.

use super::clock::Clock;
use std::time::Duration;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a connection is open before a new one may take its place.
pub const MIN_AGE: Duration = Duration::from_millis(250);

/// The places of one server.
pub struct Capacity {
    connections: Mutex<Registry>,
    max_connections: usize,
    tails: Arc<Semaphore>,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    open: HashMap<u64, Arc<Clock>>,
}

/// How a new connection was let in.
pub enum Admission {
    /// A place was free.
    Admitted(Place),
    /// It took the place of a connection that had sent no request head.
    Replaced(Place),
    /// Every place holds a connection with a request under way.
    Full,
    /// The connection to take is younger than [`MIN_AGE`]: ask again after
    /// this long.
    Wait(Duration),
}

impl Capacity {
    /// Places for `max_connections` connections and `max_tails` tails.
    pub fn new(max_connections: usize, max_tails: usize) -> Arc<Self> {
        Arc::new(Self {
            connections: Mutex::new(Registry::default()),
            max_connections,
            tails: Arc::new(Semaphore::new(max_tails)),
        })
    }

    /// A place for the connection `clock` times, evicting the oldest
    /// connection still waiting for its first request head when none is
    /// free.
    pub fn admit(self: &Arc<Self>, clock: &Arc<Clock>) -> Admission {
        let mut registry = self.lock();
        let mut replaced = false;
        if registry.open.len() >= self.max_connections {
            let oldest = registry
                .open
                .iter()
                .filter_map(|(id, clock)| {
                    let (head_started, started) = clock.waiting_for_first_head()?;
                    Some(((head_started, started), *id))
                })
                .min();
            let Some(((_, started), id)) = oldest else {
                return Admission::Full;
            };
            let age = started.elapsed();
            if age < MIN_AGE {
                return Admission::Wait(MIN_AGE - age);
            }
            let Some(evicted) = registry.open.remove(&id) else {
                return Admission::Full;
            };
            // Its head cannot have arrived meanwhile: a clock's head state
            // changes under its own lock, and `evict` checks it again.
            if !evicted.evict() {
                return Admission::Full;
            }
            replaced = true;
        }
        let id = registry.next_id;
        registry.next_id += 1;
        registry.open.insert(id, Arc::clone(clock));
        let place = Place {
            capacity: Arc::clone(self),
            id,
        };
        if replaced {
            Admission::Replaced(place)
        } else {
            Admission::Admitted(place)
        }
    }

    /// A tail's place for the request on `place`'s connection, which gives
    /// its connection's place back; `None` when every tail's place is taken.
    pub fn tail(&self, place: &PlaceId) -> Option<OwnedSemaphorePermit> {
        let permit = Arc::clone(&self.tails).try_acquire_owned().ok()?;
        self.lock().open.remove(&place.0);
        Some(permit)
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place, given back when it is dropped.
pub struct Place {
    capacity: Arc<Capacity>,
    id: u64,
}

/// Names a connection's place, for its requests.
#[derive(Debug, Clone, Copy)]
pub struct PlaceId(u64);

impl Place {
    /// The place's name.
    pub fn id(&self) -> PlaceId {
        PlaceId(self.id)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.capacity.lock().open.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(admission: Admission) -> Option<Place> {
        match admission {
            Admission::Admitted(place) | Admission::Replaced(place) => Some(place),
            Admission::Full | Admission::Wait(_) => None,
        }
    }

    #[test]
    fn a_new_connection_replaces_the_oldest_that_sent_no_head() {
        let capacity = Capacity::new(2, 1);
        let (first, second, third) = (Clock::start(), Clock::start(), Clock::start());
        let _a = admitted(capacity.admit(&first));
        let _b = admitted(capacity.admit(&second));
        let _served = second.begin();
        let young = capacity.admit(&third);
        assert!(
            matches!(young, Admission::Wait(wait) if wait <= MIN_AGE),
            "the first is too young to be taken"
        );
        assert!(first.waiting_for_first_head().is_some(), "and still open");
        std::thread::sleep(MIN_AGE);
        let replaced = capacity.admit(&third);
        assert!(matches!(replaced, Admission::Replaced(_)));
        assert_eq!(
            first.waiting_for_first_head(),
            None,
            "the first was evicted"
        );
        let _third_served = third.begin();
        assert!(
            matches!(capacity.admit(&Clock::start()), Admission::Full),
            "the second and the third have requests under way"
        );
    }

    #[test]
    fn a_tail_gives_its_connection_place_back() {
        let capacity = Capacity::new(1, 1);
        let clock = Clock::start();
        let place = admitted(capacity.admit(&clock));
        let _request = clock.begin();
        assert!(matches!(capacity.admit(&Clock::start()), Admission::Full));
        let id = place.as_ref().map(Place::id);
        let tail = id.and_then(|id| capacity.tail(&id));
        assert!(tail.is_some());
        assert!(admitted(capacity.admit(&Clock::start())).is_some());
        assert!(
            id.and_then(|id| capacity.tail(&id)).is_none(),
            "one tail only"
        );
        drop(place);
    }
}
