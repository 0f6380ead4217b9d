//! The plan parser's tests: expansion, case ids, and every error's field, line and fix.
use super::*;

const SEED_2013: &str = include_str!("fixtures/seed-2013.toml");

fn parse(s: &str) -> Result<Plan, PlanError> {
    Plan::parse(s, Path::new("p.toml"))
}

/// Issue 15, item 13: a number where a word belongs, relative or non-text device
/// paths, and control characters in the name are refused, each at its line.
#[test]
fn numbers_for_words_relative_devices_and_control_characters_are_refused() {
    let cases = [
        (
            SEED_2013.replace(
                "level = [\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
                "level = 5",
            ),
            "arrays.level",
            "must be text in quotes",
        ),
        (
            SEED_2013.replace("rw = [\"randread\", \"randwrite\"]", "rw = [1, 2]"),
            "workloads.rw",
            "must be text in quotes",
        ),
        (
            SEED_2013.replace("count = 6", "devices = [1, 2, 3]"),
            "disks.devices",
            "must be text in quotes",
        ),
        (
            SEED_2013.replace("count = 6", "devices = [\"sdb\", \"sdc\"]"),
            "disks.devices",
            "absolute",
        ),
        (
            SEED_2013.replace("name = \"seed-2013\"", "name = \"a\\u0000b\""),
            "name",
            "control characters",
        ),
        (
            SEED_2013.replace("name = \"seed-2013\"", "name = \"..\""),
            "name",
            "not `.` or `..`",
        ),
    ];
    for (text, field, why) in cases {
        let e = parse(&text).unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(why), "{e}");
        assert!(e.line.is_some(), "{e}");
    }
    // Numbers where numbers belong still pass, as numbers or text.
    assert!(parse(&SEED_2013.replace("iodepth = [4]", "iodepth = [\"4\", 8]")).is_ok());
}

/// Issue 15, item 13, the rest: a number for a word says which word to write (or the
/// words the field takes), floats and dates are no words either, and control characters
/// are refused in the description (but new lines) and in device paths.
#[test]
fn numbers_for_words_name_the_word_and_control_characters_are_refused_everywhere() {
    let levels = "level = [\"raid0\", \"raid10\", \"raid5\", \"raid6\"]";
    let refused = |text: String, field: &str, message: &str| {
        let e = parse(&text).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            (field, message),
            "{e}"
        );
        assert!(e.line.is_some(), "{e}");
    };
    let words = "must be text in quotes: write level = \"raid5\"";
    refused(
        SEED_2013.replace(levels, "level = 5"),
        "arrays.level",
        words,
    );
    let fix = "must be text in quotes: write \"raid10\"";
    refused(
        SEED_2013.replace(levels, "level = [\"raid5\", 10]"),
        "arrays.level",
        fix,
    );
    let fix = "must be text in quotes: use `md` or `btrfs`";
    refused(
        SEED_2013.replace("engine = \"md\"", "engine = 1"),
        "arrays.engine",
        fix,
    );
    for float in ["level = 5.0", "level = 1979-05-27"] {
        let e = parse(&SEED_2013.replace(levels, float)).unwrap_err();
        assert!(e.message.starts_with("must be text in quotes"), "{e}");
    }
    let described = |d: &str| SEED_2013.replace("[disks]", &format!("description = {d}\n[disks]"));
    let fix = "use text without control characters (new lines and tabs are fine): it is printed on terminals and in reports";
    refused(described("\"a\\u0000b\""), "description", fix);
    refused(described("\"a\\u001b[2Jb\""), "description", fix);
    assert!(parse(&described("\"\"\"two\n\tlines\"\"\"")).is_ok());
    let e = parse(&SEED_2013.replace(
        "count = 6",
        "devices = [\"/dev/sdb\", \"/dev/sd\\u0007c\", \"/dev/sdd\", \"/dev/sde\"]",
    ))
    .unwrap_err();
    assert_eq!(e.field, "disks.devices", "{e}");
    assert!(e.message.contains("no control characters"), "{e}");
}

