//! The store on real SQLite in temporary directories: what `raidlab run`, `--resume`,
//! `import` and `report` rely on.

use raidlab_core::{CaseId, DirectionFigures, DiskUtil, Figures, Plan};
use raidlab_store::{ExperimentMeta, NewResult, Store, StoreError, SCHEMA_VERSION};
use std::path::Path;

fn meta() -> ExperimentMeta {
    ExperimentMeta {
        name: "t".into(),
        plan_path: Some("t.toml".into()),
        plan_text: Some("name = \"t\"".into()),
        target: "sim".into(),
        created_unix: 1,
        raidlab_version: "0".into(),
    }
}

fn plan() -> Plan {
    Plan::parse("name = \"t\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = [\"raid0\", \"raid5\"]\n[workloads]\nrw = \"randread\"\n", Path::new("t.toml")).unwrap()
}

/// Figures with awkward values: they must come back bit for bit.
fn figures(seed: u64) -> Figures {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut f = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((x % 12) as i32)
    };
    let dir = |f: &mut dyn FnMut() -> f64| DirectionFigures {
        ios: 10,
        bytes: 40960,
        iops: f(),
        bw_bytes_s: f(),
        slat_mean_ns: f(),
        clat_mean_ns: f(),
        lat_mean_ns: f(),
        lat_stddev_ns: f(),
        clat_p50_ns: Some(f()),
        clat_p90_ns: None,
        clat_p99_ns: Some(f()),
        clat_p999_ns: Some(f()),
        clat_p95_ns: Some(f()),
        clat_p9999_ns: None,
        clat_max_ns: Some(f()),
        clat_percentiles: vec![(50.0, f()), (99.99, f())],
        clat_histogram: vec![(1024.0, 3), (2048.0, 7)],
    };
    Figures {
        fio_version: Some("fio-3.36".into()),
        read: Some(dir(&mut f)),
        write: Some(dir(&mut f)),
        disk_util: vec![DiskUtil {
            name: "md0".into(),
            util: f(),
            aggr_util: Some(f()),
            ..Default::default()
        }],
    }
}

fn result(id: &CaseId, rep: u32, raw: &[u8]) -> NewResult {
    NewResult {
        case_id: id.clone(),
        repetition: rep,
        target: "sim".into(),
        figures: figures(rep as u64),
        raw_json: raw.to_vec(),
        logs: vec![("iops.log".into(), b"1000, 5, 0, 4096, 0\n".to_vec())],
        environment: serde_json::from_value(serde_json::json!({"kernel": "6.8", "k": [1, 2.5]}))
            .unwrap(),
        started_unix: 5,
        wall_ns: u64::MAX / 3,
        source: None,
    }
}

#[test]
fn a_store_is_never_created_twice() {
    let dir = tempfile::tempdir().unwrap();
    Store::create(dir.path(), &meta()).unwrap();
    let e = Store::create(dir.path(), &meta()).err().unwrap();
    assert!(matches!(e, StoreError::Exists(_)), "{e}");
    assert!(e.to_string().contains("--resume"), "{e}");
    let e = Store::open(&dir.path().join("nope")).err().unwrap();
    assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
    assert!(e.to_string().contains("raidlab run"), "{e}");
    assert!(
        !dir.path().join("nope").exists(),
        "opening never creates anything"
    );
    // Creation leaves only the index and raw/ behind, no temporaries.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with("raidlab.sqlite-")) // WAL and shared memory
        .collect();
    names.sort();
    assert_eq!(names, ["raidlab.sqlite", "raw"]);
}

