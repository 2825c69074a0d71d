//! Damage in the WAL of an index that was not closed cleanly, for every engine (docs/design.md,
//! contract point 4). The WAL's rule (`durable::wal`, module doc): reading
//! stops at the first record that is cut short or fails its checksum *if nothing valid
//! follows it* (a torn tail, as a crash leaves it); a bad record followed by a valid one is
//! corruption naming the WAL file. So with a flipped bit anywhere in the WAL, `open` must
//! return `Error::Corruption` naming that file, or (damage in the last record, which reads
//! as a torn tail) the state after a prefix of the operations or a corruption error of the
//! data the dropped operation had written; never a panic and never other contents.
//!
//! Also a regression for forged B+-tree node pages: a leaf whose entry count claims
//! `u32::MAX` entries under a valid checksum is corruption naming the page.

use flashix::io::{Device, MemDevice, MemVfs, Vfs};
use flashix::sim::NandConfig;
use flashix::testing::Rng;
use flashix::{Db, DeviceSpec, EngineKind, Error, Options, Storage};
use std::collections::BTreeMap;
use std::sync::Arc;

fn options(kind: EngineKind) -> Options {
    let o = Options::new(kind)
        .page_size(2048)
        .buffer_pool_bytes(256 << 10)
        // No checkpoint while the history runs: the WAL holds all of it.
        .checkpoint_wal_bytes(64 << 20);
    match kind {
        EngineKind::IplBTree | EngineKind::DiplBTree => o.device(DeviceSpec::RawNand(NandConfig {
            page_bytes: 2048,
            pages_per_block: 16,
            blocks: 64,
            ..NandConfig::default()
        })),
        _ => o,
    }
}

fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

/// The WAL file of the index in `vfs` (the one the manifest names).
fn wal_name(vfs: &MemVfs) -> String {
    flashix::testing::current_wal_name(vfs).expect("a manifest")
}

fn damaged_wal_in_the_middle(kind: EngineKind) {
    let dev = MemDevice::new(2048);
    let vfs = MemVfs::new();
    let db = Db::create_on(storage(&dev, &vfs), options(kind)).unwrap();
    // Insert `i` writes value `i` (keys repeat): the newest value present names the
    // prefix the contents must equal.
    let mut rng = Rng::new(kind as u64 + 1);
    let ops: Vec<u64> = (0..400).map(|_| rng.below(300)).collect();
    for (i, &k) in ops.iter().enumerate() {
        db.insert(k, i as u64).unwrap();
    }
    db.flush().unwrap();
    // Not closed: no checkpoint, the WAL holds every operation.
    drop(db);
    let name = wal_name(&vfs);
    let pristine = vfs.read(&name).unwrap();
    assert!(
        pristine.len() > 400 * 9,
        "{kind}: WAL of {} bytes",
        pristine.len()
    );
    let device_pristine: Vec<u8> = {
        let mut d = dev.reopen();
        let pages = dev.len_bytes() / 2048;
        let mut all = vec![0u8; (pages * 2048) as usize];
        if pages > 0 {
            d.read(0, &mut all).unwrap();
        }
        all
    };
    let len = pristine.len();
    let (mut corrupt, mut prefix) = (0, 0);
    for at in [9, len / 4, len / 2, 3 * len / 4, len - 20, len - 1] {
        // Each case starts from the same unclean state: the WAL and the device.
        if !device_pristine.is_empty() {
            dev.reopen().write(0, &device_pristine).unwrap();
        }
        let mut damaged = pristine.clone();
        damaged[at] ^= 0x10;
        vfs.create(&name).unwrap();
        vfs.append(&name, &damaged).unwrap();
        match Db::open_on(storage(&dev, &vfs)) {
            Err(Error::Corruption { file, .. }) if file == name => corrupt += 1,
            // Damage in the last record reads as a torn tail: its operation is not
            // replayed although its effects reached the device after the WAL was
            // durable, which an engine may find inconsistent (the FBX-tree's log pages).
            // Detected, not wrong: corruption of the data file.
            Err(Error::Corruption { file, .. }) if at >= len - 40 && file == "data" => prefix += 1,
            Err(e) => panic!("{kind}: damage at {at} of {len}: unexpected {e}"),
            Ok(db) => {
                let got: BTreeMap<u64, u64> = db.range(..).unwrap().map(|kv| kv.unwrap()).collect();
                let p = got.values().max().map_or(0, |&v| v as usize + 1);
                let model: BTreeMap<u64, u64> = ops[..p]
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| (k, i as u64))
                    .collect();
                assert!(got == model, "{kind}: damage at {at}: not a prefix state");
                // Only damage in the last record may cut the log short.
                assert!(
                    at >= len - 40,
                    "{kind}: damage at {at} of {len} went unnoticed"
                );
                prefix += 1;
                drop(db);
            }
        }
    }
    assert!(
        corrupt >= 4,
        "{kind}: {corrupt} corruption errors, {prefix} prefixes"
    );
}

macro_rules! per_engine {
    ($($name:ident: $kind:expr;)*) => {$(
        #[test]
        fn $name() {
            damaged_wal_in_the_middle($kind);
        }
    )*};
}

per_engine! {
    btree_wal_damage: EngineKind::BTree;
    lsm_wal_damage: EngineKind::Lsm;
    fdtree_wal_damage: EngineKind::FdTree;
    pio_wal_damage: EngineKind::PioBTree;
    bulk_wal_damage: EngineKind::BulkIndex;
    bftl_wal_damage: EngineKind::Bftl;
    latree_wal_damage: EngineKind::LaTree;
    fbx_wal_damage: EngineKind::Fbx;
    ipl_wal_damage: EngineKind::IplBTree;
    dipl_wal_damage: EngineKind::DiplBTree;
}

/// Regression (hostile bytes): a B+-tree leaf whose count claims `u32::MAX` entries under
/// a valid checksum read past the page (a panic); it is corruption naming the page.
#[test]
fn a_forged_btree_leaf_claiming_u32_max_entries_is_corruption() {
    let dev = MemDevice::new(512);
    let vfs = MemVfs::new();
    let db = Db::create_on(
        storage(&dev, &vfs),
        Options::new(EngineKind::BTree).page_size(512),
    )
    .unwrap();
    for k in 0..10u64 {
        db.insert(k, k).unwrap();
    }
    db.close().unwrap();
    let mut forged = 0;
    let mut d = dev.reopen();
    for pid in 0..dev.len_bytes() / 512 {
        let mut b = vec![0u8; 512];
        d.read(pid, &mut b).unwrap();
        // A B-link leaf (kind 5): entry count at byte 16; checksum over bytes 4.. at byte 0.
        if u16::from_le_bytes([b[12], b[13]]) != 5 {
            continue;
        }
        b[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let crc = crc32c::crc32c(&b[4..]);
        b[0..4].copy_from_slice(&crc.to_le_bytes());
        d.write(pid, &b).unwrap();
        forged += 1;
        let r = Db::open_on(storage(&dev, &vfs)).and_then(|db| db.get(3));
        assert!(
            matches!(&r, Err(Error::Corruption { page: Some(p), .. }) if *p == pid),
            "{r:?}"
        );
    }
    assert!(forged > 0);
}