/// A plan built in code is the plan its text would be, and is checked by the same rules.
#[test]
fn built_plans_equal_parsed_ones_and_keep_their_rules() {
    let mut b = Plan::builder("seed-2013");
    b.disks("count", 6u32)
        .disks("model", "hdd-7200-500g-2010")
        .array("level", "raid5")
        .array("chunk", "64k")
        .workload("rw", "randwrite")
        .workload("iodepth", 4u32)
        .workload("size", "10g");
    let built = b.build(Path::new("<code>")).unwrap();
    let parsed = parse(
        "name = \"seed-2013\"\n[disks]\ncount = 6\nmodel = \"hdd-7200-500g-2010\"\n[arrays]\nlevel = \"raid5\"\nchunk = \"64k\"\n[workloads]\nrw = \"randwrite\"\niodepth = 4\nsize = \"10g\"\n",
    )
    .unwrap();
    assert_eq!(built.cases(), parsed.cases());
    // Text goes in as text, whatever it holds (a plan's text would need escaping).
    let e = b
        .disks("model", "a\u{1b}b\"")
        .build(Path::new("<code>"))
        .unwrap_err();
    assert_eq!((e.field.as_str(), e.line), ("disks.model", None), "{e}");
    assert_eq!(e.value.as_deref(), Some("\"a\\u{1b}b\\\"\""));
    let e = b
        .disks("model", "hdd-7200")
        .array("level", 5u32)
        .build(Path::new("<code>"))
        .unwrap_err();
    assert_eq!(e.field, "arrays.level");
    assert!(e.message.starts_with("must be text in quotes"), "{e}");
}

/// Each field is defined once (`Key`); docs/plan.md has a row for every one, in its
/// section, with the range the parser holds it to.
#[test]
fn docs_list_every_field_with_its_range() {
    let docs = include_str!("../../../../docs/plan.md");
    let section = |heading: &str| {
        let start = docs.find(&format!("\n## {heading}")).expect(heading);
        let rest = &docs[start + 1..];
        &rest[..rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3)]
    };
    let tables: [(&str, &[Key]); 5] = [
        ("Top level", &sections::TOP_KEYS[..2]),
        ("`[disks]`", &sections::DISK_KEYS),
        ("`[arrays]`", &arrays::ARRAY_KEYS),
        ("`[workloads]`", &workloads::WORKLOAD_KEYS),
        ("`[run]`", &sections::RUN_KEYS),
    ];
    for (heading, keys) in tables {
        let text = section(heading);
        for key in keys {
            let row = text
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", key.name)))
                .unwrap_or_else(|| panic!("docs/plan.md {heading} has no row for {}", key.name));
            if let Some((min, max)) = key.range {
                assert!(row.contains(&format!("{min}–{max}")), "{row}");
            }
        }
    }
    for table in &sections::TOP_KEYS[2..] {
        assert!(
            docs.contains(&format!("## `[{}]`", table.name)),
            "{}",
            table.name
        );
    }
}

#[test]
fn issue_shape_expands_to_eight_cases() {
    let p = parse(SEED_2013).unwrap();
    assert_eq!(p.cases().len(), 8);
    assert_eq!(p.expected_runtime(), Nanos::from_secs(480));
    let r10 = p
        .cases()
        .iter()
        .find(|c| c.array.level == Level::Raid10)
        .unwrap();
    assert_eq!(r10.array.layout, Some(Layout::Near(2)));
}

#[test]
fn raid6_on_three_disks_names_line_and_fix() {
    let e = parse(&SEED_2013.replace("count = 6", "count = 3")).unwrap_err();
    assert_eq!(e.line, Some(8), "{e}");
    assert_eq!(e.field, "arrays.level");
    assert!(
        e.to_string().contains("raid6 needs at least 4 disks"),
        "{e}"
    );
}

#[test]
fn far_layout_on_raid5_is_refused() {
    let e = parse(&SEED_2013.replace("layout = []", "layout = [\"f2\"]")).unwrap_err();
    assert_eq!(e.field, "arrays.layout");
    assert_eq!(e.line, Some(9));
    assert!(e.message.contains("does not apply to raid0"), "{e}");
}

