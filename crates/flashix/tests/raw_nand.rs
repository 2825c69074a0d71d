//! `DeviceSpec::RawNand`, the default device of the IPL and d-IPL B+-trees: an index in a
//! real directory keeps its flash in the file `nand` across close and open; a config that
//! disagrees with the page size is refused; a flipped bit in any written NAND page of a
//! d-IPL index is `Error::Corruption` naming `nand` and the page, or harmless.

use flashix::sim::NandConfig;
use flashix::testing::Rng;
use flashix::{Db, DeviceSpec, DiplOptions, EngineKind, Error, IplOptions, Options};
use std::collections::BTreeMap;
use std::path::Path;

fn contents(db: &mut Db) -> flashix::Result<BTreeMap<u64, u64>> {
    db.range(..)?.collect()
}

/// Random inserts and deletes of keys below `keys`, applied to `db` and a model.
fn churn(db: &mut Db, seed: u64, ops: u64, keys: u64) -> BTreeMap<u64, u64> {
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    for i in 0..ops {
        let k = rng.below(keys);
        if rng.below(4) == 0 {
            db.delete(k).unwrap();
            model.remove(&k);
        } else {
            db.insert(k, i).unwrap();
            model.insert(k, i);
        }
    }
    model
}

#[test]
fn ipl_and_dipl_default_to_raw_nand_and_persist_in_the_nand_file() {
    for kind in [EngineKind::DiplBTree, EngineKind::IplBTree] {
        let opts = Options::new(kind);
        assert_eq!(opts.page_size, 2048);
        match &opts.device {
            DeviceSpec::RawNand(cfg) => {
                assert_eq!((cfg.page_bytes, cfg.pages_per_block), (2048, 64))
            }
            other => panic!("{kind:?}: default device {other:?}"),
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let mut db = Db::create(&path, opts).unwrap();
        let model = churn(&mut db, 7, 6000, 4000);
        db.close().unwrap();
        assert!(path.join("nand").is_file(), "{kind:?}");
        assert!(!path.join("data").exists(), "{kind:?}");
        let mut db = Db::open(&path).unwrap();
        db.check_integrity().unwrap();
        assert_eq!(contents(&mut db).unwrap(), model, "{kind:?}");
        // Still writable after the reopen, and again after a second one.
        db.insert(u64::MAX, 1).unwrap();
        db.close().unwrap();
        let db = Db::open(&path).unwrap();
        assert_eq!(db.get(u64::MAX).unwrap(), Some(1), "{kind:?}");
        db.close().unwrap();
    }
}

#[test]
fn a_raw_nand_config_that_disagrees_with_the_page_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = Db::create(
        dir.path().join("a"),
        Options::new(EngineKind::DiplBTree).page_size(4096),
    );
    match r {
        Err(Error::InvalidOptions(m)) => {
            assert!(
                m.contains("RawNand") && m.contains("2048") && m.contains("4096"),
                "{m}"
            )
        }
        other => panic!("expected InvalidOptions, got {:?}", other.err()),
    }
    assert!(
        !dir.path().join("a").exists(),
        "a refused create leaves nothing"
    );
    let cfg = NandConfig {
        page_bytes: 1024,
        ..NandConfig::default()
    };
    let r = Db::create(
        dir.path().join("b"),
        Options::new(EngineKind::IplBTree).device(DeviceSpec::RawNand(cfg.clone())),
    );
    assert!(matches!(r, Err(Error::InvalidOptions(m)) if m.contains("1024")));
    // The same config with the matching page size is accepted.
    let db = Db::create(
        dir.path().join("c"),
        Options::new(EngineKind::IplBTree)
            .page_size(1024)
            .ipl(flashix::IplOptions {
                node_bytes: 4096,
                ..Default::default()
            })
            .device(DeviceSpec::RawNand(cfg)),
    )
    .unwrap();
    db.close().unwrap();
    // Raw NAND is for the in-page-logging trees only.
    let r = Db::create(
        dir.path().join("d"),
        Options::new(EngineKind::BTree)
            .page_size(2048)
            .device(DeviceSpec::RawNand(NandConfig::default())),
    );
    assert!(matches!(r, Err(Error::InvalidOptions(m)) if m.contains("RawNand")));
}

