//! `Db::open_read_only` and `flashix::check`: an index opened read-only is recovered in
//! memory and nothing in its directory changes (every file byte-identical, no file added
//! or removed), even when it was not closed cleanly and even when the read-only `Db` is
//! written to; `check` finds every engine's index clean and names the page a flipped bit
//! is in.

use flashix::testing::{insert_and_delete, sim_ssd_config};
use flashix::{check, Db, DeviceSpec, EngineKind, Options};
use std::collections::BTreeMap;
use std::path::Path;

/// Every file of `dir`, by name, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn contents(db: &mut Db) -> BTreeMap<u64, u64> {
    db.range(..).unwrap().map(|r| r.unwrap()).collect()
}

/// Small options of `kind` on a buffered file (or, for IPL and d-IPL, a small raw NAND).
fn small(kind: EngineKind) -> Options {
    let o = Options::new(kind).buffer_pool_bytes(256 << 10);
    match kind {
        EngineKind::IplBTree | EngineKind::DiplBTree => o,
        _ => o
            .page_size(4096)
            .device(DeviceSpec::File { direct_io: false }),
    }
}

/// An index left as a crash would leave it (flushed, never closed: a WAL to replay), opened
/// read-only, read whole and written to: the directory is byte-identical afterwards, and a
/// normal open later sees none of the read-only writes.
#[test]
fn read_only_open_recovers_in_memory_and_changes_nothing() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for kind in [EngineKind::BTree, EngineKind::FdTree] {
        let dir = tmp.path().join(kind.to_string());
        let mut db = Db::create(&dir, small(kind)).unwrap();
        let mut model = insert_and_delete(&mut db, 3, 3000, 5000).unwrap();
        db.flush().unwrap();
        // More after the flush: durable or not, the WAL holds records to replay.
        db.insert(u64::MAX, 9).unwrap();
        db.flush().unwrap();
        model.insert(u64::MAX, 9);
        std::mem::forget(db); // a crash: no close, no checkpoint
        let wal_bytes: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("wal-"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert!(wal_bytes > 0, "{kind}: no WAL to replay");
        let before = snapshot(&dir);

        let mut ro = Db::open_read_only(&dir).unwrap();
        assert_eq!(contents(&mut ro), model, "{kind}");
        ro.check_integrity().unwrap();
        ro.insert(1, 1).unwrap();
        ro.delete_range(..1000).unwrap();
        ro.flush().unwrap();
        assert_eq!(ro.get(u64::MAX).unwrap(), Some(9));
        ro.close().unwrap();
        assert!(
            snapshot(&dir) == before,
            "{kind}: a read-only open changed the directory"
        );

        let report = check::check(&dir, &mut |_| {}).unwrap();
        assert!(report.is_clean(), "{kind}: {:?}", report.problems);
        assert_eq!(report.entries, Some(model.len() as u64));
        assert!(
            snapshot(&dir) == before,
            "{kind}: check changed the directory"
        );

        let mut db = Db::open(&dir).unwrap();
        assert_eq!(
            contents(&mut db),
            model,
            "{kind}: a read-only write reached the disk"
        );
        db.close().unwrap();
    }
}

/// Every engine's index, after inserts, deletes, a bulk insert and a range delete, checks
/// clean; the page sweep covers the engines with the page envelope, and bits flipped in two
/// pages it verified are reported with those pages (whether or not the open fails).
#[test]
fn check_is_clean_on_every_engine_and_finds_a_flipped_bit() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let kinds = [
        EngineKind::BTree,
        EngineKind::Lsm,
        EngineKind::FdTree,
        EngineKind::PioBTree,
        EngineKind::BulkIndex,
        EngineKind::Bftl,
        EngineKind::LaTree,
        EngineKind::Fbx,
        EngineKind::IplBTree,
        EngineKind::DiplBTree,
    ];
    for kind in kinds {
        let dir = tmp.path().join(kind.to_string());
        let mut db = Db::create(&dir, small(kind)).unwrap();
        let mut model = insert_and_delete(&mut db, 5, 2000, 4000).unwrap();
        let bulk: Vec<(u64, u64)> = (0..2000u64).map(|i| (10_000 + i * 3, i)).collect();
        db.bulk_insert(&bulk).unwrap();
        model.extend(bulk.iter().copied());
        db.delete_range(500..900).unwrap();
        model.retain(|k, _| !(500..900).contains(k));
        db.close().unwrap();

        let report = check::check(&dir, &mut |_| {}).unwrap();
        assert!(report.is_clean(), "{kind}: {:?}", report.problems);
        assert_eq!(report.entries, Some(model.len() as u64), "{kind}");
        let info = report.info.clone().unwrap();
        assert_eq!(info.engine, kind);
        let raw_nand = matches!(kind, EngineKind::IplBTree | EngineKind::DiplBTree);
        assert_eq!(report.page_sweep, !raw_nand, "{kind}");
        if raw_nand {
            continue;
        }
        assert!(report.pages_checked > 0, "{kind}: no page verified");

        // Flip a bit in the payload of the first and of the last allocated page that holds
        // data: the sweep names both.
        let data = dir.join(flashix::DATA_FILE);
        let mut bytes = std::fs::read(&data).unwrap();
        let ps = info.page_size;
        let written: Vec<usize> = info
            .allocated_extents()
            .iter()
            .flat_map(|e| e.start as usize..e.end() as usize)
            .filter(|&p| bytes[p * ps..(p + 1) * ps].iter().any(|&b| b != 0))
            .collect();
        let damaged = [written[0], written[written.len() - 1]];
        for p in damaged {
            bytes[p * ps + 100] ^= 0x10;
        }
        std::fs::write(&data, &bytes).unwrap();
        let report = check::check(&dir, &mut |_| {}).unwrap();
        assert!(!report.is_clean(), "{kind}: a flipped bit went unnoticed");
        for page in damaged {
            assert!(
                report
                    .problems
                    .iter()
                    .any(|p| p.file.as_deref() == Some("data") && p.page == Some(page as u64)),
                "{kind}: page {page} not named in {:?}",
                report.problems
            );
        }
    }
}

/// A simulated SSD's index is opened read-only through its flash file, and checks clean.
#[test]
fn check_reads_an_index_on_a_simulated_ssd() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("ssd");
    let cfg = sim_ssd_config(flashix::sim::FtlKind::Page, 4096, 2048);
    let opts = Options::new(EngineKind::BTree)
        .buffer_pool_bytes(256 << 10)
        .device(DeviceSpec::SimulatedSsd(cfg));
    let mut db = Db::create(&dir, opts).unwrap();
    let model = insert_and_delete(&mut db, 9, 2000, 3000).unwrap();
    db.close().unwrap();
    let before = snapshot(&dir);
    let report = check::check(&dir, &mut |_| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.pages_checked > 0);
    assert_eq!(report.entries, Some(model.len() as u64));
    assert!(snapshot(&dir) == before, "check changed the directory");
}
