//! The index's schema and how it evolves.
//!
//! Stores outlive releases: a store written today must open next year. The schema is an
//! ordered list of migrations; `schema_version` records how many have been applied, each
//! is applied in its own transaction together with the version bump, and a store whose
//! version is newer than this build knows is refused rather than misread. Migrations are
//! append-only: never edit one that has shipped, add another.

use crate::error::{sql, Result, StoreError};
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// Schema migrations, in order; a store's version is the number applied.
pub const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE experiment (name TEXT NOT NULL, plan_path TEXT, plan_text TEXT, target TEXT NOT NULL,
                              created_unix INTEGER NOT NULL, raidlab_version TEXT NOT NULL);
     CREATE TABLE cases (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
                         config_json TEXT, workload_json TEXT NOT NULL,
                         engine TEXT, level TEXT, layout TEXT, chunk_kib INTEGER, disks INTEGER, filesystem TEXT,
                         rw TEXT NOT NULL, bs INTEGER NOT NULL, iodepth INTEGER NOT NULL, numjobs INTEGER NOT NULL);
     CREATE TABLE results (id INTEGER PRIMARY KEY, case_id TEXT NOT NULL REFERENCES cases(id), repetition INTEGER NOT NULL,
                           target TEXT NOT NULL, figures_json TEXT NOT NULL, environment_json TEXT NOT NULL,
                           raw_file TEXT NOT NULL, source TEXT, started_unix INTEGER NOT NULL, wall_ns INTEGER NOT NULL,
                           read_iops REAL, write_iops REAL, read_bw REAL, write_bw REAL,
                           read_lat_mean_ns REAL, write_lat_mean_ns REAL, read_p99_ns REAL, write_p99_ns REAL,
                           UNIQUE(case_id, repetition, target));",
];

/// The schema version this build writes (and the newest it reads).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The version recorded in the database: 0 for a database with no schema yet.
pub(crate) fn version(conn: &Connection, path: &Path) -> Result<i64> {
    let has_table: bool = conn
        .query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
            [],
            |r| r.get(0),
        )
        .map_err(sql(path))?;
    if !has_table {
        return Ok(0);
    }
    let v: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .optional()
        .map_err(sql(path))?
        .flatten();
    Ok(v.unwrap_or(0))
}

/// Bring the schema up to date; refuse one newer than this build.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let found = version(conn, path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Newer {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (i, m) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction().map_err(sql(path))?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
             DELETE FROM schema_version;",
        )
        .map_err(sql(path))?;
        tx.execute_batch(m).map_err(sql(path))?;
        tx.execute("INSERT INTO schema_version VALUES (?1)", [i as i64 + 1])
            .map_err(sql(path))?;
        tx.commit().map_err(sql(path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_bring_an_empty_database_to_the_current_version_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        let p = Path::new(":memory:");
        assert_eq!(version(&conn, p).unwrap(), 0);
        migrate(&mut conn, p).unwrap();
        assert_eq!(version(&conn, p).unwrap(), SCHEMA_VERSION);
        // Applying again is a no-op, not a "table exists" failure.
        migrate(&mut conn, p).unwrap();
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
    }

    #[test]
    fn a_newer_version_is_refused_without_touching_it() {
        let mut conn = Connection::open_in_memory().unwrap();
        let p = Path::new(":memory:");
        migrate(&mut conn, p).unwrap();
        conn.execute("UPDATE schema_version SET version = 999", [])
            .unwrap();
        let e = migrate(&mut conn, p).unwrap_err();
        assert!(matches!(e, StoreError::Newer { found: 999, .. }), "{e}");
        assert!(e.to_string().contains("upgrade"), "{e}");
    }
}
