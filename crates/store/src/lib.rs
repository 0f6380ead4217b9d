//! The result store: one directory per experiment.
//!
//! `DIR/raidlab.sqlite` indexes cases, results and environments (schema versioned, with
//! migrations); `DIR/raw/` keeps fio's JSON and logs byte for byte. A result is written
//! raw-file first (fsynced, then renamed into place) and then indexed in one transaction,
//! the moment its case ends, so a crash loses at most the case that was running and
//! `--resume` picks up from the index. Nothing is ever overwritten: a (case, repetition,
//! target) that already has a result is refused, and so is creating a store where one
//! exists.

mod error;
mod raw;
mod schema;

pub use error::{Result, StoreError};
pub use schema::SCHEMA_VERSION;

use error::{io, sql};
use raidlab_core::{Case, CaseId, DirectionFigures, Figures, Workload};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The index's file name inside a store directory.
pub const DB_FILE: &str = "raidlab.sqlite";
/// The raw files' directory inside a store directory.
pub const RAW_DIR: &str = "raw";

/// A result's row id in the index.
pub type ResultId = i64;

/// About the experiment as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentMeta {
    pub name: String,
    pub plan_path: Option<String>,
    pub plan_text: Option<String>,
    pub target: String,
    pub created_unix: i64,
    pub raidlab_version: String,
}

/// A result to commit.
#[derive(Debug, Clone)]
pub struct NewResult {
    pub case_id: CaseId,
    pub repetition: u32,
    pub target: String,
    pub figures: Figures,
    /// fio's output, stored byte for byte.
    pub raw_json: Vec<u8>,
    /// Extra raw files (fio logs) by name, stored byte for byte.
    pub logs: Vec<(String, Vec<u8>)>,
    pub environment: raidlab_core::Environment,
    pub started_unix: i64,
    pub wall_ns: u64,
    /// Where an imported result came from.
    pub source: Option<String>,
}

/// A stored result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    pub id: ResultId,
    pub case_id: CaseId,
    pub repetition: u32,
    pub target: String,
    pub figures: Figures,
    pub environment: raidlab_core::Environment,
    /// fio's JSON, relative to `raw/` (see [`Store::raw_path`]).
    pub raw_file: String,
    pub source: Option<String>,
    pub started_unix: i64,
    pub wall_ns: u64,
}

/// A case as listed: full cases carry their configuration; imported ones only a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    pub id: CaseId,
    pub case: Option<Case>,
    pub workload: Workload,
    pub label: String,
}

/// An open store directory.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    conn: Connection,
    /// Held while this store is the directory's writer ([`Store::lock`]).
    lock: Option<std::fs::File>,
}

/// The file a writer holds an exclusive lock on.
pub const LOCK_FILE: &str = ".lock";