#[test]
fn btrfs_with_chunk_is_refused() {
    let e = parse(
        &SEED_2013
            .replace("engine = \"md\"", "engine = \"btrfs\"")
            .replace("filesystem = \"xfs\"", ""),
    )
    .unwrap_err();
    assert_eq!(e.field, "arrays.chunk");
    assert!(e.message.contains("remove `chunk`"), "{e}");
}

#[test]
fn unknown_field_is_named() {
    let e = parse(&SEED_2013.replace("iodepth = [4]", "io_depth = [4]")).unwrap_err();
    assert_eq!(e.field, "workloads.io_depth");
    assert!(e.message.contains("iodepth"), "{e}");
}

#[test]
fn bad_unit_is_named_with_its_value() {
    let e = parse(&SEED_2013.replace("\"10g\"", "\"10 gigs\"")).unwrap_err();
    assert_eq!(e.field, "workloads.size");
    assert_eq!(e.value.as_deref(), Some("\"10 gigs\""));
    assert_eq!(e.line, Some(18));
}

#[test]
fn case_ids_are_stable_and_distinct() {
    let a = parse(SEED_2013).unwrap();
    let b = parse(&SEED_2013.replace("name = \"seed-2013\"", "name = \"other\"")).unwrap();
    let ids_a: Vec<_> = a.cases().iter().map(|c| c.id.clone()).collect();
    let ids_b: Vec<_> = b.cases().iter().map(|c| c.id.clone()).collect();
    assert_eq!(
        ids_a, ids_b,
        "the plan name is not part of a case's configuration"
    );
    let set: BTreeSet<_> = ids_a.iter().collect();
    assert_eq!(set.len(), ids_a.len());
}

fn with_params(params: &str) -> String {
    SEED_2013.replace("[arrays]", &format!("[disks.params]\n{params}\n[arrays]"))
}

#[test]
fn host_queue_is_part_of_the_case_only_when_set() {
    let plain = parse(SEED_2013).unwrap();
    assert_eq!(plain.disks.host_queue, None);
    let queued = parse(&SEED_2013.replace("[arrays]", "host_queue = 4\n[arrays]")).unwrap();
    assert_eq!(queued.cases()[0].disks.host_queue, Some(4));
    for (a, b) in plain.cases().iter().zip(queued.cases()) {
        assert_ne!(a.id, b.id, "another adapter is another experiment");
    }
    let e = parse(&SEED_2013.replace("[arrays]", "host_queue = 0\n[arrays]")).unwrap_err();
    assert_eq!(e.field, "disks.host_queue");
    assert!(e.message.contains("drop host_queue"), "{}", e.message);
}

#[test]
fn disk_params_override_the_model_and_change_case_ids() {
    let plain = parse(SEED_2013).unwrap();
    let tuned = parse(&with_params("queue_depth = 1\navg_seek = \"9ms\"")).unwrap();
    let d = &tuned.cases()[0].disks;
    assert_eq!(d.params.get("queue_depth").map(String::as_str), Some("1"));
    assert_eq!(d.params.get("avg_seek").map(String::as_str), Some("9ms"));
    let model = d.resolved_model().unwrap().unwrap();
    let crate::disk::DiskKind::Hdd(h) = model.kind else {
        panic!("an hdd preset")
    };
    assert_eq!((h.queue_depth, h.avg_seek), (1, Nanos::from_millis(9)));
    for (a, b) in plain.cases().iter().zip(tuned.cases()) {
        assert_ne!(a.id, b.id, "another disk is another experiment");
    }
}

#[test]
fn bad_disk_params_name_field_line_and_value() {
    let e = parse(&with_params("seek = \"9ms\"")).unwrap_err();
    assert_eq!(e.field, "disks.params.seek");
    assert_eq!(e.line, Some(7));
    assert!(e.message.contains("avg_seek"), "{}", e.message);
    let e = parse(&with_params("avg_seek = \"soon\"")).unwrap_err();
    assert_eq!(e.field, "disks.params.avg_seek");
    assert_eq!(e.value.as_deref(), Some("\"soon\""));
    assert!(e.message.contains("8500us"), "{}", e.message);
    let e = parse(&with_params("avg_seek = \"a: b\"")).unwrap_err();
    assert_eq!(e.value.as_deref(), Some("\"a: b\""));
    assert!(
        e.message.starts_with("expects a value like"),
        "{}",
        e.message
    );
    let e = parse(&with_params("queue_depth = true")).unwrap_err();
    assert_eq!(e.field, "disks.params.queue_depth");
    let e = parse(&with_params("queue_depth = 1").replace("model = \"hdd-7200-500g-2010\"\n", ""))
        .unwrap_err();
    assert_eq!(e.field, "disks.params");
    assert!(e.message.contains("disks.model"), "{}", e.message);
}

