//! The result store: one directory per experiment.
//!
//! `DIR/raidlab.sqlite` indexes cases, results and environments (schema versioned, with
//! migrations); `DIR/raw/` keeps fio's JSON and logs byte for byte. A result is written
//! raw-file first (fsynced, then renamed into place) and then indexed in one transaction,
//! the moment its case ends. Nothing is ever overwritten: a (case, repetition, target)
//! that already has a result is refused, and so is creating a store where one exists.

use raidlab_core::{Case, CaseId, Figures, Workload};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

const DB: &str = "raidlab.sqlite";

/// Schema migrations, in order; the store's version is the number applied.
const MIGRATIONS: &[&str] = &[
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

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} is not a raidlab store (no raidlab.sqlite): run `raidlab run PLAN --out DIR` or `raidlab import` first")]
    NotAStore(PathBuf),
    #[error("{0} already holds a raidlab store; nothing is overwritten: use `--resume` to continue it or choose another directory")]
    Exists(PathBuf),
    #[error("{path} was written by a newer raidlab (schema {found}, this build knows {known}): upgrade raidlab to read it")]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("case {case} repetition {repetition} on {target} already has a result; results are never rewritten")]
    ResultExists {
        case: CaseId,
        repetition: u32,
        target: String,
    },
    #[error("store database {path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("store file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store data: {0}")]
    Data(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, StoreError>;

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
    /// Extra raw files (fio logs) by name.
    pub logs: Vec<(String, Vec<u8>)>,
    pub environment: serde_json::Value,
    pub started_unix: i64,
    pub wall_ns: u64,
    /// Where an imported result came from.
    pub source: Option<String>,
}

/// A stored result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    pub id: i64,
    pub case_id: CaseId,
    pub repetition: u32,
    pub target: String,
    pub figures: Figures,
    pub environment: serde_json::Value,
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

pub struct Store {
    dir: PathBuf,
    conn: Connection,
}