#[test]
fn a_fresh_store_has_the_current_schema_and_its_meta() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::create(&dir.path().join("new/deeper"), &meta()).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(s.meta().unwrap(), meta());
    let mode: String = rusqlite::Connection::open(s.dir().join("raidlab.sqlite"))
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn results_round_trip_and_are_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let id = p.cases()[1].id.clone();
    let first = result(&id, 1, b"{\"raw\": 1}\n  \r\n\xff");
    {
        let mut s = Store::create(dir.path(), &meta()).unwrap();
        s.add_cases(p.cases()).unwrap();
        s.add_cases(p.cases()).unwrap();
        s.commit_result(&first).unwrap();
        let mut other = result(&id, 1, b"other");
        other.figures = figures(99);
        other.logs = vec![("iops.log".into(), b"other".to_vec())];
        let again = s.commit_result(&other);
        assert!(
            matches!(again, Err(StoreError::ResultExists { repetition: 1, .. })),
            "{again:?}"
        );
    }
    // Reopened, as after a crash or for --resume.
    let s = Store::open(dir.path()).unwrap();
    assert_eq!(
        s.cases().unwrap(),
        p.cases().to_vec(),
        "cases registered once, in plan order"
    );
    let results = s.results().unwrap();
    assert_eq!(results.len(), 1, "the refused result left no row");
    let r = &results[0];
    assert_eq!(
        r.figures, first.figures,
        "figures bit for bit, first write wins"
    );
    assert_eq!(r.environment, first.environment);
    assert_eq!((r.started_unix, r.wall_ns), (5, u64::MAX / 3));
    assert_eq!(
        std::fs::read(s.raw_path(r)).unwrap(),
        first.raw_json,
        "raw bytes kept as given, first write wins"
    );
    assert_eq!(r.raw_file, format!("{id}-r1-sim.json"));
    assert_eq!(
        std::fs::read(dir.path().join(format!("raw/{id}-r1-sim-iops.log"))).unwrap(),
        first.logs[0].1
    );
    assert_eq!(
        s.finished().unwrap().into_iter().collect::<Vec<_>>(),
        vec![(id, 1)]
    );
    assert_eq!(s.meta().unwrap(), meta());
}

#[test]
fn finished_survives_a_restart_and_results_come_in_case_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let (a, b) = (p.cases()[0].id.clone(), p.cases()[1].id.clone());
    {
        let mut s = Store::create(dir.path(), &meta()).unwrap();
        s.add_cases(p.cases()).unwrap();
        for (id, rep) in [(&b, 2), (&a, 2), (&b, 1)] {
            s.commit_result(&result(id, rep, b"x")).unwrap();
        }
        assert_eq!(s.finished().unwrap().len(), 3);
    } // dropped: the process "restarts"
    let mut s = Store::open_or_create(dir.path(), &meta()).unwrap();
    let expected: std::collections::BTreeSet<_> =
        [(a.clone(), 2), (b.clone(), 1), (b.clone(), 2)].into();
    assert_eq!(s.finished().unwrap(), expected);
    s.commit_result(&result(&a, 1, b"y")).unwrap();
    let order: Vec<_> = s
        .results()
        .unwrap()
        .into_iter()
        .map(|r| (r.case_id, r.repetition))
        .collect();
    assert_eq!(order, [(a.clone(), 1), (a, 2), (b.clone(), 1), (b, 2)]);
}

#[test]
fn a_newer_schema_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::create(dir.path(), &meta()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("raidlab.sqlite")).unwrap();
    conn.execute("UPDATE schema_version SET version = 999", [])
        .unwrap();
    drop(conn);
    let e = Store::open(dir.path()).err().unwrap();
    assert!(matches!(e, StoreError::Newer { found: 999, .. }), "{e}");
    assert!(e.to_string().contains("newer raidlab"), "{e}");
    assert!(e.to_string().contains("upgrade"), "{e}");
}

#[test]
fn imported_cases_have_no_array() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let mut s = Store::create(dir.path(), &meta()).unwrap();
    let w = p.cases()[0].workload.clone();
    let imported = CaseId::from_key("a/b.json");
    s.add_cases(&p.cases()[..1]).unwrap();
    let case = (imported.clone(), "a/b".to_string(), w.clone());
    s.add_imported_cases(std::slice::from_ref(&case)).unwrap();
    s.add_imported_cases(&[case]).unwrap();
    let rows = s.all_case_rows().unwrap();
    assert_eq!(rows.len(), 2, "idempotent by id");
    assert_eq!(rows[0].case.as_ref(), Some(&p.cases()[0]));
    assert_eq!(rows[1].id, imported);
    assert!(rows[1].case.is_none());
    assert_eq!(rows[1].workload, w);
    assert_eq!(rows[1].label, "a/b");
    assert_eq!(
        s.cases().unwrap(),
        p.cases()[..1].to_vec(),
        "only full cases"
    );
    let mut r = result(&imported, 1, b"{}");
    r.target = "import".into();
    r.source = Some("a/b.json".into());
    s.commit_result(&r).unwrap();
    assert_eq!(s.results().unwrap()[0].source.as_deref(), Some("a/b.json"));
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
            result(b, 2, b"twice in one batch"),
            result(&CaseId::from_key("unregistered"), 1, b"?"),
        ])
        .unwrap();
    assert!(matches!(out[0], Err(StoreError::ResultExists { .. })));
    assert!(out[1].is_ok() && out[2].is_ok());
    assert!(matches!(out[3], Err(StoreError::ResultExists { .. })));
    assert!(matches!(out[4], Err(StoreError::UnknownCase(_))));
    let results = s.results().unwrap();
    assert_eq!(results.len(), 3);
    let bytes: Vec<_> = results
        .iter()
        .map(|r| std::fs::read(s.raw_path(r)).unwrap())
        .collect();
    assert_eq!(
        bytes,
        [&b"first"[..], b"new", b"new2"],
        "a stored result is never rewritten"
    );
}