#[test]
fn array_of_tables_union() {
    let p = parse(
        r#"
name = "s2019"
[disks]
count = 4
model = "hdd-7200-16t-2019"
span = "30g"
[[arrays]]
level = "raid5"
[[arrays]]
level = "raid10"
layout = ["n2", "f2"]
[[workloads]]
rw = ["read", "write"]
bs = "1m"
iodepth = 32
size = "20g"
[[workloads]]
rw = ["randread", "randwrite"]
iodepth = 32
numjobs = 4
size = "20g"
"#,
    )
    .unwrap();
    assert_eq!(p.cases().len(), 12);
}

#[test]
fn bitmaps_only_on_md_arrays_with_redundancy_or_chunks() {
    let md = parse(&SEED_2013.replace("write_cache = \"off\"", "bitmap = \"internal\"")).unwrap();
    assert!(md
        .cases()
        .iter()
        .all(|c| c.array.bitmap == Bitmap::Internal));
    let btrfs = parse(
        &SEED_2013
            .replace("engine = \"md\"", "engine = \"btrfs\"")
            .replace(
                "level = [\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
                "level = [\"raid1\"]",
            )
            .replace(
                "layout = []\nchunk = [\"512k\"]\nfilesystem = \"xfs\"",
                "bitmap = \"internal\"",
            ),
    )
    .unwrap();
    assert!(
        btrfs.cases().iter().all(|c| c.array.bitmap == Bitmap::None),
        "btrfs has no md bitmap"
    );
}

#[test]
fn real_devices_of_unknown_size_defer_the_size_check() {
    let p = parse(
        "name = \"h\"\n[disks]\ndevices = [\"/dev/a\", \"/dev/b\", \"/dev/c\"]\n[arrays]\nlevel = \"raid5\"\n[workloads]\nrw = \"randread\"\nsize = \"100t\"\n",
    )
    .unwrap();
    assert_eq!(p.cases().len(), 1);
    assert_eq!(p.disks.count, 3);
}

#[test]
fn too_big_a_file_is_refused() {
    let e = parse(&SEED_2013.replace("\"10g\"", "\"10t\"")).unwrap_err();
    assert_eq!(e.field, "workloads.size");
    assert!(e.message.contains("holds only"), "{e}");
}

proptest::proptest! {
    #[test]
    fn any_text_gives_a_plan_or_an_error(s in "[\\[\\]a-z0-9=\" \n.,_-]{0,200}") {
        let _ = parse(&s);
    }

    #[test]
    fn expansion_is_the_cross_product(nl in 1usize..4, nc in 1usize..4, nr in 1usize..5, nq in 1usize..4) {
        let levels = ["raid0", "raid5", "raid6"][..nl].iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(",");
        let chunks = ["64k", "128k", "256k"][..nc].iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
        let rws = ["read", "write", "randread", "randwrite"][..nr].iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
        let qds = [1, 4, 32][..nq].iter().map(|q| q.to_string()).collect::<Vec<_>>().join(",");
        let text = format!("name = \"x\"\n[disks]\ncount = 6\nmodel = \"hdd-7200\"\n[arrays]\nlevel = [{levels}]\nchunk = [{chunks}]\n[workloads]\nrw = [{rws}]\niodepth = [{qds}]\n");
        let p = parse(&text).unwrap();
        proptest::prop_assert_eq!(p.cases().len(), nl * nc * nr * nq);
    }
}