impl Store {
    /// Create a new store in `dir` (made if missing). Refuses a directory that has one.
    pub fn create(dir: &Path, meta: &ExperimentMeta) -> Result<Store> {
        if dir.join(DB).exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        let io = |source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir.join("raw")).map_err(io)?;
        let mut store = Store::connect(dir)?;
        store.migrate()?;
        store
            .conn
            .execute(
                "INSERT INTO experiment VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    meta.name,
                    meta.plan_path,
                    meta.plan_text,
                    meta.target,
                    meta.created_unix,
                    meta.raidlab_version
                ],
            )
            .map_err(|e| store.sql(e))?;
        Ok(store)
    }

    /// Open an existing store.
    pub fn open(dir: &Path) -> Result<Store> {
        if !dir.join(DB).exists() {
            return Err(StoreError::NotAStore(dir.to_path_buf()));
        }
        let mut store = Store::connect(dir)?;
        store.migrate()?;
        Ok(store)
    }

    /// Open the store in `dir`, or create it.
    pub fn open_or_create(dir: &Path, meta: &ExperimentMeta) -> Result<Store> {
        if dir.join(DB).exists() {
            Store::open(dir)
        } else {
            Store::create(dir, meta)
        }
    }

    fn connect(dir: &Path) -> Result<Store> {
        let path = dir.join(DB);
        let conn = Connection::open(&path).map_err(|source| StoreError::Sql {
            path: path.clone(),
            source,
        })?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
        )
        .map_err(|source| StoreError::Sql { path, source })?;
        Ok(Store {
            dir: dir.to_path_buf(),
            conn,
        })
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.dir.join(DB),
            source,
        }
    }

    /// Bring the schema up to date; refuse one newer than this build.
    fn migrate(&mut self) -> Result<()> {
        let known = MIGRATIONS.len() as i64;
        self.conn
            .execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            .map_err(|e| self.sql(e))?;
        let version: i64 = self
            .conn
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .unwrap_or(0);
        if version > known {
            return Err(StoreError::Newer {
                path: self.dir.join(DB),
                found: version,
                known,
            });
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let path = self.dir.join(DB);
            let tx = self.conn.transaction().map_err(|source| StoreError::Sql {
                path: path.clone(),
                source,
            })?;
            tx.execute_batch(m).map_err(|source| StoreError::Sql {
                path: path.clone(),
                source,
            })?;
            tx.execute("DELETE FROM schema_version", [])
                .map_err(|source| StoreError::Sql {
                    path: path.clone(),
                    source,
                })?;
            tx.execute("INSERT INTO schema_version VALUES (?1)", [i as i64 + 1])
                .map_err(|source| StoreError::Sql {
                    path: path.clone(),
                    source,
                })?;
            tx.commit()
                .map_err(|source| StoreError::Sql { path, source })?;
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    pub fn meta(&self) -> Result<ExperimentMeta> {
        self.conn
            .query_row("SELECT name, plan_path, plan_text, target, created_unix, raidlab_version FROM experiment", [], |r| {
                Ok(ExperimentMeta {
                    name: r.get(0)?,
                    plan_path: r.get(1)?,
                    plan_text: r.get(2)?,
                    target: r.get(3)?,
                    created_unix: r.get(4)?,
                    raidlab_version: r.get(5)?,
                })
            })
            .map_err(|e| self.sql(e))
    }

    fn next_seq(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM cases", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))
    }

    /// Register cases (idempotent by id).
    pub fn add_cases(&mut self, cases: &[Case]) -> Result<()> {
        let mut seq = self.next_seq()?;
        let path = self.dir.join(DB);
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        for c in cases {
            let a = &c.array;
            let w = &c.workload;
            let n = tx
                .execute(
                    "INSERT OR IGNORE INTO cases VALUES (?1, ?2, 'plan', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
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
                .map_err(sql)?;
            seq += n as i64;
        }
        tx.commit().map_err(sql)
    }

    /// Register imported cases — workloads without an array — in one transaction
    /// (idempotent by id).
    pub fn add_imported_cases(&mut self, cases: &[(CaseId, String, Workload)]) -> Result<()> {
        let mut seq = self.next_seq()?;
        let path = self.dir.join(DB);
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        for (id, label, w) in cases {
            let n = tx
                .execute(
                    "INSERT OR IGNORE INTO cases (id, seq, kind, label, workload_json, rw, bs, iodepth, numjobs)
                     VALUES (?1, ?2, 'imported', ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![id.0, seq, label, serde_json::to_string(w)?, w.rw.to_string(), w.bs.0 as i64, w.iodepth, w.numjobs],
                )
                .map_err(sql)?;
            seq += n as i64;
        }
        tx.commit().map_err(sql)
    }

    /// Write a raw file. Callers have checked that no committed result owns this name, so
    /// a file already there is an orphan of an interrupted commit and may be replaced.
    /// With `sync`, the file is written under a temporary name, fsynced and renamed into
    /// place; without, it is written in place and the caller syncs the file system before
    /// indexing it (a torn file is then an orphan with no index row).
    fn write_raw(&self, name: &str, bytes: &[u8], sync: bool) -> Result<()> {
        let path = self.dir.join("raw").join(name);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if !sync {
            return std::fs::write(&path, bytes).map_err(io);
        }
        let tmp = self.dir.join("raw").join(format!(".{name}.tmp"));
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    fn has_result(&self, r: &NewResult) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM results WHERE case_id = ?1 AND repetition = ?2 AND target = ?3)",
                params![r.case_id.0, r.repetition, r.target],
                |row| row.get(0),
            )
            .map_err(|e| self.sql(e))
    }

    fn raw_files(&self, r: &NewResult, sync: bool) -> Result<String> {
        let base = format!("{}-r{}-{}", r.case_id, r.repetition, r.target);
        let raw_file = format!("{base}.json");
        self.write_raw(&raw_file, &r.raw_json, sync)?;
        for (name, bytes) in &r.logs {
            self.write_raw(&format!("{base}-{name}"), bytes, sync)?;
        }
        Ok(raw_file)
    }

    /// Commit one result: raw files first (fsynced), then the index row, in one transaction.
    pub fn commit_result(&mut self, r: &NewResult) -> Result<i64> {
        if self.has_result(r)? {
            return Err(StoreError::ResultExists {
                case: r.case_id.clone(),
                repetition: r.repetition,
                target: r.target.clone(),
            });
        }
        let raw_file = self.raw_files(r, true)?;
        let path = self.dir.join(DB);
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        let id = insert_result(&tx, r, &raw_file).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// Commit many results at once (import): raw files are written, the file system is
    /// synced once, then every row goes in one transaction. Each result gets its own
    /// outcome; one already stored is refused without stopping the others.
    pub fn commit_batch(&mut self, results: &[NewResult]) -> Result<Vec<Result<i64>>> {
        let mut written: Vec<Result<String>> = Vec::with_capacity(results.len());
        for r in results {
            written.push(if self.has_result(r)? {
                Err(StoreError::ResultExists {
                    case: r.case_id.clone(),
                    repetition: r.repetition,
                    target: r.target.clone(),
                })
            } else {
                self.raw_files(r, false)
            });
        }
        sync_filesystem(&self.dir.join("raw"))?;
        let path = self.dir.join(DB);
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        let mut ids = Vec::with_capacity(results.len());
        for (r, w) in results.iter().zip(written) {
            ids.push(match w {
                Ok(raw_file) => insert_result(&tx, r, &raw_file).map_err(sql),
                Err(e) => Err(e),
            });
        }
        tx.commit().map_err(sql)?;
        Ok(ids)
    }

    /// Every (case, repetition) with a result, for `--resume`.
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

    /// Every case in insertion order, imported ones included.
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

    /// Every result, in case order then repetition.
    pub fn results(&self) -> Result<Vec<StoredResult>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT r.id, r.case_id, r.repetition, r.target, r.figures_json, r.environment_json, r.raw_file, r.source, r.started_unix, r.wall_ns
                 FROM results r JOIN cases c ON c.id = r.case_id ORDER BY c.seq, r.repetition, r.target",
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

    pub fn raw_path(&self, r: &StoredResult) -> PathBuf {
        self.dir.join("raw").join(&r.raw_file)
    }
}

/// Flush everything written under `dir` to stable storage with one `syncfs(2)`.
fn sync_filesystem(dir: &Path) -> Result<()> {
    let io = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(dir).map_err(io)?;
    // SAFETY: syncfs only reads the descriptor, which `f` keeps open for the call.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    if rc != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    Ok(())
}

fn insert_result(
    tx: &rusqlite::Transaction,
    r: &NewResult,
    raw_file: &str,
) -> rusqlite::Result<i64> {
    let f = &r.figures;
    let d =
        |dir: &Option<raidlab_core::DirectionFigures>,
         g: fn(&raidlab_core::DirectionFigures) -> Option<f64>| dir.as_ref().and_then(g);
    let json = |v: serde_json::Result<String>| {
        v.map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    };
    tx.execute(
        "INSERT INTO results (case_id, repetition, target, figures_json, environment_json, raw_file, source, started_unix, wall_ns,
                              read_iops, write_iops, read_bw, write_bw, read_lat_mean_ns, write_lat_mean_ns, read_p99_ns, write_p99_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
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
        ],
    )?;
    Ok(tx.last_insert_rowid())
}
