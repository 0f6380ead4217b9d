//! The store on real SQLite in temporary directories.

use raidlab_core::{CaseId, DirectionFigures, Figures, Plan};
use raidlab_store::{ExperimentMeta, NewResult, Store, StoreError};
use std::path::Path;

fn meta() -> ExperimentMeta {
    ExperimentMeta {
        name: "t".into(),
        plan_path: None,
        plan_text: None,
        target: "sim".into(),
        created_unix: 1,
        raidlab_version: "0".into(),
    }
}

fn plan() -> Plan {
    Plan::parse("name = \"t\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = [\"raid0\", \"raid5\"]\n[workloads]\nrw = \"randread\"\n", Path::new("t.toml")).unwrap()
}

fn result(id: &CaseId, rep: u32, raw: &[u8]) -> NewResult {
    NewResult {
        case_id: id.clone(),
        repetition: rep,
        target: "sim".into(),
        figures: Figures {
            read: Some(DirectionFigures {
                ios: 10,
                iops: 123.456789,
                ..Default::default()
            }),
            ..Default::default()
        },
        raw_json: raw.to_vec(),
        logs: vec![("iops.log".into(), b"1000, 5, 0, 4096, 0\n".to_vec())],
        environment: serde_json::json!({"k": 1}),
        started_unix: 5,
        wall_ns: 6,
        source: None,
    }
}

#[test]
fn a_store_is_never_created_twice() {
    let dir = tempfile::tempdir().unwrap();
    Store::create(dir.path(), &meta()).unwrap();
    assert!(matches!(
        Store::create(dir.path(), &meta()),
        Err(StoreError::Exists(_))
    ));
    assert!(matches!(
        Store::open(&dir.path().join("nope")),
        Err(StoreError::NotAStore(_))
    ));
}

#[test]
fn results_round_trip_and_are_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let id = p.cases()[1].id.clone();
    {
        let mut s = Store::create(dir.path(), &meta()).unwrap();
        s.add_cases(p.cases()).unwrap();
        s.add_cases(p.cases()).unwrap();
        s.commit_result(&result(&id, 1, b"{\"raw\": 1}\n")).unwrap();
        let again = s.commit_result(&result(&id, 1, b"other"));
        assert!(matches!(again, Err(StoreError::ResultExists { .. })));
    }
    // Reopened, as after a crash or for --resume.
    let s = Store::open(dir.path()).unwrap();
    assert_eq!(
        s.cases().unwrap(),
        p.cases().to_vec(),
        "cases registered once, in plan order"
    );
    let r = &s.results().unwrap()[0];
    assert_eq!(r.figures.read.as_ref().unwrap().iops, 123.456789);
    assert_eq!(
        std::fs::read(s.raw_path(r)).unwrap(),
        b"{\"raw\": 1}\n",
        "raw bytes kept as given, first write wins"
    );
    assert_eq!(
        s.finished().unwrap().into_iter().collect::<Vec<_>>(),
        vec![(id, 1)]
    );
    assert_eq!(s.meta().unwrap(), meta());
}

#[test]
fn a_newer_schema_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::create(dir.path(), &meta()).unwrap();
    assert_eq!(s.schema_version().unwrap(), 1);
    drop(s);
    let conn = rusqlite::Connection::open(dir.path().join("raidlab.sqlite")).unwrap();
    conn.execute("UPDATE schema_version SET version = 999", [])
        .unwrap();
    drop(conn);
    let e = Store::open(dir.path()).err().unwrap();
    assert!(e.to_string().contains("newer raidlab"), "{e}");
}

#[test]
fn imported_cases_have_no_array() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::create(dir.path(), &meta()).unwrap();
    let w = plan().cases()[0].workload.clone();
    s.add_imported_cases(&[(CaseId::from_key("a/b.json"), "a".into(), w.clone())])
        .unwrap();
    let rows = s.all_case_rows().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].case.is_none());
    assert_eq!(rows[0].workload, w);
}

#[test]
fn a_batch_commits_each_result_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let mut s = Store::create(dir.path(), &meta()).unwrap();
    s.add_cases(p.cases()).unwrap();
    let (a, b) = (&p.cases()[0].id, &p.cases()[1].id);
    s.commit_result(&result(a, 1, b"first")).unwrap();
    let out = s
        .commit_batch(&[
            result(a, 1, b"again"),
            result(b, 1, b"new"),
            result(b, 2, b"new2"),
        ])
        .unwrap();
    assert!(matches!(out[0], Err(StoreError::ResultExists { .. })));
    assert!(out[1].is_ok() && out[2].is_ok());
    let results = s.results().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(
        std::fs::read(s.raw_path(&results[0])).unwrap(),
        b"first",
        "a stored result is never rewritten"
    );
}
