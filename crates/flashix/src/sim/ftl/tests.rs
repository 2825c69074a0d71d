use super::*;
use crate::io::{Faults, MemDevice};
use crate::sim::nand::NandConfig;
use crate::util::Rng;
use std::collections::HashMap;

/// Blocks of 4 pages of 2 KiB; over-provisioning 0.5: 3 logical blocks (12 logical
/// pages). The page-level FTL gets 6 blocks (3 spare); block-mapped ones 7 (4 spare: 2
/// log/replacement blocks and 2 kept free).
fn geometry(kind: FtlKind) -> NandConfig {
    NandConfig {
        pages_per_block: 4,
        blocks: if kind == FtlKind::Page { 6 } else { 7 },
        ..NandConfig::default()
    }
}

fn cfg(kind: FtlKind) -> FtlConfig {
    FtlConfig {
        kind,
        over_provisioning: 0.5,
        log_blocks: 0,
    }
}

/// A page naming its logical page and version.
fn page(lpn: u64, version: u32) -> Vec<u8> {
    let mut p = vec![0u8; 2048];
    for (i, c) in p.chunks_mut(12).enumerate() {
        let v = lpn ^ ((version as u64) << 32) ^ i as u64;
        let b = v.to_le_bytes();
        let n = c.len().min(8);
        c[..n].copy_from_slice(&b[..n]);
    }
    p
}

struct Run {
    mem: MemDevice,
    ftl: Box<dyn Ftl>,
    model: HashMap<u64, u32>,
}

impl Run {
    fn new(kind: FtlKind) -> Run {
        let mem = MemDevice::new(2048);
        let nand = Nand::create(Box::new(mem.clone()), geometry(kind)).unwrap();
        let ftl = open(nand, &cfg(kind)).unwrap();
        Run {
            mem,
            ftl,
            model: HashMap::new(),
        }
    }

    fn write(&mut self, lpns: &[u64]) {
        for &l in lpns {
            let v = self.model.entry(l).or_insert(0);
            *v += 1;
            self.ftl.write(l, &page(l, *v)).unwrap();
            self.ftl.check().unwrap();
        }
    }

    fn verify(&mut self) {
        let mut buf = vec![0u8; 2048];
        for l in 0..self.ftl.logical_pages() {
            self.ftl.read(l, &mut buf).unwrap();
            match self.model.get(&l) {
                Some(&v) => assert_eq!(buf, page(l, v), "logical page {l}"),
                None => assert!(buf.iter().all(|&b| b == 0), "logical page {l}"),
            }
        }
    }

    fn reopen(&mut self, kind: FtlKind) {
        let nand = Nand::open(Box::new(self.mem.reopen())).unwrap();
        self.ftl = open(nand, &cfg(kind)).unwrap();
        self.ftl.check().unwrap();
        self.verify();
    }

    /// (host writes, flash programs, copies, erases, switch, partial, full merges)
    fn counts(&self) -> (u64, u64, u64, u64, u64, u64, u64) {
        let s = self.ftl.stats();
        (
            s.host_writes,
            s.flash_programs,
            s.gc_page_copies,
            s.erases,
            s.switch_merges,
            s.partial_merges,
            s.full_merges,
        )
    }
}

/// Page 0 of each of `used` is programmed; each of `erased` is an erased block.
fn assert_placement(r: &Run, used: &[u32], erased: &[u32]) {
    for &b in used {
        assert!(
            !r.ftl.nand().is_page_erased(PageAddr::new(b, 0)),
            "B{b} should be in use"
        );
    }
    for &b in erased {
        assert_eq!(
            r.ftl.nand().highest_programmed_page(b),
            None,
            "B{b} should be erased"
        );
    }
}