/// `[disks] model = "FILE.toml"`: the file beside the plan is read, its model goes with
/// each case (another content, another case id), and an error in it names its own line.
#[test]
fn a_model_file_beside_the_plan_stands_in_for_a_preset() {
    let dir = tempfile::tempdir().unwrap();
    let mine = DiskModel {
        name: "mine".into(),
        ..DiskModel::preset("hdd-7200").unwrap()
    };
    std::fs::write(dir.path().join("mine.toml"), mine.to_toml("test")).unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(&plan, SEED_2013.replace("hdd-7200-500g-2010", "mine.toml")).unwrap();
    let p = Plan::load(&plan).unwrap();
    let case = &p.cases()[0];
    assert_eq!(case.disks.model.as_deref(), Some("mine.toml"));
    assert_eq!(case.disks.resolved_model().unwrap().unwrap().name, "mine");
    let faster = mine.to_toml("test").replace("rpm = 7200", "rpm = 10000");
    std::fs::write(dir.path().join("mine.toml"), &faster).unwrap();
    assert_ne!(Plan::load(&plan).unwrap().cases()[0].id, case.id);
    std::fs::write(
        dir.path().join("mine.toml"),
        faster.replace("rpm = 10000", "rpm = \"x\""),
    )
    .unwrap();
    let e = Plan::load(&plan).unwrap_err();
    assert_eq!(e.field, "disks.model");
    let line = faster.lines().position(|l| l == "rpm = 10000").unwrap() + 1;
    assert!(
        e.message.contains(&format!("mine.toml:{line}: rpm = x")),
        "{e}"
    );
}

/// `[arrays] state`: a dimension of the matrix, healthy by default (and then absent from
/// the id); degraded needs redundancy and no resync; only the sim target takes it.
#[test]
fn array_state_is_a_dimension_with_its_rules() {
    let redundant = SEED_2013.replace(
        "[\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
        "[\"raid10\", \"raid5\", \"raid6\"]",
    );
    let both = redundant.replace(
        "layout = []",
        "layout = []\nstate = [\"healthy\", \"degraded\"]",
    );
    let p = parse(&both).unwrap();
    let plain = parse(&redundant).unwrap();
    assert_eq!(p.cases().len(), 2 * plain.cases().len());
    let ids: Vec<&crate::CaseId> = plain.cases().iter().map(|c| &c.id).collect();
    let healthy: Vec<&Case> = p
        .cases()
        .iter()
        .filter(|c| c.array.state.is_healthy())
        .collect();
    assert!(
        healthy.iter().all(|c| ids.contains(&&c.id)),
        "healthy cases keep their ids"
    );
    let e = parse(&SEED_2013.replace(
        "[\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
        "\"raid0\"\nstate = \"degraded\"",
    ))
    .unwrap_err();
    assert_eq!(e.field, "arrays.state");
    assert!(e.message.contains("raid0 has no redundancy"), "{e}");
    assert!(e.line.is_some());
    let e = parse(&redundant.replace(
        "layout = []",
        "layout = []\nstate = \"degraded\"\nresync = \"during\"",
    ))
    .unwrap_err();
    assert!(e.message.contains("no initial resync running"), "{e}");
    let degraded =
        parse(&redundant.replace("layout = []", "layout = []\nstate = \"degraded\"")).unwrap();
    for kind in [TargetKind::Sim, TargetKind::Vm, TargetKind::Host] {
        assert_eq!(
            degraded.check_target(kind, crate::target::Check::Preview),
            Ok(()),
            "{kind}"
        );
    }
    let rebuilding =
        parse(&redundant.replace("layout = []", "layout = []\nstate = \"rebuilding\"")).unwrap();
    assert_eq!(
        rebuilding.check_target(TargetKind::Vm, crate::target::Check::Preview),
        Ok(())
    );
    let btrfs = parse(
        "name = \"b\"\n[disks]\ncount = 4\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"degraded\"\n[workloads]\nrw = \"randread\"\n",
    )
    .unwrap();
    // btrfs loses members on the host target too (a degraded mount, `btrfs replace`).
    assert_eq!(
        btrfs.check_target(TargetKind::Host, crate::target::Check::Preview),
        Ok(())
    );
    let replace = parse(
        "name = \"b\"\n[disks]\ncount = 4\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"rebuilding\"\n[workloads]\nrw = \"randread\"\n",
    )
    .unwrap();
    assert_eq!(
        replace.cases()[0].array.rebuild,
        None,
        "md's knobs are md's"
    );
    assert_eq!(
        replace.check_target(TargetKind::Host, crate::target::Check::Preview),
        Ok(())
    );
    // The simulator models btrfs replace too (`raidlab_sim::btrfs`).
    let simulated = parse(
        "name = \"b\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"rebuilding\"\n[workloads]\nrw = \"randread\"\n",
    )
    .unwrap();
    assert_eq!(
        simulated.check_target(TargetKind::Sim, crate::target::Check::Preview),
        Ok(())
    );
    let e = parse(
        "name = \"b\"\n[disks]\ncount = 4\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"rebuilding\"\nsync_speed_min = 5000\n[workloads]\nrw = \"randread\"\n",
    )
    .unwrap_err();
    assert!(e.message.contains("btrfs replace has none"), "{e}");
}

