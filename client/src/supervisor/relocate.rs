//! Sessions of a kilo.db written in another agent's home, moved to this agent's working folder
//! before its runtime starts.
//!
//! kilo binds a session to the folder it was created in (`session.directory`): the session's
//! tools run there, and its events go to that folder's instance, which a runtime serving
//! another folder never streams on its `GET /event`. A fork's kilo.db holds its source's
//! sessions, bound to the source's folder: left as they are, the fork's turns would run in the
//! source's folder and its events would never reach the sidecar. A supervisor runs its runtime
//! in its own working folder, so every session found outside its home belongs here.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{Error, Result};

/// Moves every session of `db` whose folder is neither `workdir` nor inside `home` to
/// `workdir`; answers how many moved. A database without kilo's `session` table is left alone.
pub(crate) fn sessions_into(db: &Path, home: &Path, workdir: &Path) -> Result<usize> {
    let what = |action: &str| format!("{action} {}", db.display());
    let sql =
        |e: rusqlite::Error| Error::Config(format!("{}: {e}", what("relocating sessions in")));
    if !db.exists() {
        return Ok(0);
    }
    let connection =
        Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(sql)?;
    connection
        .busy_timeout(Duration::from_secs(5))
        .map_err(sql)?;
    let has_sessions: Option<i64> = connection
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(sql)?;
    if has_sessions.is_none() {
        return Ok(0);
    }
    let (Some(home), Some(workdir)) = (home.to_str(), workdir.to_str()) else {
        return Err(Error::Config(format!(
            "{} is not UTF-8: kilo's sessions cannot name it",
            home.display()
        )));
    };
    let inside = format!("{}/", home.trim_end_matches('/'));
    let moved = connection
        .execute(
            "UPDATE session SET directory = ?1
             WHERE directory <> ?1 AND directory <> ?2
               AND substr(directory, 1, length(?3)) <> ?3",
            (workdir, home, inside),
        )
        .map_err(sql)?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kilo_db(path: &Path, directories: &[&str]) {
        let connection = Connection::open(path).expect("a database");
        connection
            .execute_batch("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL);")
            .expect("the table");
        for (i, directory) in directories.iter().enumerate() {
            connection
                .execute(
                    "INSERT INTO session (id, directory) VALUES (?1, ?2)",
                    (format!("ses_{i}"), directory),
                )
                .expect("a session");
        }
    }

    fn directories(path: &Path) -> Vec<String> {
        let connection = Connection::open(path).expect("the database");
        let mut statement = connection
            .prepare("SELECT directory FROM session ORDER BY id")
            .expect("a query");
        statement
            .query_map([], |row| row.get(0))
            .expect("rows")
            .collect::<std::result::Result<_, _>>()
            .expect("directories")
    }

    #[test]
    fn sessions_of_another_home_move_and_this_homes_stay() {
        let dir = tempfile::tempdir().expect("a folder");
        let db = dir.path().join("kilo.db");
        let home = dir.path().join("agent-home-mayor-fork");
        let workdir = home.join("work");
        let own = workdir.join("sub").display().to_string();
        let theirs = dir
            .path()
            .join("agent-home-mayor/work")
            .display()
            .to_string();
        // A home whose name extends this one's is another home.
        let lookalike = dir
            .path()
            .join("agent-home-mayor-fork-2/work")
            .display()
            .to_string();
        kilo_db(&db, &[&theirs, &own, &lookalike]);
        let moved = sessions_into(&db, &home, &workdir).expect("relocated");
        assert_eq!(moved, 2);
        let workdir = workdir.display().to_string();
        assert_eq!(directories(&db), [workdir.clone(), own, workdir.clone()]);
        assert_eq!(
            sessions_into(&db, &home, Path::new(&workdir)).expect("again"),
            0
        );
    }

    #[test]
    fn a_database_without_sessions_or_none_at_all_is_left_alone() {
        let dir = tempfile::tempdir().expect("a folder");
        let db = dir.path().join("kilo.db");
        let home = dir.path().join("home");
        assert_eq!(
            sessions_into(&db, &home, &home.join("work")).expect("no db"),
            0
        );
        Connection::open(&db)
            .and_then(|c| c.execute_batch("CREATE TABLE other (x);"))
            .expect("a database");
        assert_eq!(
            sessions_into(&db, &home, &home.join("work")).expect("no table"),
            0
        );
    }
}