impl Store {
    /// Create a new store in `dir` (made if missing). Refuses a directory that already
    /// holds one, so two runs never overwrite each other. The index is built complete
    /// under a temporary name and renamed onto a name claimed with `create_new`, so a
    /// store appears whole or not at all, and of two racing creators one gets `Exists`.
    pub fn create(dir: &Path, meta: &ExperimentMeta) -> Result<Store> {
        let db = dir.join(DB_FILE);
        if db.exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        let raw = dir.join(RAW_DIR);
        std::fs::create_dir_all(&raw).map_err(io(&raw))?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&db)
        {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::Exists(dir.to_path_buf()))
            }
            other => drop(other.map_err(io(&db))?),
        }
        let tmp = dir.join(format!(".{DB_FILE}.{}.creating", std::process::id()));
        let built = build(&tmp, meta).and_then(|()| std::fs::rename(&tmp, &db).map_err(io(&db)));
        if let Err(e) = built {
            // Both files are ours: the claim is still empty and the build incomplete.
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&db);
            return Err(e);
        }
        raw::sync_dir(dir)?;
        Store::open(dir)
    }

    /// Become the directory's only writer: an exclusive advisory lock on `DIR/.lock`, held
    /// until the store is dropped (the kernel releases it if the process dies). A second
    /// `run --resume` or `import` into the same directory gets [`StoreError::Busy`];
    /// readers (`report`, `compare`) do not lock.
    pub fn lock(&mut self) -> Result<()> {
        if self.lock.is_some() {
            return Ok(());
        }
        let path = self.dir.join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        match file.try_lock() {
            Ok(()) => {
                self.lock = Some(file);
                Ok(())
            }
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy(self.dir.clone())),
            Err(std::fs::TryLockError::Error(e)) => Err(io(&path)(e)),
        }
    }

    /// Open an existing store (for resume, report, import into it), migrating its schema
    /// if it is older than this build's.
    pub fn open(dir: &Path) -> Result<Store> {
        let db = dir.join(DB_FILE);
        match std::fs::metadata(&db) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotAStore(dir.to_path_buf()))
            }
            Err(e) => return Err(io(&db)(e)),
            Ok(m) if m.len() == 0 => {
                return Err(StoreError::Damaged {
                    path: db,
                    what: "empty: the run creating it was interrupted, or is still running".into(),
                })
            }
            Ok(_) => {}
        }
        let flags = OpenFlags::default().difference(OpenFlags::SQLITE_OPEN_CREATE);
        let mut conn = Connection::open_with_flags(&db, flags).map_err(sql(&db))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(sql(&db))?;
        conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL;")
            .map_err(sql(&db))?;
        schema::migrate(&mut conn, &db)?;
        conn.execute_batch("PRAGMA journal_mode=WAL;")
            .map_err(sql(&db))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            conn,
            lock: None,
        })
    }

    /// Open the store in `dir`, or create it with `meta` (for `--resume` and import).
    pub fn open_or_create(dir: &Path, meta: &ExperimentMeta) -> Result<Store> {
        if !dir.join(DB_FILE).exists() {
            return Store::create(dir, meta);
        }
        let store = Store::open(dir)?;
        if store.meta_row()?.is_none() {
            // A store from before creation was atomic, interrupted before its record.
            insert_meta(&store.conn, meta).map_err(sql(&store.db()))?;
        }
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn db(&self) -> PathBuf {
        self.dir.join(DB_FILE)
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        error::sql_error(&self.db(), source)
    }

    /// The schema version of the open store (always [`SCHEMA_VERSION`] once opened).
    pub fn schema_version(&self) -> Result<i64> {
        schema::version(&self.conn, &self.db())
    }

    fn meta_row(&self) -> Result<Option<ExperimentMeta>> {
        self.conn
            .query_row(
                "SELECT name, plan_path, plan_text, target, created_unix, raidlab_version FROM experiment",
                [],
                |r| {
                    Ok(ExperimentMeta {
                        name: r.get(0)?,
                        plan_path: r.get(1)?,
                        plan_text: r.get(2)?,
                        target: r.get(3)?,
                        created_unix: r.get(4)?,
                        raidlab_version: r.get(5)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    pub fn meta(&self) -> Result<ExperimentMeta> {
        self.meta_row()?.ok_or_else(|| StoreError::Damaged {
            path: self.db(),
            what: "no experiment record".into(),
        })
    }

    fn next_seq(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM cases", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))
    }

    /// Register a plan's cases, in one transaction (idempotent by case id: a case already
    /// registered keeps its place in the order).
    pub fn add_cases(&mut self, cases: &[Case]) -> Result<()> {
        let mut seq = self.next_seq()?;
        let db = self.db();
        let tx = self.conn.transaction().map_err(sql(&db))?;
        for c in cases {
            let (a, w) = (&c.array, &c.workload);
            let n = tx
                .execute(
                    "INSERT OR IGNORE INTO cases (id, seq, kind, label, config_json, workload_json,
                         engine, level, layout, chunk_kib, disks, filesystem, rw, bs, iodepth, numjobs)
                     VALUES (?1, ?2, 'plan', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    params![
                        c.id.0,
                        seq,
                        c.label(),
                        serde_json::to_string(c)?,
                        serde_json::to_string(w)?,
                        a.engine.to_string(),
                        a.level.to_string(),
                        a.layout.map(|l| l.to_string()),
                        a.chunk.map(|c| c.as_kib() as i64),
                        a.disks,
                        a.filesystem.to_string(),
                        w.rw.to_string(),
                        w.bs.0 as i64,
                        w.iodepth,
                        w.numjobs
                    ],
                )
                .map_err(sql(&db))?;
            seq += n as i64;
        }
        tx.commit().map_err(sql(&db))
    }

    /// Register imported cases — workloads without an array (array columns NULL,
    /// `kind = 'imported'`) — in one transaction (idempotent by id).
    pub fn add_imported_cases(&mut self, cases: &[(CaseId, String, Workload)]) -> Result<()> {
        let mut seq = self.next_seq()?;
        let db = self.db();
        let tx = self.conn.transaction().map_err(sql(&db))?;
        for (id, label, w) in cases {
            let n = tx
                .execute(
                    "INSERT OR IGNORE INTO cases (id, seq, kind, label, workload_json, rw, bs, iodepth, numjobs)
                     VALUES (?1, ?2, 'imported', ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![id.0, seq, label, serde_json::to_string(w)?, w.rw.to_string(), w.bs.0 as i64, w.iodepth, w.numjobs],
                )
                .map_err(sql(&db))?;
            seq += n as i64;
        }
        tx.commit().map_err(sql(&db))
    }

    /// Whether `r` may be committed: names are safe, its case is registered, and no result
    /// exists for its (case, repetition, target) — neither stored nor earlier in `batch`.
    fn check(&self, r: &NewResult, batch: &mut HashSet<(String, u32, String)>) -> Result<()> {
        raw::check_key(&r.case_id.0, &r.target)?;
        let mut names = HashSet::new();
        for (name, _) in &r.logs {
            raw::check_log_name(name)?;
            if !names.insert(name.as_str()) {
                return Err(StoreError::BadName {
                    what: "duplicate log name",
                    name: name.clone(),
                });
            }
        }
        let known: bool = self
            .conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM cases WHERE id = ?1)")
            .and_then(|mut st| st.query_row([&r.case_id.0], |row| row.get(0)))
            .map_err(|e| self.sql(e))?;
        if !known {
            return Err(StoreError::UnknownCase(r.case_id.clone()));
        }
        let stored: bool = self
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM results WHERE case_id = ?1 AND repetition = ?2 AND target = ?3)",
            )
            .and_then(|mut st| {
                st.query_row(params![r.case_id.0, r.repetition, r.target], |row| row.get(0))
            })
            .map_err(|e| self.sql(e))?;
        if stored || !batch.insert((r.case_id.0.clone(), r.repetition, r.target.clone())) {
            return Err(exists(r));
        }
        Ok(())
    }

    /// Write a checked result's raw files; returns the JSON's name. Any file already at
    /// one of these names is an orphan (no row owns it) and is set aside, not replaced.
    fn write_raw(&self, r: &NewResult, durable: bool) -> Result<String> {
        let raw = self.dir.join(RAW_DIR);
        let write = if durable {
            raw::write_durable
        } else {
            raw::write_fast
        };
        let stem = raw::stem(&r.case_id.0, r.repetition, &r.target);
        let json = format!("{stem}.json");
        write(&raw, &json, &r.raw_json)?;
        for (name, bytes) in &r.logs {
            write(&raw, &raw::log_file(&stem, name), bytes)?;
        }
        if durable {
            raw::sync_dir(&raw)?;
        }
        Ok(json)
    }

    /// Commit one result the moment its case ends: raw files first (each fsynced, then
    /// renamed into place, then `raw/` fsynced), then the index row in one transaction.
    /// A (case, repetition, target) that already has a result is never rewritten:
    /// `ResultExists`, and the stored row and raw files stay as they were.
    pub fn commit_result(&mut self, r: &NewResult) -> Result<ResultId> {
        self.check(r, &mut HashSet::new())?;
        let raw_file = self.write_raw(r, true)?;
        let db = self.db();
        let tx = self.conn.transaction().map_err(sql(&db))?;
        let id = insert_result(&tx, r, &raw_file).map_err(|e| insert_error(e, r, &db))?;
        tx.commit().map_err(sql(&db))?;
        Ok(id)
    }

    /// Commit many results at once (import): raw files are written, the file system is
    /// synced once, then every row goes in one transaction. Each result gets its own
    /// outcome; one already stored (or twice in the batch) is refused without stopping
    /// the others.
    pub fn commit_batch(&mut self, results: &[NewResult]) -> Result<Vec<Result<ResultId>>> {
        let mut seen = HashSet::new();
        let written: Vec<Result<String>> = results
            .iter()
            .map(|r| {
                self.check(r, &mut seen)?;
                self.write_raw(r, false)
            })
            .collect();
        raw::sync_filesystem(&self.dir.join(RAW_DIR))?;
        let db = self.db();
        let tx = self.conn.transaction().map_err(sql(&db))?;
        let ids = results
            .iter()
            .zip(written)
            .map(|(r, w)| insert_result(&tx, r, &w?).map_err(|e| insert_error(e, r, &db)))
            .collect();
        tx.commit().map_err(sql(&db))?;
        Ok(ids)
    }

    /// Every (case, repetition) with a result on any target, for `--resume`.
    pub fn finished(&self) -> Result<BTreeSet<(CaseId, u32)>> {
        let mut st = self
            .conn
            .prepare("SELECT case_id, repetition FROM results")
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| Ok((CaseId(r.get(0)?), r.get(1)?)))
            .map_err(|e| self.sql(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.sql(e))?;
        Ok(rows)
    }

    /// Every case in insertion order, imported ones (with `case: None`) included.
    pub fn all_case_rows(&self) -> Result<Vec<CaseRow>> {
        let mut st = self
            .conn
            .prepare("SELECT id, config_json, workload_json, label FROM cases ORDER BY seq")
            .map_err(|e| self.sql(e))?;
        let raw: Vec<(String, Option<String>, String, String)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .map_err(|e| self.sql(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.sql(e))?;
        raw.into_iter()
            .map(|(id, config, workload, label)| {
                Ok(CaseRow {
                    id: CaseId(id),
                    case: config.map(|c| serde_json::from_str(&c)).transpose()?,
                    workload: serde_json::from_str(&workload)?,
                    label,
                })
            })
            .collect()
    }

    /// Full cases (from plans) in insertion order.
    pub fn cases(&self) -> Result<Vec<Case>> {
        Ok(self
            .all_case_rows()?
            .into_iter()
            .filter_map(|r| r.case)
            .collect())
    }

    /// Every result, in case insertion order, then repetition, then target.
    pub fn results(&self) -> Result<Vec<StoredResult>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT r.id, r.case_id, r.repetition, r.target, r.figures_json, r.environment_json,
                        r.raw_file, r.source, r.started_unix, r.wall_ns
                 FROM results r LEFT JOIN cases c ON c.id = r.case_id
                 ORDER BY c.seq, r.repetition, r.target, r.id",
            )
            .map_err(|e| self.sql(e))?;
        type Raw = (
            i64,
            String,
            u32,
            String,
            String,
            String,
            String,
            Option<String>,
            i64,
            i64,
        );
        let raw: Vec<Raw> = st
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            })
            .map_err(|e| self.sql(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.sql(e))?;
        raw.into_iter()
            .map(
                |(id, case, rep, target, fig, env, raw_file, source, started, wall)| {
                    Ok(StoredResult {
                        id,
                        case_id: CaseId(case),
                        repetition: rep,
                        target,
                        figures: serde_json::from_str(&fig)?,
                        environment: serde_json::from_str(&env)?,
                        raw_file,
                        source,
                        started_unix: started,
                        wall_ns: wall as u64,
                    })
                },
            )
            .collect()
    }

    /// Where a stored result's fio JSON is.
    pub fn raw_path(&self, r: &StoredResult) -> PathBuf {
        self.dir.join(RAW_DIR).join(&r.raw_file)
    }

    /// Where a stored result's log `name` (`iops.log`, `lat.log`) is, if it was stored.
    pub fn log_path(&self, r: &StoredResult, name: &str) -> PathBuf {
        let stem = r.raw_file.trim_end_matches(".json");
        self.dir.join(RAW_DIR).join(raw::log_file(stem, name))
    }
}

/// Build a complete, fresh index at `path`: schema and experiment record.
fn build(path: &Path, meta: &ExperimentMeta) -> Result<()> {
    let _ = std::fs::remove_file(path); // a leftover of this process id's crashed create
    let mut conn = Connection::open(path).map_err(sql(path))?;
    conn.execute_batch("PRAGMA synchronous=FULL;")
        .map_err(sql(path))?;
    schema::migrate(&mut conn, path)?;
    insert_meta(&conn, meta).map_err(sql(path))?;
    conn.close().map_err(|(_, e)| sql(path)(e))
}

fn insert_meta(conn: &Connection, meta: &ExperimentMeta) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO experiment (name, plan_path, plan_text, target, created_unix, raidlab_version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            meta.name,
            meta.plan_path,
            meta.plan_text,
            meta.target,
            meta.created_unix,
            meta.raidlab_version
        ],
    )
}

