//! What can go wrong with a store, worded for the person at the terminal.
//!
//! The CLI prints these messages as they are, so each one says what happened and what to
//! do about it; callers match on the variants (`Exists`, `ResultExists`, …) to decide.

use raidlab_core::CaseId;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} is not a raidlab store (no raidlab.sqlite): run `raidlab run PLAN --out DIR` first, or `raidlab import`")]
    NotAStore(PathBuf),

    #[error("{0} already holds a raidlab store and nothing is ever overwritten: add `--resume` to continue it, or choose another directory")]
    Exists(PathBuf),

    #[error("{0} is being written by another raidlab (a run or an import): wait for it to finish, or choose another directory")]
    Busy(PathBuf),

    #[error("{path} was written by a newer raidlab (schema {found}, this build knows up to {known}): upgrade raidlab to read it")]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },

    #[error("{path} is damaged ({what}): restore it from a copy, or re-run into a new directory")]
    Damaged { path: PathBuf, what: String },

    #[error("case {case} repetition {repetition} on {target} already has a result and results are never rewritten: use `--resume` to run only what is missing, or write to a new directory")]
    ResultExists {
        case: CaseId,
        repetition: u32,
        target: String,
    },

    #[error("case {0} is not registered in this store: register the plan's cases (add_cases / add_imported_cases) before committing their results")]
    UnknownCase(CaseId),

    #[error("{what} {name:?} cannot be part of a raw file name: use only letters, digits, '_' and '.' (and '-' in log names)")]
    BadName { what: &'static str, name: String },

    #[error("store database {path} is damaged ({source}); nothing there is rewritten. The raw fio output beside it is kept byte for byte: move the damaged file aside and recover the figures into a new store with `raidlab import {raw} --out NEW_DIR`")]
    Corrupt {
        path: PathBuf,
        raw: PathBuf,
        source: rusqlite::Error,
    },

    #[error("store database {path}: {source}; check that the directory is writable, has free space, and is not being written by another program")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error(
        "store file {path}: {source}; check that the directory is writable and has free space"
    )]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("a store record does not encode or decode ({0}): the store may be damaged or written by an incompatible raidlab")]
    Data(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// `map_err` helper: an I/O error about `path`.
pub(crate) fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `map_err` helper: an SQLite error about the database at `path`.
pub(crate) fn sql(path: &std::path::Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| sql_error(path, source)
}

/// A SQLite error as the user can act on it: a damaged file is not a permissions problem.
pub(crate) fn sql_error(path: &std::path::Path, source: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    let damaged = matches!(
        source.sqlite_error_code(),
        Some(DatabaseCorrupt | NotADatabase)
    );
    if damaged {
        let raw = path.with_file_name(crate::RAW_DIR);
        StoreError::Corrupt {
            path: path.to_path_buf(),
            raw,
            source,
        }
    } else {
        StoreError::Sql {
            path: path.to_path_buf(),
            source,
        }
    }
}