/// `failed`, `kernel` and md's recovery knobs: in the case (and its id) where they apply,
/// refused with the reason where they do not.
#[test]
fn rebuild_fields_and_their_rules() {
    let raid6 = SEED_2013.replace("[\"raid0\", \"raid10\", \"raid5\", \"raid6\"]", "\"raid6\"");
    let with =
        |fields: &str| parse(&raid6.replace("layout = []", &format!("layout = []\n{fields}")));
    let p = with("state = [\"degraded\", \"rebuilding\"]\nfailed = 2\nkernel = \"6.15\"\nsync_speed_min = 50000").unwrap();
    let rebuilding = p
        .cases()
        .iter()
        .find(|c| c.array.state == ArrayState::Rebuilding)
        .unwrap();
    assert_eq!(rebuilding.array.failed_members(), 2);
    let knobs = rebuilding.array.rebuild.unwrap();
    assert_eq!(
        (
            knobs.kernel,
            knobs.sync_speed_min,
            knobs.sync_speed_max,
            knobs.sync_io_depth
        ),
        (Governor::Drain, 50_000, 200_000, 32)
    );
    assert!(
        rebuilding
            .array
            .label()
            .ends_with("rebuilding ×2 linux-6.15"),
        "{}",
        rebuilding.array.label()
    );
    let degraded = p
        .cases()
        .iter()
        .find(|c| c.array.state == ArrayState::Degraded)
        .unwrap();
    assert_eq!(
        (degraded.array.failed_members(), degraded.array.rebuild),
        (2, None)
    );
    // One failure is the default, and does not change the id of a degraded case.
    let one = with("state = \"degraded\"").unwrap();
    let one_explicit = with("state = \"degraded\"\nfailed = 1").unwrap();
    assert_eq!(one.cases()[0].id, one_explicit.cases()[0].id);
    // A re-added member: md's knob, in the label; a fresh one (the default) keeps the id
    // a rebuilding case had before the field existed.
    let readd = with("state = \"rebuilding\"\nbitmap = \"internal\"\nrejoin = \"re-add\"").unwrap();
    let c = &readd.cases()[0];
    assert_eq!(c.array.rebuild.unwrap().rejoin, crate::Rejoin::ReAdd);
    assert!(
        c.array.label().ends_with("rebuilding re-add"),
        "{}",
        c.array.label()
    );
    let fresh = with("state = \"rebuilding\"\nbitmap = \"internal\"").unwrap();
    let fresh_explicit =
        with("state = \"rebuilding\"\nbitmap = \"internal\"\nrejoin = \"fresh\"").unwrap();
    assert_eq!(fresh.cases()[0].id, fresh_explicit.cases()[0].id);
    assert_ne!(fresh.cases()[0].id, c.id);
    assert!(!serde_json::to_string(&fresh.cases()[0].array)
        .unwrap()
        .contains("rejoin"));
    assert_ne!(
        one.cases()[0].id,
        with("state = \"degraded\"\nfailed = 2").unwrap().cases()[0].id
    );
    for (fields, field, says) in [
        (
            "state = \"degraded\"\nfailed = 3",
            "arrays.failed",
            "raid6 survives at most 2 failed members",
        ),
        ("failed = 1", "arrays.failed", "add state = [\"degraded\"]"),
        (
            "state = \"degraded\"\nkernel = \"6.1\"",
            "arrays.kernel",
            "for rebuilding arrays",
        ),
        (
            "state = \"rebuilding\"\nkernel = \"5\"",
            "arrays.kernel",
            "use 6.16 (Linux 6.16 and later",
        ),
        (
            "state = \"rebuilding\"\nkernel = 6.16",
            "arrays.kernel",
            "write kernel = \"6.16\"",
        ),
        (
            "state = \"rebuilding\"\nsync_speed_min = 300000",
            "arrays.sync_speed_min",
            "above sync_speed_max (200000)",
        ),
        (
            "state = \"rebuilding\"\nsync_io_depth = 0",
            "arrays.sync_io_depth",
            "use 1 to 4096",
        ),
        (
            "state = \"rebuilding\"\nrejoin = \"re-add\"",
            "arrays.rejoin",
            "only with a write-intent bitmap",
        ),
        (
            "state = \"degraded\"\nbitmap = \"internal\"\nrejoin = \"re-add\"",
            "arrays.rejoin",
            "for rebuilding arrays",
        ),
        (
            "state = \"rebuilding\"\nrejoin = \"same\"",
            "arrays.rejoin",
            "use fresh (a new disk",
        ),
    ] {
        let e = with(fields).unwrap_err();
        assert_eq!(e.field, field, "{fields}: {e}");
        assert!(e.message.contains(says), "{fields}: {e}");
    }
    let btrfs = parse(
        &raid6
            .replace(
                "engine = \"md\"",
                "engine = \"btrfs\"\nstate = \"rebuilding\"\nkernel = \"6.16\"",
            )
            .replace("layout = []\n", "")
            .replace("chunk = [\"512k\"]\n", "")
            .replace("filesystem = \"xfs\"", "filesystem = \"btrfs\""),
    )
    .unwrap_err();
    assert_eq!(btrfs.field, "arrays.kernel", "{btrfs}");
    assert!(btrfs.message.contains("btrfs replace has none"), "{btrfs}");
}