fn exists(r: &NewResult) -> StoreError {
    StoreError::ResultExists {
        case: r.case_id.clone(),
        repetition: r.repetition,
        target: r.target.clone(),
    }
}

/// A UNIQUE violation on insert means another writer got there first: `ResultExists`.
fn insert_error(e: rusqlite::Error, r: &NewResult, db: &Path) -> StoreError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
        {
            exists(r)
        }
        _ => sql(db)(e),
    }
}

fn insert_result(
    tx: &rusqlite::Transaction,
    r: &NewResult,
    raw_file: &str,
) -> rusqlite::Result<ResultId> {
    let f = &r.figures;
    let d = |dir: &Option<DirectionFigures>, g: fn(&DirectionFigures) -> Option<f64>| {
        dir.as_ref().and_then(g)
    };
    let json = |v: serde_json::Result<String>| {
        v.map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    };
    tx.prepare_cached(
        "INSERT INTO results (case_id, repetition, target, figures_json, environment_json, raw_file, source,
                              started_unix, wall_ns, read_iops, write_iops, read_bw, write_bw,
                              read_lat_mean_ns, write_lat_mean_ns, read_p99_ns, write_p99_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        r.case_id.0,
        r.repetition,
        r.target,
        json(serde_json::to_string(f))?,
        json(serde_json::to_string(&r.environment))?,
        raw_file,
        r.source,
        r.started_unix,
        r.wall_ns as i64,
        d(&f.read, |x| Some(x.iops)),
        d(&f.write, |x| Some(x.iops)),
        d(&f.read, |x| Some(x.bw_bytes_s)),
        d(&f.write, |x| Some(x.bw_bytes_s)),
        d(&f.read, |x| Some(x.lat_mean_ns)),
        d(&f.write, |x| Some(x.lat_mean_ns)),
        d(&f.read, |x| x.clat_p99_ns),
        d(&f.write, |x| x.clat_p99_ns),
    ])?;
    Ok(tx.last_insert_rowid())
}
