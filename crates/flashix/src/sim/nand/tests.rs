use super::*;
use crate::io::{Faults, MemDevice};

/// 8 blocks of 4 pages of 2 KiB (4 sectors, 64 spare bytes per page).
fn small() -> NandConfig {
    NandConfig {
        pages_per_block: 4,
        blocks: 8,
        ..NandConfig::default()
    }
}

fn fresh(cfg: NandConfig) -> (MemDevice, Nand) {
    let mem = MemDevice::new(cfg.page_bytes);
    let nand = Nand::create(Box::new(mem.clone()), cfg).unwrap();
    (mem, nand)
}

/// Page contents that name their address and a salt.
fn pattern(addr: PageAddr, salt: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8) ^ (addr.block as u8).wrapping_mul(31) ^ (addr.page as u8) ^ salt)
        .collect()
}

fn spare_of(nand: &Nand, addr: PageAddr, salt: u8) -> Vec<u8> {
    pattern(
        addr,
        salt.wrapping_add(99),
        nand.config().spare_bytes_per_page(),
    )
}

fn invalid(r: Result<()>, words: &[&str]) {
    match r {
        Err(Error::InvalidArgument(m)) => {
            for w in words {
                assert!(m.contains(w), "{m:?} should mention {w:?}");
            }
        }
        other => panic!("expected InvalidArgument mentioning {words:?}, got {other:?}"),
    }
}

#[test]
fn erased_flash_reads_ff_and_programs_read_back() {
    let (_mem, mut nand) = fresh(small());
    let a = PageAddr::new(2, 0);
    let mut d = vec![0u8; 2048];
    let mut s = vec![0u8; 64];
    nand.read(a, &mut d, &mut s).unwrap();
    assert!(d.iter().chain(&s).all(|&b| b == 0xFF));
    assert!(nand.is_page_erased(a));
    let data = pattern(a, 1, 2048);
    let spare = spare_of(&nand, a, 1);
    nand.program(a, &data, &spare).unwrap();
    nand.read(a, &mut d, &mut s).unwrap();
    assert_eq!(d, data);
    assert_eq!(s, spare);
    assert_eq!(nand.programmed_sectors(a), 0b1111);
    // A read of two sectors with their spare.
    let mut d2 = vec![0u8; 1024];
    let mut s2 = vec![0u8; 32];
    nand.read_sectors(a, 2, &mut d2, &mut s2).unwrap();
    assert_eq!(d2, data[1024..]);
    assert_eq!(s2, spare[32..]);
    nand.check().unwrap();
}