/// Issue 19, item 5: `[workloads.fio]` passes fio options through (in the case's identity,
/// so a plan with them is a new case) and refuses, at its line, what would break raidlab's
/// contract with fio; the buffer fields are fields.
#[test]
fn fio_options_pass_through_and_the_contract_holds() {
    let plain = parse(SEED_2013).unwrap();
    let with = |extra: &str| SEED_2013.replace("[workloads]\n", &format!("[workloads]\n{extra}"));
    let p = parse(&(with("refill_buffers = false\n") + "[workloads.fio]\nfsync = 1\nverify = \"crc32c\"\nrate_iops = 500\nzero_buffers = true\n")).unwrap();
    let w = &p.cases()[0].workload;
    let got: Vec<(&str, &str)> = w
        .fio
        .extra
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("fsync", "1"),
            ("rate_iops", "500"),
            ("verify", "crc32c"),
            ("zero_buffers", "1")
        ]
    );
    assert!(!w.fio.refill_buffers);
    assert_ne!(
        p.cases()[0].id,
        plain.cases()[0].id,
        "fio options are part of the case"
    );
    assert_eq!(
        parse(&with("refill_buffers = true\n")).unwrap().cases()[0].id,
        plain.cases()[0].id,
        "the defaults keep ids"
    );
    let cases = [
        (
            "[workloads.fio]\nfilename = \"/dev/sda\"\n",
            "workloads.fio.filename",
            "raidlab names the array",
        ),
        (
            "[workloads.fio]\nruntime = 30\n",
            "workloads.fio.runtime",
            "use workloads.runtime",
        ),
        (
            "[workloads.fio]\noutput-format = \"normal\"\n",
            "workloads.fio.output-format",
            "reads fio's JSON",
        ),
        (
            "[workloads.fio]\n\"a=b\" = 1\n",
            "workloads.fio.a=b",
            "letters, digits and `_`",
        ),
        (
            "[workloads.fio]\nverify = [\"md5\"]\n",
            "workloads.fio.verify",
            "one value",
        ),
        (
            "[workloads.fio]\nverify = \"md5\\nfilename=/dev/sda\"\n",
            "workloads.fio.verify",
            "no line breaks",
        ),
    ];
    for (extra, field, why) in cases {
        let e = parse(&(SEED_2013.to_string() + extra)).unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(why), "{e}");
        assert!(e.line.is_some(), "{e}");
    }
}

