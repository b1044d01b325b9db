//! The town log: paging, retention and expired cursors.

use crate::support::town_with_agents;
use stasis_domain::sql::SqlStore;
use stasis_domain::town;
use stasis_domain::{DomainError, limits};

#[test]
fn the_town_log_pages_like_an_agents_log() {
    let mut town = town_with_agents();
    for _ in 0..5 {
        town.dispatch("rig1", "polecat-1").expect("dispatch");
    }
    let first = town.read(0, 2).expect("page 1");
    assert_eq!(
        first.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(first.has_more);
    assert_eq!(
        (first.next_after, first.first_seq, first.last_seq),
        (2, 1, 5)
    );
    let rest = town.read(first.next_after, 10).expect("page 2");
    assert_eq!(
        rest.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert!(!rest.has_more);
    assert_eq!(rest.next_after, 5);
    let beyond = town.read(9, 10).expect("past the end");
    assert!(beyond.events.is_empty());
    assert_eq!(beyond.next_after, 9);
    assert!(rest.events.iter().all(|e| e.created_at > 0));

    let max = u64::from(limits::MAX_READ_LIMIT);
    for limit in [0, max + 1] {
        assert_eq!(town.read(0, limit).unwrap_err().code(), "invalid_request");
    }
    assert!(town.read(0, max).is_ok());
}

#[test]
fn the_town_log_keeps_its_newest_events_and_expires_older_cursors() {
    let mut town = town_with_agents();
    // Seeded in one statement: ten thousand calls would take seconds in a
    // debug build. The calls after it run retention on the real path.
    town.store
        .run(
            "WITH RECURSIVE n(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM n WHERE seq < ?1)
             INSERT INTO town_events (seq, type, data, created_at)
             SELECT seq, 'dispatch_agent', '{}', 1 FROM n",
            stasis_domain::params![town::log::MAX_TOWN_EVENTS - 2],
        )
        .expect("seed");
    let total = town::log::MAX_TOWN_EVENTS + 5;
    for _ in 0..7 {
        town.dispatch("rig1", "polecat-1").expect("dispatch");
    }
    let err = town.read(0, 10).unwrap_err();
    assert_eq!(err, DomainError::CursorExpired { first_seq: 6 });
    assert!(matches!(
        town.read(4, 10),
        Err(DomainError::CursorExpired { .. })
    ));
    let page = town.read(5, 10).expect("read from the horizon");
    assert_eq!(page.first_seq, 6);
    assert_eq!(page.last_seq, total);
    assert_eq!(page.events[0].seq, 6);
    let seqs: Vec<u64> = town.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (6..=total).collect::<Vec<_>>(), "gapless");
}