#[test]
fn page_level_greedy_gc_expected_operations() {
    let mut r = Run::new(FtlKind::Page);
    // Blocks B0..B5 are taken in order. 0..11 fill B0 {0,1,2,3}, B1 {4..7}, B2 {8..11}.
    r.write(&(0..12).collect::<Vec<_>>());
    // B3 {0,4,8,1}, B4 {5,9,2,6}: valid B0 1 (3), B1 1 (7), B2 2 (10,11); free [B5].
    r.write(&[0, 4, 8, 1, 5, 9, 2, 6]);
    assert_eq!(r.counts(), (20, 20, 0, 0, 0, 0, 0));
    // 10: B5 becomes active, no free block left: GC victim B0 (1 valid, lower number than
    // B1): copy 3 to B5 page 0, erase B0. 10, 11, 3 go to B5 pages 1..3.
    r.write(&[10, 11, 3]);
    assert_eq!(r.counts(), (23, 24, 1, 1, 0, 0, 0));
    // 7: B0 becomes active; victim B2 (0 valid: 8..11 rewritten): erased without a copy.
    r.write(&[7]);
    assert_eq!(r.counts(), (24, 25, 1, 2, 0, 0, 0));
    let s = r.ftl.stats();
    assert_eq!((s.gc_victims, s.flash_reads), (2, 1));
    assert!((s.write_amplification() - 25.0 / 24.0).abs() < 1e-12);
    assert!(r.ftl.nand().is_page_erased(PageAddr::new(2, 0)));
    r.verify();
    // Reopen: the map comes back from the spare areas; writing continues in B0 (the
    // partially written block written last).
    r.reopen(FtlKind::Page);
    r.write(&[0]);
    assert!(!r.ftl.nand().is_page_erased(PageAddr::new(0, 1)));
    assert_eq!(r.counts(), (1, 1, 0, 0, 0, 0, 0));
    r.verify();
}

#[test]
fn block_level_fmax_expected_operations() {
    let mut r = Run::new(FtlKind::Block);
    // 0..3 in place in D(lbn 0) = B0.
    r.write(&[0, 1, 2, 3]);
    // 1, 3: B0 is full; replacement block R = B1 takes them at offsets 1 and 3.
    r.write(&[1, 3]);
    assert_eq!(r.counts(), (6, 6, 0, 0, 0, 0, 0));
    assert!(r.ftl.nand().is_page_erased(PageAddr::new(1, 0)));
    // 2: offset 2 is below R's write point (3): full merge into B2: copies of 0 (B0), 1 and
    // 3 (B1), the new 2; B0 and B1 erased.
    r.write(&[2]);
    assert_eq!(r.counts(), (7, 10, 3, 2, 0, 0, 1));
    // 4: lbn 1 gets D = B3 (free list [B3, B4, B5, B6, B0, B1]).
    r.write(&[4]);
    assert_eq!(r.counts(), (8, 11, 3, 2, 0, 0, 1));
    // 5 in place (B3 page 1); 4: R(lbn 1) = B4; 8: D(lbn 2) = B5; 8: R(lbn 2) = B6.
    r.write(&[5, 4, 8, 8]);
    assert_eq!(r.counts(), (12, 15, 3, 2, 0, 0, 1));
    // 0: lbn 0 needs a replacement block, 2 exist: merge lbn 1 (the oldest) into B0: copies
    // of 4 (B4) and 5 (B3), B3 and B4 erased; then R(lbn 0) = B1.
    r.write(&[0]);
    assert_eq!(r.counts(), (13, 18, 5, 4, 0, 0, 2));
    assert_placement(&r, &[1], &[3, 4]);
    r.verify();
    r.reopen(FtlKind::Block);
}

#[test]
fn bast_expected_operations() {
    let mut r = Run::new(FtlKind::Bast);
    // D(lbn 0) = B0 {0..3}; log L = B1 {0,1,2,3} in order.
    r.write(&[0, 1, 2, 3, 0, 1, 2, 3]);
    // 0: L is full and in order: switch merge (B1 becomes D, B0 erased), new L = B2.
    r.write(&[0]);
    assert_eq!(r.counts(), (9, 9, 0, 1, 1, 0, 0));
    // 1 to L (B2 {0,1}); 4: D(lbn 1) = B3; 4: L(lbn 1) = B4; 8: D(lbn 2) = B5.
    r.write(&[1, 4, 4, 8]);
    // 8: lbn 2 needs a log block, 2 exist: merge lbn 0 (oldest): B2 holds 0,1 in order, a
    // partial merge copies 2 and 3 from B1 into B2[2..4] and erases B1; L(lbn 2) = B6.
    r.write(&[8]);
    assert_eq!(r.counts(), (14, 16, 2, 2, 1, 1, 0));
    // 5 in place (B3 page 1); 5, 4, 5 fill L(lbn 1) = B4 {4, 5, 4, 5}; 6 in place (B3
    // page 2).
    r.write(&[5, 5, 4, 5, 6]);
    // 4: L full, its page 0 is stale: full merge into B0 (copies of 4, 5 from B4 and 6
    // from B3), B4 and B3 erased; new L(lbn 1) = B1.
    r.write(&[4]);
    assert_eq!(r.counts(), (20, 25, 5, 4, 1, 1, 1));
    assert_placement(&r, &[1, 0, 2, 6], &[3, 4]);
    r.verify();
    r.reopen(FtlKind::Bast);
}

