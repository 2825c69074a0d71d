//! Simulated devices through `Db`: `DeviceSpec::SimulatedSsd` keeps its flash in the file
//! `nand` of the index directory, survives close/open, and reports its flash counters
//! (erases, copies, wear) in `Db::stats()`; `DeviceSpec::RawNand` opens the same file as
//! the raw medium.

use flashix::sim::{FtlKind, NandConfig, SimSsdConfig};
use flashix::{Db, DeviceSpec, EngineKind, Error, Options};

fn small_ssd(ftl: FtlKind) -> SimSsdConfig {
    SimSsdConfig {
        nand: NandConfig {
            pages_per_block: 16,
            blocks: 24,
            ..NandConfig::default()
        },
        ftl,
        ..SimSsdConfig::default()
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sim-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir")
}

#[test]
fn a_btree_on_each_simulated_ssd_persists_and_reports_flash_counters() {
    for ftl in FtlKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("idx");
        let opts = Options::new(EngineKind::BTree)
            .page_size(4096)
            .buffer_pool_bytes(8 * 4096)
            .device(DeviceSpec::SimulatedSsd(small_ssd(ftl)));
        let db = Db::create(&path, opts).unwrap();
        let mut rng = flashix::testing::Rng::new(3);
        let mut model = std::collections::BTreeMap::new();
        for i in 0..4_000u64 {
            let k = rng.below(3000);
            db.insert(k, i).unwrap();
            model.insert(k, i);
            if i % 500 == 0 {
                db.flush().unwrap();
            }
        }
        db.flush().unwrap();
        let st = db.stats().device;
        assert_eq!(st.backend, format!("simssd-{ftl}"));
        let f = &st.flash;
        assert_eq!(
            f["host_writes"],
            2 * st.writes,
            "{ftl}: 2 NAND pages per 4 KiB page"
        );
        assert!(f["flash_programs"] >= f["host_writes"], "{ftl}");
        assert!(f["erases"] > 0 && f["max_erase_count"] > 0, "{ftl}: {f:?}");
        if ftl == FtlKind::Page {
            // The tree rewrites a few hot pages: greedy victims are wholly stale.
            assert!(f["gc_victims"] > 0, "{ftl}: {f:?}");
        } else {
            assert!(f["merges"] > 0 && f["gc_page_copies"] > 0, "{ftl}: {f:?}");
        }
        db.close().unwrap();
        assert!(path.join("nand").is_file());
        let db = Db::open(&path).unwrap();
        db.check_integrity().unwrap();
        for (&k, &v) in &model {
            assert_eq!(db.get(k).unwrap(), Some(v), "{ftl} key {k}");
        }
        // Wear persists in the medium, operation counters start at open.
        let f = db.stats().device.flash;
        assert!(f["max_erase_count"] > 0);
        assert_eq!(f["flash_programs"], 0);
    }
}

#[test]
fn simulated_devices_refuse_bad_geometry() {
    let dir = tempdir();
    // 1 KiB pages on 2 KiB NAND pages.
    let opts = Options::new(EngineKind::BTree)
        .page_size(1024)
        .device(DeviceSpec::SimulatedSsd(small_ssd(FtlKind::Page)));
    match Db::create(dir.path().join("a"), opts) {
        Err(Error::InvalidOptions(m)) => assert!(m.contains("multiple of the NAND page"), "{m}"),
        other => panic!("expected InvalidOptions, got {:?}", other.err()),
    }
    let bad = NandConfig {
        pages_per_block: 0,
        ..NandConfig::default()
    };
    let opts = Options::new(EngineKind::BTree).device(DeviceSpec::RawNand(bad));
    match Db::create(dir.path().join("b"), opts) {
        Err(Error::InvalidOptions(m)) => assert!(m.contains("pages_per_block"), "{m}"),
        other => panic!("expected InvalidOptions, got {:?}", other.err()),
    }
}
