//! Merges that overlap their I/O with their CPU (`Device::start_read` / `start_write`,
//! `kit::sorted::seq`) on a real file: the FD-tree and the LSM in a directory, so on a
//! `FileDevice` with `io_uring` and `O_DIRECT` where the machine has them (the conformance
//! harness wraps its devices in fault injection, which serves started requests at once).
//! Many small merges with reads ahead and writes behind, checked against a model, through
//! a clean close and reopen.

use flashix::testing::Rng;
use flashix::{Db, EngineKind, FdTreeOptions, LsmOptions, Options};
use std::collections::BTreeMap;

const PS: usize = 4096;

fn options(engine: EngineKind) -> Options {
    let o = Options::new(engine)
        .page_size(PS)
        .buffer_pool_bytes(64 * PS as u64);
    match engine {
        EngineKind::FdTree => o.fdtree(FdTreeOptions {
            k: Some(4),
            head_tree_bytes: 4 * PS as u64,
            deamortize: true,
            // Small requests: many reads ahead and writes behind per merge.
            io_unit_bytes: 4 * PS as u64,
        }),
        _ => o.lsm(LsmOptions {
            k: Some(4),
            c0_bytes: 4 * PS as u64,
            io_unit_bytes: 4 * PS as u64,
            ..LsmOptions::default()
        }),
    }
}

#[test]
fn fdtree_and_lsm_merge_with_started_requests_on_a_file() {
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for engine in [EngineKind::FdTree, EngineKind::Lsm] {
        let dir = tempfile::tempdir_in(base).unwrap();
        let path = dir.path().join("index");
        let db = Db::create(&path, options(engine)).unwrap();
        let mut rng = Rng::new(5);
        let mut model = BTreeMap::new();
        for i in 0..60_000u64 {
            let k = rng.next_u64() % 200_000;
            match i % 20 {
                0..=15 => {
                    db.insert(k, i).unwrap();
                    model.insert(k, i);
                }
                16..=18 => {
                    db.delete(k).unwrap();
                    model.remove(&k);
                }
                _ => {
                    let hi = k + rng.next_u64() % 300;
                    db.delete_range(k..=hi).unwrap();
                    let gone: Vec<u64> = model.range(k..=hi).map(|(&k, _)| k).collect();
                    for g in gone {
                        model.remove(&g);
                    }
                }
            }
            if i % 15_000 == 14_999 {
                db.check_integrity().unwrap();
            }
        }
        let s = db.stats();
        assert!(
            s.engine_counters.get("merges").copied().unwrap_or(0) > 50,
            "{engine:?}: {:?}",
            s.engine_counters
        );
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, model, "{engine:?}");
        db.close().unwrap();
        let db = Db::open(&path).unwrap();
        db.check_integrity().unwrap();
        let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, model, "{engine:?} after reopen");
        for (&k, &v) in model.iter().step_by(53) {
            assert_eq!(db.get(k).unwrap(), Some(v), "{engine:?}");
        }
    }
}