#[test]
fn every_illegal_operation_is_rejected_and_changes_nothing() {
    let (_mem, mut nand) = fresh(small());
    let d = vec![0xA5u8; 2048];
    let s = vec![0x5Au8; 64];
    // Out of range.
    invalid(
        nand.program(PageAddr::new(8, 0), &d, &s),
        &["block 8", "out of range"],
    );
    invalid(
        nand.program(PageAddr::new(0, 4), &d, &s),
        &["page 4", "out of range"],
    );
    invalid(nand.erase(8), &["block 8", "out of range"]);
    let mut r = vec![0u8; 2048];
    invalid(
        nand.read(PageAddr::new(9, 0), &mut r, &mut []),
        &["block 9"],
    );
    // Lengths.
    invalid(
        nand.program_sectors(PageAddr::new(0, 0), 0, &d[..100], &[]),
        &["100 bytes", "multiple of 512"],
    );
    invalid(
        nand.program_sectors(PageAddr::new(0, 0), 0, &[], &[]),
        &["0 bytes"],
    );
    invalid(
        nand.program_sectors(PageAddr::new(0, 0), 3, &d[..1024], &[]),
        &["sectors 3..5"],
    );
    invalid(
        nand.program(PageAddr::new(0, 0), &d, &s[..10]),
        &["spare of 10 bytes", "expected 64"],
    );
    invalid(
        nand.read_sectors(PageAddr::new(0, 0), 1, &mut r[..512], &mut [0u8; 64]),
        &["spare of 64 bytes", "expected 16"],
    );
    assert_eq!(nand.stats().page_programs, 0);
    assert!(nand.is_page_erased(PageAddr::new(0, 0)));

    // Re-program of a programmed sector.
    let a = PageAddr::new(1, 0);
    nand.program_sectors(a, 1, &d[..512], &s[..16]).unwrap();
    invalid(
        nand.program(a, &d, &s),
        &["block 1 page 0 sector 1", "already programmed"],
    );
    invalid(
        nand.program_sectors(a, 1, &d[..512], &[]),
        &["sector 1", "already programmed"],
    );
    // In-order rule: page 2 programmed, page 1 refused, page 2 partial allowed, page 3 fine.
    nand.program_sectors(PageAddr::new(1, 2), 0, &d[..512], &[])
        .unwrap();
    invalid(
        nand.program(PageAddr::new(1, 1), &d, &s),
        &["block 1 page 1", "out of order", "page 2"],
    );
    invalid(
        nand.program_sectors(a, 2, &d[..512], &[]),
        &["block 1 page 0", "out of order"],
    );
    nand.program_sectors(PageAddr::new(1, 2), 1, &d[..512], &[])
        .unwrap();
    nand.program(PageAddr::new(1, 3), &d, &s).unwrap();
    // After an erase everything is allowed again.
    nand.erase(1).unwrap();
    nand.program(a, &d, &s).unwrap();
    nand.check().unwrap();

    // An illegal operation in a batch: the ones before it are done, it and later ones not.
    let b = PageAddr::new(3, 0);
    let mut ops = [
        NandOp::Program {
            addr: b,
            first_sector: 0,
            data: &d,
            spare: &s,
        },
        NandOp::Program {
            addr: b,
            first_sector: 0,
            data: &d,
            spare: &s,
        },
        NandOp::Erase { block: 4 },
    ];
    invalid(
        nand.submit(&mut ops),
        &["block 3 page 0", "already programmed"],
    );
    assert!(!nand.is_page_erased(b));
    assert_eq!(nand.erase_count(4), 0);
}

#[test]
fn nop_limit_counts_partial_programs() {
    // 4 KiB pages: 8 sectors, NOP 4.
    let cfg = NandConfig {
        page_bytes: 4096,
        ..small()
    };
    let (mem, mut nand) = fresh(cfg);
    let a = PageAddr::new(0, 0);
    let d = vec![7u8; 512];
    for s in 0..4 {
        nand.program_sectors(a, s * 2, &d, &[0u8; 16]).unwrap();
    }
    assert_eq!(nand.program_count(a), 4);
    assert_eq!(nand.programmed_sectors(a), 0b0101_0101);
    invalid(
        nand.program_sectors(a, 1, &d, &[]),
        &["block 0 page 0", "4 programs", "NOP limit 4"],
    );
    // The count survives open (four runs of programmed sectors).
    let mut nand = Nand::open(Box::new(mem.reopen())).unwrap();
    assert_eq!(nand.program_count(a), 4);
    invalid(nand.program_sectors(a, 7, &d, &[]), &["NOP limit 4"]);
    nand.erase(0).unwrap();
    nand.program_sectors(a, 1, &d, &[]).unwrap();
    nand.check().unwrap();
}

