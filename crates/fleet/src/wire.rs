//! What a host's raidlab tells the controller: one JSON object per line on the session's
//! standard output (`raidlab run … --events`, `raidlab fleet-replay DIR`).

use raidlab_store::NewResult;
use serde::{Deserialize, Serialize};

/// One line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Wire {
    /// The run began: its process (for the host's own tools), and its work in the units of
    /// `position` (seconds on the host target).
    Started {
        pid: u32,
        total: u64,
        pending: usize,
    },
    /// What is happening now.
    Message { text: String },
    /// Work done so far.
    Position { value: u64 },
    /// A result the host's store committed (or holds, when replayed).
    Result(Box<WireResult>),
    /// `[run] fleet = "together"`: the case's array is up and laid out, and the host waits
    /// for the controller to run `job` (this host's fio job file) through its fio server.
    Ready {
        case_id: String,
        repetition: u32,
        job: String,
    },
    /// The run ended; `error` says why when it failed.
    Finished { error: Option<String> },
}

/// A committed result, whole: fio's JSON and logs byte for byte (they are text), the
/// environment, when and how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireResult {
    pub case_id: String,
    pub repetition: u32,
    pub raw_json: String,
    pub logs: Vec<(String, String)>,
    pub environment: serde_json::Value,
    pub started_unix: i64,
    pub wall_ns: u64,
}

impl Wire {
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("a wire event serialises")
    }

    /// Send it to the controller: one line on standard output, flushed at once.
    pub fn emit(&self) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", self.line());
        let _ = out.flush();
    }
}

impl WireResult {
    pub fn from_new(r: &NewResult) -> WireResult {
        WireResult {
            case_id: r.case_id.0.clone(),
            repetition: r.repetition,
            raw_json: String::from_utf8_lossy(&r.raw_json).into_owned(),
            logs: r
                .logs
                .iter()
                .map(|(n, b)| (n.clone(), String::from_utf8_lossy(b).into_owned()))
                .collect(),
            environment: serde_json::to_value(&r.environment).unwrap_or_default(),
            started_unix: r.started_unix,
            wall_ns: r.wall_ns,
        }
    }

    /// The result to commit on the controller, under `target` (`host.NAME`).
    pub fn into_new(self, target: &str) -> Result<NewResult, String> {
        let figures = raidlab_fio::parse_output(&self.raw_json)
            .map_err(|e| format!("case {}: its fio JSON does not parse: {e}", self.case_id))?
            .figures;
        let environment = serde_json::from_value(self.environment)
            .map_err(|e| format!("case {}: its environment does not read: {e}", self.case_id))?;
        Ok(NewResult {
            case_id: raidlab_core::CaseId(self.case_id),
            repetition: self.repetition,
            target: target.into(),
            figures,
            raw_json: self.raw_json.into_bytes(),
            logs: self
                .logs
                .into_iter()
                .map(|(n, t)| (n, t.into_bytes()))
                .collect(),
            environment,
            started_unix: self.started_unix,
            wall_ns: self.wall_ns,
            source: None,
        })
    }
}