/// Every file of `dir`: name and bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn restore(dir: &Path, files: &[(String, Vec<u8>)]) {
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// contract point 4 of docs/design.md on raw NAND: flip a bit in a programmed sector of every written NAND page
/// (node images and log sectors) of a closed d-IPL index in turn; opening, checking and
/// reading everything must give `Corruption` naming `nand` and that page (nodes of one
/// page, so a node image is one page), or the right contents.
#[test]
fn a_flipped_bit_in_any_written_nand_page_is_detected_or_harmless() {
    flip_every_written_nand_page(EngineKind::DiplBTree, 12000);
}

/// The same for the IPL B+-tree (fixed log area at the end of each block).
#[test]
fn a_flipped_bit_in_any_written_nand_page_of_an_ipl_tree_is_detected_or_harmless() {
    flip_every_written_nand_page(EngineKind::IplBTree, 7000);
}

/// Build an index of `kind` with `ops` random operations, close it, then damage each
/// written NAND page in turn.
fn flip_every_written_nand_page(kind: EngineKind, ops: u64) {
    let (page, ppb, blocks) = (2048usize, 16u32, 64u32);
    let cfg = NandConfig {
        page_bytes: page,
        pages_per_block: ppb,
        blocks,
        ..NandConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let opts = Options::new(kind).device(DeviceSpec::RawNand(cfg.clone()));
    let opts = if kind == EngineKind::IplBTree {
        opts.ipl(IplOptions {
            node_bytes: page as u64,
            buffer_frames: Some(8),
            log_area_bytes: 2 * page as u64,
            nand_blocks: blocks,
            pages_per_block: ppb,
        })
    } else {
        opts.dipl(DiplOptions {
            node_bytes: page as u64,
            buffer_frames: Some(8),
            ..Default::default()
        })
    };
    let mut db = Db::create(&path, opts).unwrap();
    let model = churn(&mut db, 11, ops, ops * 2 / 3);
    db.close().unwrap();
    let pristine = snapshot(&path);
    let nand = path.join("nand");
    let medium = std::fs::read(&nand).unwrap();

    // The medium (module doc of `sim::nand`): backing page 0 is the header, then per block
    // its data pages and its spare pages; data is stored complemented, so a programmed
    // sector is one with a non-zero byte.
    let spp = page / 512;
    let spare_pages = (ppb as usize * spp * cfg.spare_bytes_per_sector + 8).div_ceil(page);
    let span = ppb as usize + spare_pages;
    let (mut written, mut detected, mut log_pages) = (0u64, 0u64, 0u64);
    for b in 0..blocks as usize {
        for p in 0..ppb as usize {
            let at = (1 + b * span + p) * page;
            let Some(data) = medium.get(at..at + page) else {
                continue;
            };
            let programmed: Vec<usize> = (0..spp)
                .filter(|s| data[s * 512..(s + 1) * 512].iter().any(|&x| x != 0))
                .collect();
            let Some(&s) = programmed.get(written as usize % programmed.len().max(1)) else {
                continue;
            };
            if programmed.len() < spp {
                log_pages += 1; // a partly programmed page: log sectors
            }
            written += 1;
            let linear = (b * ppb as usize + p) as u64;
            let byte = at + s * 512 + 40 + (written as usize * 13) % 400;
            let mut damaged = medium.clone();
            damaged[byte] ^= 1 << (written % 8);
            restore(&path, &pristine);
            std::fs::write(&nand, &damaged).unwrap();
            let r = Db::open(&path).and_then(|mut db| {
                db.check_integrity()?;
                contents(&mut db)
            });
            match r {
                Err(Error::Corruption {
                    file,
                    page: Some(q),
                    ..
                }) if file == "nand" && q == linear => detected += 1,
                Ok(all) if all == model => {}
                Ok(_) => panic!("block {b} page {p}: the damage gave a wrong answer"),
                Err(e) => panic!("block {b} page {p} (linear {linear}): unexpected {e}"),
            }
        }
    }
    eprintln!(
        "{kind}: {written} written pages ({log_pages} partly programmed), {detected} detected"
    );
    assert!(
        written > 30 && log_pages > 0,
        "{written} written, {log_pages} with log sectors"
    );
    assert!(
        detected * 2 > written,
        "only {detected} of {written} damaged pages detected"
    );
}