#[test]
fn fast_expected_operations() {
    let mut r = Run::new(FtlKind::Fast);
    // D(lbn 0) = B0 {0..3}; 0 starts a stream: SW = B1 {0,1,2,3}; full: switch merge
    // (B1 is D, B0 erased).
    r.write(&[0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(r.counts(), (8, 8, 0, 1, 1, 0, 0));
    // 1: random log RW = B2 page 0. 0: new SW(lbn 0) = B3, then 1 to SW page 1.
    // 4: D(lbn 1) = B4.
    r.write(&[1, 0, 1, 4]);
    // 4 starts a stream: SW(lbn 0) holds 0,1 in order: partial merge copies 2, 3 from B1
    // into B3, erases B1; SW(lbn 1) = B5.
    r.write(&[4]);
    assert_eq!(r.counts(), (13, 15, 2, 2, 1, 1, 0));
    // 2, 3 to RW B2 pages 1, 2; 5 in place (D(lbn 1) = B4 page 1); 8: D(lbn 2) = B6;
    // 8 starts a stream: partial merge of SW(lbn 1) = B5 {4} copies 5 from B4 into B5
    // page 1, B4 erased; SW(lbn 2) = B0.
    r.write(&[2, 3, 5, 8, 8]);
    assert_eq!(r.counts(), (18, 21, 3, 3, 1, 2, 0));
    // 2 to RW page 3; 3: RW full and it is the only one allowed (2 log blocks = SW + 1 RW):
    // reclaim B2: full merge of lbn 0 into B1 (copies of 0, 1 from B3 and 2, 3 from B2),
    // B3 erased, then B2 erased; new RW = B4 takes 3.
    r.write(&[2, 3]);
    assert_eq!(r.counts(), (20, 27, 7, 5, 1, 2, 1));
    assert_placement(&r, &[4, 1, 0, 5, 6], &[2, 3]);
    r.verify();
    r.reopen(FtlKind::Fast);
}

#[test]
fn random_writes_keep_every_ftl_consistent_across_reopen() {
    for kind in FtlKind::ALL {
        let mut r = Run::new(kind);
        let mut rng = Rng::new(kind as u64 + 7);
        for round in 0..4 {
            let lpns: Vec<u64> = (0..60).map(|_| rng.below(12)).collect();
            r.write(&lpns);
            let mut trimmed = None;
            if round % 2 == 1 {
                let t = rng.below(12);
                r.ftl.trim(t).unwrap();
                trimmed = r.model.remove(&t).map(|v| (t, v));
            }
            r.verify();
            // A trim is not persistent: after the reopen the page reads its last version.
            if let Some((t, v)) = trimmed {
                r.model.insert(t, v);
            }
            r.reopen(kind);
        }
        let s = r.ftl.stats();
        assert!(s.flash_programs >= s.host_writes, "{kind}");
    }
}

#[test]
fn bad_arguments_are_refused() {
    let mut r = Run::new(FtlKind::Page);
    let mut buf = vec![0u8; 2048];
    assert!(
        matches!(r.ftl.read(12, &mut buf), Err(Error::InvalidArgument(m)) if m.contains("logical page 12"))
    );
    assert!(
        matches!(r.ftl.write(0, &buf[..100]), Err(Error::InvalidArgument(m)) if m.contains("100 bytes"))
    );
    let mem = MemDevice::new(2048);
    let nand = Nand::create(Box::new(mem.clone()), geometry(FtlKind::Page)).unwrap();
    let bad = FtlConfig {
        over_provisioning: 0.1,
        ..cfg(FtlKind::Fast)
    };
    assert!(matches!(open(nand, &bad), Err(Error::InvalidOptions(m)) if m.contains("spare")));
}

/// Writes random pages with a crash at `tick`; returns the medium, the versions of every
/// completed write, and the write that was cut (lpn, version).
fn crash_run(
    kind: FtlKind,
    seed: u64,
    tick: u64,
) -> (MemDevice, HashMap<u64, u32>, Option<(u64, u32)>) {
    let mem = MemDevice::new(2048);
    let faults = Faults::new(seed);
    let dev = faults.wrap_device(Box::new(mem.clone()));
    let nand = Nand::create(Box::new(dev), geometry(kind)).unwrap();
    let mut ftl = open(nand, &cfg(kind)).unwrap();
    faults.crash_after(tick);
    let mut rng = Rng::new(seed);
    let mut model: HashMap<u64, u32> = HashMap::new();
    for _ in 0..200 {
        let l = rng.below(12);
        let v = model.get(&l).copied().unwrap_or(0) + 1;
        if ftl.write(l, &page(l, v)).is_err() {
            return (mem, model, Some((l, v)));
        }
        model.insert(l, v);
    }
    (mem, model, None)
}

#[test]
fn a_crash_at_any_point_keeps_every_completed_write() {
    for kind in FtlKind::ALL {
        for seed in 0..3 {
            for tick in (5..400).step_by(23) {
                let (mem, model, cut) = crash_run(kind, seed, tick);
                let nand = Nand::open(Box::new(mem.reopen())).unwrap();
                let mut ftl = open(nand, &cfg(kind))
                    .unwrap_or_else(|e| panic!("{kind} seed {seed} tick {tick}: open: {e}"));
                ftl.check().unwrap();
                let mut buf = vec![0u8; 2048];
                for l in 0..12 {
                    ftl.read(l, &mut buf).unwrap();
                    let old = model.get(&l).copied();
                    let ok_old = match old {
                        Some(v) => buf == page(l, v),
                        None => buf.iter().all(|&b| b == 0),
                    };
                    let ok_new = matches!(cut, Some((cl, v)) if cl == l && buf == page(l, v));
                    assert!(
                        ok_old || ok_new,
                        "{kind} seed {seed} tick {tick}: logical page {l} lost (completed version {old:?})"
                    );
                }
                // The device keeps working after recovery.
                for l in 0..12 {
                    ftl.write(l, &page(l, 99))
                        .unwrap_or_else(|e| panic!("{kind} seed {seed} tick {tick}: {e}"));
                }
                ftl.check().unwrap();
            }
        }
    }
}

/// Like [`crash_run`] with programs synced only every few writes (the simulated SSD's
/// mode): returns the medium, the versions at the last sync, the versions written since.
fn deferred_crash_run(
    kind: FtlKind,
    seed: u64,
    tick: u64,
) -> (MemDevice, HashMap<u64, u32>, Vec<(u64, u32)>) {
    let mem = MemDevice::new(2048);
    let faults = Faults::new(seed);
    let dev = faults.wrap_device(Box::new(mem.clone()));
    let mut nand = Nand::create(Box::new(dev), geometry(kind)).unwrap();
    nand.set_sync_per_op(false);
    let mut ftl = open(nand, &cfg(kind)).unwrap();
    faults.crash_after(tick);
    let mut rng = Rng::new(seed);
    let mut synced: HashMap<u64, u32> = HashMap::new();
    let mut model = synced.clone();
    let mut since = Vec::new();
    for _ in 0..300 {
        if rng.below(5) == 0 {
            if ftl.nand_mut().sync().is_err() {
                break;
            }
            synced = model.clone();
            since.clear();
        }
        let l = rng.below(12);
        let v = model.get(&l).copied().unwrap_or(0) + 1;
        since.push((l, v));
        if ftl.write(l, &page(l, v)).is_err() {
            break;
        }
        model.insert(l, v);
    }
    (mem, synced, since)
}

#[test]
fn a_crash_without_per_program_syncs_keeps_every_synced_write() {
    for kind in FtlKind::ALL {
        for seed in 0..4 {
            for tick in (3..500).step_by(7) {
                let (mem, synced, since) = deferred_crash_run(kind, seed, tick);
                let nand = Nand::open(Box::new(mem.reopen())).unwrap();
                let mut ftl = open(nand, &cfg(kind))
                    .unwrap_or_else(|e| panic!("{kind} seed {seed} tick {tick}: open: {e}"));
                ftl.check().unwrap();
                let mut buf = vec![0u8; 2048];
                for l in 0..12 {
                    ftl.read(l, &mut buf).unwrap();
                    let ok_synced = match synced.get(&l) {
                        Some(&v) => buf == page(l, v),
                        None => buf.iter().all(|&b| b == 0),
                    };
                    let ok_later = since.iter().any(|&(sl, v)| sl == l && buf == page(l, v));
                    assert!(
                        ok_synced || ok_later,
                        "{kind} seed {seed} tick {tick}: logical page {l} holds neither its synced \
                         version {:?} nor a later one",
                        synced.get(&l)
                    );
                }
                for l in 0..12 {
                    ftl.write(l, &page(l, 99))
                        .unwrap_or_else(|e| panic!("{kind} seed {seed} tick {tick}: {e}"));
                }
                ftl.check().unwrap();
            }
        }
    }
}

/// Byte offset on the medium of page `p` of block `b` (data) or of its spare record, for
/// the page-level test geometry: 4 data pages + 1 spare page per block after the header.
fn medium_offset(b: u64, p: u64, spare: bool) -> u64 {
    let base = (1 + b * 5) * 2048;
    if spare {
        base + 4 * 2048 + p * 64 + 9
    } else {
        base + p * 2048 + 700
    }
}

#[test]
fn damage_to_a_current_version_fails_open_and_damage_to_a_stale_one_is_ignored() {
    let mut r = Run::new(FtlKind::Page);
    r.write(&(0..12).collect::<Vec<_>>());
    // Logical page 0's version 2 goes to B3 page 0; version 1 (B0 page 0) is stale.
    r.write(&[0]);
    let open_err = |r: &Run| {
        let nand = Nand::open(Box::new(r.mem.reopen())).unwrap();
        match open(nand, &cfg(FtlKind::Page)) {
            Err(Error::Corruption { file, page, detail }) => (file, page, detail),
            Err(e) => panic!("expected corruption, got {e}"),
            Ok(_) => panic!("expected corruption, open succeeded"),
        }
    };
    for (b, p, spare, ppn) in [(3, 0, false, 12), (1, 2, true, 6)] {
        let at = medium_offset(b, p, spare);
        r.mem.flip_bit(at, 2);
        let (file, page, detail) = open_err(&r);
        assert_eq!((file.as_str(), page), ("nand", Some(ppn)), "{detail}");
        r.mem.flip_bit(at, 2);
    }
    let stale = medium_offset(0, 0, false);
    r.mem.flip_bit(stale, 5);
    r.reopen(FtlKind::Page);
    r.mem.flip_bit(stale, 5);
    // Damage after open is caught by the read's checksum.
    r.mem.flip_bit(medium_offset(3, 0, false), 1);
    let mut buf = vec![0u8; 2048];
    assert!(matches!(
        r.ftl.read(0, &mut buf),
        Err(Error::Corruption { page: Some(12), .. })
    ));
}

#[test]
fn page_level_writes_alternate_between_chips_and_a_batch_overlaps() {
    // 8 blocks on 2 channels (even blocks on channel 0): two stripes.
    let nc = NandConfig {
        pages_per_block: 4,
        blocks: 8,
        channels: 2,
        ..NandConfig::default()
    };
    let nand = Nand::create(Box::new(MemDevice::new(2048)), nc).unwrap();
    let mut ftl = open(nand, &cfg(FtlKind::Page)).unwrap();
    // 0..8 alternate: even logical pages to B0 (channel 0), odd ones to B1 (channel 1).
    ftl.nand_mut().begin_batch();
    for l in 0..8 {
        ftl.write(l, &page(l, 1)).unwrap();
    }
    ftl.nand_mut().end_batch();
    for p in 0..4 {
        assert!(!ftl.nand().is_page_erased(PageAddr::new(0, p)));
        assert!(!ftl.nand().is_page_erased(PageAddr::new(1, p)));
    }
    assert_eq!(ftl.nand().highest_programmed_page(2), None);
    // 8 programs of (2048 + 64) bytes: 4 per channel, each 52.8 us on the bus + 200 us.
    let t = ftl.nand().stats().time_us;
    assert!((t - 4.0 * 252.8).abs() < 1e-6, "{t}");
    let mut buf = vec![0u8; 2048];
    for l in 0..8 {
        ftl.read(l, &mut buf).unwrap();
        assert_eq!(buf, page(l, 1));
    }
    ftl.check().unwrap();
}