/// Issue 19, item 6: every table's first mistake is reported at once, in the file's
/// order; a near-miss word is named (`raid-6`: did you mean `raid6`?), not accepted.
#[test]
fn every_tables_mistake_at_once_and_near_misses_named() {
    let text = "name = \"x\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"raid-6\"\n[[workloads]]\nrw = \"randred\"\n[[workloads]]\nrw = \"read\"\nbs = \"1000\"\n[run]\nrepeat = 0\n";
    let e = parse(text).unwrap_err();
    let all: Vec<(&str, Option<u32>)> = std::iter::once(&e)
        .chain(e.also.iter())
        .map(|e| (e.field.as_str(), e.line))
        .collect();
    assert_eq!(
        all,
        [
            ("arrays.level", Some(6)),
            ("workloads[0].rw", Some(8)),
            ("workloads[1].bs", Some(11)),
            ("run.repeat", Some(13)),
        ]
    );
    assert!(e.message.contains("did you mean `raid6`?"), "{e}");
    assert_eq!(e.to_string().lines().count(), 4, "one line each: {e}");
    assert!("RAID6".parse::<Level>().is_ok(), "case does not matter");
    assert!("rand_read"
        .parse::<Rw>()
        .unwrap_err()
        .contains("did you mean `randread`?"));
}

/// Issue 19, item 5: `[run] precondition` is part of every case; out of range is refused.
#[test]
fn preconditioning_is_part_of_the_case() {
    let plain = parse(SEED_2013).unwrap();
    let text = SEED_2013.replace("[run]\n", "[run]\nprecondition = 2\n");
    assert_ne!(text, SEED_2013, "the fixture has a [run] table");
    let p = parse(&text).unwrap();
    assert_eq!(p.run.precondition, 2);
    assert!(p.cases().iter().all(|c| c.workload.fio.precondition == 2));
    assert_ne!(p.cases()[0].id, plain.cases()[0].id);
    let e = parse(&SEED_2013.replace("[run]\n", "[run]\nprecondition = 99\n")).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.value.as_deref()),
        ("run.precondition", Some("99"))
    );
}

/// `rate_iops` as fio reads it, for the workloads the simulator paces: one value caps
/// every direction, `R,W` reads and writes apart, an empty value none; a mix is not paced.
#[test]
fn rate_iops_is_read_per_direction_as_fio_does() {
    let rate = |rw: &str, value: &str| {
        let text = format!(
            "name = \"r\"\n[disks]\ncount = 1\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"single\"\n[workloads]\nrw = \"{rw}\"\n[workloads.fio]\nrate_iops = \"{value}\"\n"
        );
        parse(&text).unwrap().cases()[0].workload.rate_iops()
    };
    assert_eq!(rate("randread", "40"), Some(40));
    assert_eq!(rate("randwrite", "40"), Some(40));
    assert_eq!(rate("randread", "40,20"), Some(40));
    assert_eq!(rate("write", "40,20"), Some(20));
    assert_eq!(rate("randwrite", "40,"), None, "writes left uncapped");
    assert_eq!(rate("randrw", "40"), None, "a mix is not paced");
    assert_eq!(rate("randread", "0"), None);
    assert_eq!(rate("randread", "2k"), Some(2048), "k is 1024 to fio");
    assert_eq!(rate("randwrite", ",25"), Some(25));
    // What fio would refuse, or read otherwise (`1.5k` is 1 I/O a second to fio), is
    // refused at its line, on every target.
    for bad in ["fast", "1.5k", "-5", "1,2,3,4", "k"] {
        let text = format!(
            "name = \"r\"\n[disks]\ncount = 1\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"single\"\n[workloads]\nrw = \"randread\"\n[workloads.fio]\nrate_iops = \"{bad}\"\n"
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.field, "workloads.fio.rate_iops", "{bad}: {e}");
        assert_eq!(e.line, Some(10), "{bad}: {e}");
        assert!(e.message.contains("I/Os per second"), "{bad}: {e}");
    }
}