#[test]
fn a_leftover_of_an_interrupted_commit_is_kept_aside_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let id = &p.cases()[0].id;
    let mut s = Store::create(dir.path(), &meta()).unwrap();
    s.add_cases(p.cases()).unwrap();
    // The raw file was written, then the process died before the row went in.
    let leftover = dir.path().join(format!("raw/{id}-r1-sim.json"));
    std::fs::write(&leftover, b"torn").unwrap();
    assert!(s.finished().unwrap().is_empty(), "no row: resume reruns it");
    let r = s.commit_result(&result(id, 1, b"whole"));
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(std::fs::read(&leftover).unwrap(), b"whole");
    assert_eq!(
        std::fs::read(dir.path().join(format!("raw/orphaned/{id}-r1-sim.json.1"))).unwrap(),
        b"torn"
    );
}

#[test]
fn names_that_could_escape_raw_or_collide_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let id = &p.cases()[0].id;
    let mut s = Store::create(dir.path(), &meta()).unwrap();
    s.add_cases(p.cases()).unwrap();
    let mut r = result(id, 1, b"x");
    r.logs = vec![("../../escape".into(), b"x".to_vec())];
    assert!(matches!(
        s.commit_result(&r),
        Err(StoreError::BadName { .. })
    ));
    let mut r = result(id, 1, b"x");
    r.target = "host-2".into();
    assert!(matches!(
        s.commit_result(&r),
        Err(StoreError::BadName { .. })
    ));
    let mut r = result(id, 1, b"x");
    r.logs.push(r.logs[0].clone());
    assert!(matches!(
        s.commit_result(&r),
        Err(StoreError::BadName { .. })
    ));
    assert!(s.results().unwrap().is_empty());
    assert!(!dir.path().join("escape").exists());
}

#[test]
fn an_interrupted_creation_is_reported_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("raidlab.sqlite"), b"").unwrap();
    let e = Store::open(dir.path()).err().unwrap();
    assert!(matches!(e, StoreError::Damaged { .. }), "{e}");
    assert!(e.to_string().contains("interrupted"), "{e}");
    assert!(matches!(
        Store::create(dir.path(), &meta()),
        Err(StoreError::Exists(_))
    ));
}

/// One writer per directory: a second `lock` is refused while the first store lives, and
/// granted once it is gone (the lock dies with its holder).
#[test]
fn one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Store::create(dir.path(), &meta()).unwrap();
    first.lock().unwrap();
    first.lock().unwrap(); // already ours
    let mut second = Store::open(dir.path()).unwrap();
    let e = second.lock().unwrap_err();
    assert!(matches!(e, StoreError::Busy(_)), "{e}");
    assert!(e.to_string().contains("being written by another raidlab"));
    assert_eq!(second.results().unwrap().len(), 0, "readers need no lock");
    drop(first);
    second.lock().unwrap();
}

/// Issue 15, item 13: a damaged database is named as damaged, with the way to recover the
/// figures from the raw files — not blamed on permissions.
#[test]
fn a_damaged_database_says_so_and_how_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    drop(Store::create(&out, &meta()).unwrap());
    std::fs::write(
        out.join("raidlab.sqlite"),
        b"not a database at all, but long enough",
    )
    .unwrap();
    let e = Store::open(&out).and_then(|s| s.meta()).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("is damaged"), "{text}");
    assert!(text.contains("raidlab import"), "{text}");
    assert!(!text.contains("writable"), "{text}");
}