#[test]
fn contents_state_and_wear_survive_close_and_open() {
    let (mem, mut nand) = fresh(small());
    let full = PageAddr::new(5, 1);
    let data = pattern(full, 3, 2048);
    let spare = spare_of(&nand, full, 3);
    nand.program(full, &data, &spare).unwrap();
    let part = PageAddr::new(5, 2);
    let pdata = pattern(part, 4, 1024);
    nand.program_sectors(part, 1, &pdata, &spare[..32]).unwrap();
    for _ in 0..3 {
        nand.erase(6).unwrap();
    }
    nand.program(PageAddr::new(6, 0), &data, &[]).unwrap();
    drop(nand);

    let mut nand = Nand::open(Box::new(mem.reopen())).unwrap();
    assert_eq!(nand.config(), &small());
    let mut d = vec![0u8; 2048];
    let mut s = vec![0u8; 64];
    nand.read(full, &mut d, &mut s).unwrap();
    assert_eq!(
        (d.as_slice(), s.as_slice()),
        (data.as_slice(), spare.as_slice())
    );
    nand.read(part, &mut d, &mut s).unwrap();
    assert!(d[..512].iter().chain(&d[1536..]).all(|&b| b == 0xFF));
    assert_eq!(d[512..1536], pdata[..]);
    assert_eq!(nand.programmed_sectors(full), 0b1111);
    assert_eq!(nand.programmed_sectors(part), 0b0110);
    assert_eq!(nand.highest_programmed_page(5), Some(2));
    assert_eq!(nand.highest_programmed_page(6), Some(0));
    assert_eq!(nand.highest_programmed_page(7), None);
    assert_eq!(nand.erase_count(6), 3);
    let st = nand.stats();
    assert_eq!((st.max_erase_count, st.min_erase_count), (3, 0));
    assert_eq!(st.erases, 0, "operation counters start at open");
    // The rules hold on the reopened state: in order, no re-program.
    invalid(
        nand.program(PageAddr::new(5, 0), &data, &[]),
        &["out of order"],
    );
    invalid(
        nand.program_sectors(part, 2, &data[..512], &[]),
        &["already programmed"],
    );
    nand.program_sectors(part, 3, &data[..512], &[]).unwrap();
    nand.check().unwrap();

    // create over a used medium formats it: every block erased, counts back to 0.
    let nand = Nand::create(Box::new(mem.reopen()), small()).unwrap();
    assert!(nand.is_page_erased(full));
    let nand = Nand::open(Box::new(mem.reopen())).unwrap();
    assert!(nand.is_page_erased(full));
    assert_eq!(nand.erase_count(6), 0);
}

#[test]
fn open_refuses_a_medium_without_header_and_a_bad_backing_page_size() {
    let mem = MemDevice::new(2048);
    match Nand::open(Box::new(mem.clone())) {
        Err(Error::Corruption { file, page, detail }) => {
            assert_eq!((file.as_str(), page), ("nand", Some(0)));
            assert!(detail.contains("never created"), "{detail}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    Nand::create(Box::new(mem.clone()), small()).unwrap();
    mem.flip_bit(20, 3);
    assert!(matches!(
        Nand::open(Box::new(mem.reopen())),
        Err(Error::Corruption { .. })
    ));
    assert!(matches!(
        Nand::create(Box::new(MemDevice::new(4096)), small()),
        Err(Error::InvalidOptions(_))
    ));
    let bad = NandConfig {
        page_bytes: 1000,
        ..small()
    };
    assert!(matches!(
        Nand::create(Box::new(MemDevice::new(1000)), bad),
        Err(Error::InvalidOptions(m)) if m.contains("page_bytes 1000")
    ));
}

/// Programs pages 0,1,2,... of block 1 (and of block 2 after block 1 is full) until a
/// crash at `crash_tick` stops them; returns the medium and how many programs completed.
fn program_until_crash(seed: u64, crash_tick: u64) -> (MemDevice, usize) {
    let mem = MemDevice::new(2048);
    let faults = Faults::new(seed);
    let dev = faults.wrap_device(Box::new(mem.clone()));
    let mut nand = Nand::create(Box::new(dev), small()).unwrap();
    faults.crash_after(crash_tick);
    let mut done = 0;
    for a in crash_addrs() {
        let data = pattern(a, 9, 2048);
        let spare = pattern(a, 77, 64);
        if nand.program(a, &data, &spare).is_err() {
            break;
        }
        done += 1;
    }
    assert!(faults.crashed());
    (mem, done)
}

fn crash_addrs() -> Vec<PageAddr> {
    (1..3)
        .flat_map(|b| (0..4).map(move |p| PageAddr::new(b, p)))
        .collect()
}

#[test]
fn a_crash_leaves_completed_programs_and_at_most_one_torn_program() {
    let mut torn_seen = 0;
    // Each program is 3 ticks (data write, spare write, sync): cover each of them.
    for seed in 0..6 {
        for tick in 1..=12 {
            let (mem, done) = program_until_crash(seed, tick);
            let mut nand = Nand::open(Box::new(mem.reopen())).unwrap();
            nand.check().unwrap();
            for (i, a) in crash_addrs().into_iter().enumerate() {
                let mut d = vec![0u8; 2048];
                let mut s = vec![0u8; 64];
                nand.read(a, &mut d, &mut s).unwrap();
                let want_d = pattern(a, 9, 2048);
                let want_s = pattern(a, 77, 64);
                if i < done {
                    assert_eq!((&d, &s), (&want_d, &want_s), "completed program {a} lost");
                } else if i == done {
                    // The crash-point program: each sector and each sector's spare either
                    // new or erased.
                    let mut new = 0;
                    let mut old = 0;
                    for k in 0..4 {
                        for (got, want) in [
                            (&d[k * 512..][..512], &want_d[k * 512..][..512]),
                            (&s[k * 16..][..16], &want_s[k * 16..][..16]),
                        ] {
                            if got == want {
                                new += 1;
                            } else {
                                assert!(got.iter().all(|&b| b == 0xFF), "{a} holds garbage");
                                old += 1;
                            }
                        }
                    }
                    if new > 0 && old > 0 {
                        torn_seen += 1;
                    }
                } else {
                    assert!(
                        nand.is_page_erased(a),
                        "{a} programmed after the crash point"
                    );
                }
            }
            // The medium stays usable: erase and program again.
            nand.erase(1).unwrap();
            nand.program(PageAddr::new(1, 0), &[1u8; 2048], &[])
                .unwrap();
        }
    }
    assert!(torn_seen > 0, "no crash point tore a program");
}

#[test]
fn a_crash_during_erase_leaves_each_sector_old_or_erased() {
    let mut torn_seen = false;
    for seed in 0..8 {
        let mem = MemDevice::new(2048);
        let faults = Faults::new(seed);
        let dev = faults.wrap_device(Box::new(mem.clone()));
        let mut nand = Nand::create(Box::new(dev), small()).unwrap();
        for p in 0..4 {
            let a = PageAddr::new(3, p);
            nand.program(a, &pattern(a, 5, 2048), &[]).unwrap();
        }
        faults.crash_after(1);
        assert!(nand.erase(3).is_err());
        let mut nand = Nand::open(Box::new(mem.reopen())).unwrap();
        let (mut old, mut erased) = (0, 0);
        for p in 0..4 {
            let a = PageAddr::new(3, p);
            let mut d = vec![0u8; 2048];
            nand.read(a, &mut d, &mut []).unwrap();
            let want = pattern(a, 5, 2048);
            for k in 0..4 {
                let got = &d[k * 512..][..512];
                if got == &want[k * 512..][..512] {
                    old += 1;
                } else {
                    assert!(got.iter().all(|&b| b == 0xFF));
                    erased += 1;
                }
            }
        }
        torn_seen |= old > 0 && erased > 0;
        assert!(nand.erase_count(3) <= 1);
        nand.erase(3).unwrap();
        nand.check().unwrap();
    }
    assert!(torn_seen);
}

#[test]
fn counters_and_wear() {
    let (_mem, mut nand) = fresh(small());
    let d = vec![0u8; 2048];
    let a = PageAddr::new(0, 0);
    nand.program(a, &d, &[0u8; 64]).unwrap();
    nand.program_sectors(PageAddr::new(0, 1), 2, &d[..1024], &[])
        .unwrap();
    let mut r = vec![0u8; 2048];
    nand.read(a, &mut r, &mut []).unwrap();
    nand.read_sectors(a, 3, &mut r[..512], &mut []).unwrap();
    nand.erase(0).unwrap();
    nand.erase(0).unwrap();
    nand.erase(2).unwrap();
    let st = nand.stats();
    assert_eq!(
        (
            st.page_programs,
            st.sector_programs,
            st.page_reads,
            st.sector_reads,
            st.erases
        ),
        (2, 6, 2, 5, 3)
    );
    assert_eq!((nand.erase_count(0), nand.erase_count(2)), (2, 1));
    assert_eq!((st.max_erase_count, st.min_erase_count), (2, 0));
    assert!(st.time_us > 0.0);
    nand.reset_stats();
    let st = nand.stats();
    assert_eq!((st.erases, st.time_us, st.max_erase_count), (0, 0.0, 2));
}

fn batch_time(cfg: NandConfig, blocks: &[u32]) -> f64 {
    let (_mem, mut nand) = fresh(cfg);
    let d = vec![0u8; 2048];
    let s = vec![0u8; 64];
    let mut ops: Vec<NandOp<'_>> = blocks
        .iter()
        .map(|&b| NandOp::Program {
            addr: PageAddr::new(b, 0),
            first_sector: 0,
            data: &d,
            spare: &s,
        })
        .collect();
    nand.submit(&mut ops).unwrap();
    nand.stats().time_us
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn a_batch_overlaps_across_channels_and_ways_and_serialises_on_one_chip() {
    // One program: (2048 + 64) bytes * 25 ns = 52.8 us on the bus, then 200 us.
    let one = 52.8 + 200.0;
    let cfg = |channels, ways| NandConfig {
        channels,
        ways,
        ..small()
    };
    // 4 channels: blocks 0..4 on 4 channels overlap completely.
    assert!(close(batch_time(cfg(4, 1), &[0, 1, 2, 3]), one));
    // Blocks 0, 4 share channel 0: the second waits for the first's chip.
    assert!(close(batch_time(cfg(4, 1), &[0, 4]), 2.0 * one));
    // One channel, one way: everything serial.
    assert!(close(batch_time(cfg(1, 1), &[0, 1, 2, 3]), 4.0 * one));
    // One channel, 4 ways: the transfers serialise on the bus, the programs overlap.
    assert!(close(
        batch_time(cfg(1, 4), &[0, 1, 2, 3]),
        4.0 * 52.8 + 200.0
    ));
    // Separate calls never overlap.
    let (_mem, mut nand) = fresh(cfg(4, 1));
    for b in 0..4 {
        nand.program(PageAddr::new(b, 0), &[0u8; 2048], &[0u8; 64])
            .unwrap();
    }
    assert!(close(nand.stats().time_us, 4.0 * one));
    // Reads and erases: read 25 us then 2048 * 25 ns; erase 1500 us; on two channels.
    let mut d0 = vec![0u8; 2048];
    let mut d1 = vec![0u8; 2048];
    nand.reset_stats();
    nand.submit(&mut [
        NandOp::Read {
            addr: PageAddr::new(0, 0),
            first_sector: 0,
            data: &mut d0,
            spare: &mut [],
        },
        NandOp::Erase { block: 1 },
        NandOp::Read {
            addr: PageAddr::new(4, 0),
            first_sector: 0,
            data: &mut d1,
            spare: &mut [],
        },
    ])
    .unwrap();
    // Channel 0: two reads of 76.2 us in a row; channel 1: the erase.
    assert!(close(nand.stats().time_us, 1500.0));
    nand.reset_stats();
    nand.submit(&mut [
        NandOp::Read {
            addr: PageAddr::new(0, 0),
            first_sector: 0,
            data: &mut d0,
            spare: &mut [],
        },
        NandOp::Read {
            addr: PageAddr::new(4, 0),
            first_sector: 0,
            data: &mut d1,
            spare: &mut [],
        },
    ])
    .unwrap();
    assert!(close(nand.stats().time_us, 2.0 * (25.0 + 51.2)));
}
