//! Tests of [`FileDevice`]: every backend (`io_uring` or `pread`, `O_DIRECT` or buffered) in
//! every test directory.

use super::*;
use std::path::PathBuf;

const PS: usize = 4096;
const BACKENDS: [&str; 4] = [
    "io_uring+O_DIRECT",
    "io_uring+buffered",
    "pread+O_DIRECT",
    "pread+buffered",
];

/// Directories to test in: the system temp dir and one under the workspace target dir
/// (the system temp dir may be tmpfs, which may refuse O_DIRECT).
fn test_dirs() -> Vec<tempfile::TempDir> {
    let mut dirs = Vec::new();
    if let Ok(d) = tempfile::tempdir() {
        dirs.push(d);
    }
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/flashix-test-tmp");
    if std::fs::create_dir_all(&target).is_ok() {
        if let Ok(d) = tempfile::tempdir_in(&target) {
            dirs.push(d);
        }
    }
    assert!(!dirs.is_empty());
    dirs
}

/// Every combination of (direct_io, io_uring) in every test directory.
fn devices(name: &str) -> Vec<(FileDevice, std::sync::Arc<tempfile::TempDir>)> {
    let mut out = Vec::new();
    for dir in test_dirs() {
        let dir = std::sync::Arc::new(dir);
        for direct in [true, false] {
            for uring in [true, false] {
                let sub = dir.path().join(format!("{direct}-{uring}"));
                std::fs::create_dir_all(&sub).unwrap();
                let dev = FileDevice::open_with(&sub.join(name), PS, direct, uring).unwrap();
                assert!(BACKENDS.contains(&dev.backend()), "{}", dev.backend());
                if !uring {
                    assert!(dev.backend().starts_with("pread+"));
                }
                if !direct {
                    assert!(dev.backend().ends_with("+buffered"));
                }
                out.push((dev, dir.clone()));
            }
        }
    }
    out
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn aligned(data: &[u8]) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(data.len());
    b.copy_from_slice(data);
    b
}

#[test]
fn backend_is_one_of_four() {
    for (dev, _d) in devices("data") {
        assert!(BACKENDS.contains(&dev.backend()));
        assert_eq!(dev.stats().backend, dev.backend());
        assert_eq!(dev.page_size(), PS);
    }
    let d = tempfile::tempdir().unwrap();
    let dev = FileDevice::open(&d.path().join("data"), PS, true).unwrap();
    assert!(BACKENDS.contains(&dev.backend()));
    assert_eq!(dev.path(), d.path().join("data"));
    eprintln!(
        "backend chosen in {}: {}",
        d.path().display(),
        dev.backend()
    );
}

/// Completions polled (the default bound, and a bound too short for any request) or
/// awaited asleep (0) give the same data; the bound comes from `FLASHIX_IO_SPIN_US`.
#[test]
fn polled_and_sleeping_waits_round_trip() {
    use std::time::Duration;
    assert_eq!(spin_bound(None), Duration::from_micros(DEFAULT_SPIN_US));
    assert_eq!(spin_bound(Some(" 0 ")), Duration::ZERO);
    assert_eq!(spin_bound(Some("250")), Duration::from_micros(250));
    assert_eq!(
        spin_bound(Some("fast")),
        Duration::from_micros(DEFAULT_SPIN_US)
    );
    for spin in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(DEFAULT_SPIN_US),
    ] {
        for (mut dev, _d) in devices("spin") {
            dev.spin = spin;
            let data = aligned(&pattern(7, 16 * PS));
            dev.write(2, &data).unwrap();
            for p in 0..16u64 {
                let mut r = AlignedBuf::zeroed(PS);
                dev.read(2 + p, &mut r).unwrap();
                let at = p as usize * PS;
                assert_eq!(&r[..], &data[at..at + PS], "{} {spin:?}", dev.backend());
            }
        }
    }
}

#[test]
fn single_and_multi_page_round_trip() {
    for (mut dev, _d) in devices("data") {
        let one = aligned(&pattern(1, PS));
        dev.write(3, &one).unwrap();
        let many = aligned(&pattern(2, 128 * PS));
        dev.write(10, &many).unwrap();
        let mut r1 = AlignedBuf::zeroed(PS);
        dev.read(3, &mut r1).unwrap();
        assert_eq!(&r1[..], &one[..], "{}", dev.backend());
        let mut rm = AlignedBuf::zeroed(128 * PS);
        dev.read(10, &mut rm).unwrap();
        assert_eq!(&rm[..], &many[..], "{}", dev.backend());
        // Never-written pages inside the file read as zeros.
        let mut hole = AlignedBuf::zeroed(2 * PS);
        hole.fill(0xAA);
        dev.read(5, &mut hole).unwrap();
        assert!(hole.iter().all(|&b| b == 0));
        // Survives reopen.
        dev.sync().unwrap();
        let path = dev.path().to_path_buf();
        drop(dev);
        let mut dev = FileDevice::open(&path, PS, true).unwrap();
        let mut rm = AlignedBuf::zeroed(128 * PS);
        dev.read(10, &mut rm).unwrap();
        assert_eq!(&rm[..], &many[..]);
    }
}

#[test]
fn mixed_batch_of_40() {
    for (mut dev, _d) in devices("data") {
        // Pre-write pages 0..200 so the batch's reads have something to read.
        let base = aligned(&pattern(7, 200 * PS));
        dev.write(0, &base).unwrap();
        // 20 writes of 1..=4 pages at pages 300.. and 20 reads of 1..=3 pages from base.
        let wdata: Vec<(u64, AlignedBuf)> = (0..20u64)
            .map(|i| {
                (
                    300 + i * 8,
                    aligned(&pattern(100 + i, (1 + i as usize % 4) * PS)),
                )
            })
            .collect();
        let mut rbufs: Vec<(u64, AlignedBuf)> = (0..20u64)
            .map(|i| (i * 9, AlignedBuf::zeroed((1 + i as usize % 3) * PS)))
            .collect();
        {
            let mut batch: Vec<IoReq<'_>> = Vec::new();
            let mut rit = rbufs.iter_mut();
            for (p, b) in &wdata {
                batch.push(IoReq::Write { page: *p, buf: b });
                if let Some((rp, rb)) = rit.next() {
                    batch.push(IoReq::Read { page: *rp, buf: rb });
                }
            }
            assert_eq!(batch.len(), 40);
            dev.submit(&mut batch).unwrap();
        }
        for (p, b) in &rbufs {
            let s = *p as usize * PS;
            assert_eq!(&b[..], &base[s..s + b.len()], "{}", dev.backend());
        }
        for (p, b) in &wdata {
            let mut r = AlignedBuf::zeroed(b.len());
            dev.read(*p, &mut r).unwrap();
            assert_eq!(&r[..], &b[..], "{}", dev.backend());
        }
        let s = dev.stats();
        assert_eq!(s.max_queue_depth, 40);
    }
}

#[test]
fn batch_larger_than_ring() {
    for (mut dev, _d) in devices("data") {
        let bufs: Vec<AlignedBuf> = (0..150u64).map(|i| aligned(&pattern(i, PS))).collect();
        let mut batch: Vec<IoReq<'_>> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| IoReq::Write {
                page: (i as u64 * 7) % 151,
                buf: b,
            })
            .collect();
        dev.submit(&mut batch).unwrap();
        let mut outs: Vec<AlignedBuf> = (0..150).map(|_| AlignedBuf::zeroed(PS)).collect();
        let mut batch: Vec<IoReq<'_>> = outs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| IoReq::Read {
                page: (i as u64 * 7) % 151,
                buf: b,
            })
            .collect();
        dev.submit(&mut batch).unwrap();
        for (o, b) in outs.iter().zip(&bufs) {
            assert_eq!(&o[..], &b[..]);
        }
    }
}

#[test]
fn reads_past_eof_are_zero_filled() {
    for (mut dev, _d) in devices("data") {
        let data = aligned(&pattern(3, 2 * PS));
        dev.write(0, &data).unwrap();
        // Entirely past EOF.
        let mut r = AlignedBuf::zeroed(4 * PS);
        r.fill(0x55);
        dev.read(100, &mut r).unwrap();
        assert!(r.iter().all(|&b| b == 0));
        // Straddling EOF: first page real, rest zeros.
        let mut r = AlignedBuf::zeroed(4 * PS);
        r.fill(0x55);
        dev.read(1, &mut r).unwrap();
        assert_eq!(&r[..PS], &data[PS..]);
        assert!(r[PS..].iter().all(|&b| b == 0), "{}", dev.backend());
        // A read of an empty, fresh file.
        let d2 = tempfile::tempdir().unwrap();
        let mut fresh = FileDevice::open(&d2.path().join("x"), PS, true).unwrap();
        let mut r = AlignedBuf::zeroed(PS);
        r.fill(1);
        fresh.read(0, &mut r).unwrap();
        assert!(r.iter().all(|&b| b == 0));
    }
}

#[test]
fn unaligned_caller_buffers() {
    for (mut dev, _d) in devices("data") {
        let data = pattern(9, 3 * PS);
        let mut wv = vec![0u8; 3 * PS + 1];
        wv[1..].copy_from_slice(&data);
        let one = pattern(10, PS);
        let mut ov = vec![0u8; PS + 3];
        ov[3..].copy_from_slice(&one);
        {
            let mut batch = [
                IoReq::Write {
                    page: 4,
                    buf: &wv[1..],
                },
                IoReq::Write {
                    page: 20,
                    buf: &ov[3..],
                },
            ];
            dev.submit(&mut batch).unwrap();
        }
        let mut rv = vec![0u8; 3 * PS + 5];
        let mut rv2 = vec![0u8; PS + 7];
        {
            let mut batch = [
                IoReq::Read {
                    page: 4,
                    buf: &mut rv[5..],
                },
                IoReq::Read {
                    page: 20,
                    buf: &mut rv2[7..],
                },
            ];
            dev.submit(&mut batch).unwrap();
        }
        assert_eq!(&rv[5..], &data[..], "{}", dev.backend());
        assert_eq!(&rv2[7..], &one[..], "{}", dev.backend());
        // Single unaligned request through the one-request helpers too.
        let mut rv3 = vec![0u8; PS + 1];
        dev.read(5, &mut rv3[1..]).unwrap();
        assert_eq!(&rv3[1..], &data[PS..2 * PS]);
    }
}

#[test]
fn fallback_path_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let mut dev = FileDevice::open_with(&d.path().join("data"), PS, true, false).unwrap();
    assert!(dev.backend().starts_with("pread+"));
    let data = aligned(&pattern(11, 16 * PS));
    dev.write(2, &data).unwrap();
    let mut r = AlignedBuf::zeroed(20 * PS);
    dev.read(0, &mut r).unwrap();
    assert!(r[..2 * PS].iter().all(|&b| b == 0));
    assert_eq!(&r[2 * PS..18 * PS], &data[..]);
    assert!(r[18 * PS..].iter().all(|&b| b == 0));
    dev.sync().unwrap();
    dev.trim(2, 4).unwrap();
    let mut r = AlignedBuf::zeroed(4 * PS);
    dev.read(2, &mut r).unwrap();
    assert!(r.iter().all(|&b| b == 0));
    let s = dev.stats();
    assert_eq!(s.syncs, 1);
    assert_eq!(s.trims, 4);
}

#[test]
fn counters_requests_pages_and_sequentiality() {
    for (mut dev, _d) in devices("data") {
        let big = AlignedBuf::zeroed(128 * PS);
        dev.write(0, &big).unwrap();
        let s = dev.stats();
        assert_eq!(s.write_requests, 1);
        assert_eq!(s.writes, 128);
        assert_eq!(s.write_bytes, 128 * PS as u64);
        assert_eq!(s.random_writes, 1);
        dev.write(128, &big[..PS]).unwrap(); // starts where the previous write ended
        dev.write(5, &big[..PS]).unwrap(); // random
        let s = dev.stats();
        assert_eq!(s.sequential_writes, 1);
        assert_eq!(s.random_writes, 2);
        assert_eq!(s.write_requests, 3);
        assert_eq!(s.writes, 130);

        let mut r = AlignedBuf::zeroed(128 * PS);
        dev.read(0, &mut r).unwrap();
        dev.read(128, &mut r[..2 * PS]).unwrap();
        dev.read(7, &mut r[..PS]).unwrap();
        let s = dev.stats();
        assert_eq!(s.read_requests, 3);
        assert_eq!(s.reads, 131);
        assert_eq!(s.sequential_reads, 1);
        assert_eq!(s.random_reads, 2);
        assert_eq!(s.batches, 6);
        assert_eq!(s.max_queue_depth, 1);
    }
}

#[test]
fn invalid_requests_and_errors_name_the_file() {
    let d = tempfile::tempdir().unwrap();
    let mut dev = FileDevice::open(&d.path().join("data"), PS, true).unwrap();
    let mut short = vec![0u8; 100];
    assert!(matches!(
        dev.read(0, &mut short),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        FileDevice::open(&d.path().join("data"), 1000, true),
        Err(Error::InvalidOptions(_))
    ));
    // A path whose parent does not exist.
    let missing = d.path().join("no/such/dir/data");
    match FileDevice::open(&missing, PS, true) {
        Err(e @ Error::Io { .. }) => {
            assert!(e.to_string().contains("no/such/dir/data"), "{e}");
            assert!(!e.is_no_space());
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("opened a file in a missing directory"),
    }
}

/// The file grows ahead of the writes with zeros (no holes), never over data already
/// there, and what it wrote is counted apart from the requests.
#[test]
fn the_file_grows_ahead_of_writes_without_touching_data() {
    for (mut dev, dir) in devices("fill") {
        let path = dev.path().to_path_buf();
        let a = aligned(&pattern(1, PS));
        dev.write(3, &a).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, FILL_MIN_BYTES, "{}", dev.backend());
        let s = dev.stats();
        assert_eq!(s.fill_bytes, FILL_MIN_BYTES);
        assert_eq!(s.write_bytes, PS as u64, "zeros are not request bytes");
        // A write inside the grown part does not grow it.
        dev.write(100, &a).unwrap();
        assert_eq!(dev.stats().fill_bytes, FILL_MIN_BYTES);
        drop(dev);
        // Reopened on a file of one odd page count: growth starts at its end.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(FILL_MIN_BYTES + 3 * PS as u64).unwrap();
        drop(f);
        let mut dev = FileDevice::open(&path, PS, true).unwrap();
        let far = (FILL_MIN_BYTES / PS as u64) + 2;
        let b = aligned(&pattern(2, PS));
        dev.write(far, &b).unwrap();
        dev.write(far + 4000, &b).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len >= (far + 4001) * PS as u64, "{len}");
        for (page, want) in [(3, &a), (100, &a), (far, &b), (far + 4000, &b)] {
            let mut r = AlignedBuf::zeroed(PS);
            dev.read(page, &mut r).unwrap();
            assert_eq!(&r[..], &want[..], "page {page}");
        }
        let mut r = AlignedBuf::zeroed(PS);
        dev.read(far + 1, &mut r).unwrap();
        assert!(r.iter().all(|&x| x == 0));
        drop(dir);
    }
}

/// A started write past the written part grows it by itself: no zeros where it writes, and
/// the gap before it is filled only when a batch writes into it; a batch write past the
/// end grows the file ahead as before.
#[test]
fn a_started_write_grows_the_file_by_itself() {
    for (mut dev, dir) in devices("grow-started") {
        let chunk = 16 * PS;
        let a = aligned(&pattern(3, chunk));
        // At the end of the (empty) file: nothing to fill.
        let t = dev.start_write(0, a.clone(), chunk).unwrap();
        dev.finish(t).unwrap();
        assert_eq!(dev.stats().fill_bytes, 0, "{}", dev.backend());
        // Right after it, then 4 pages further: the 4-page gap is left (a hole).
        let t = dev.start_write(16, a.clone(), chunk).unwrap();
        dev.finish(t).unwrap();
        let t = dev.start_write(36, a.clone(), chunk).unwrap();
        dev.finish(t).unwrap();
        assert_eq!(dev.stats().fill_bytes, 0, "{}", dev.backend());
        let len = std::fs::metadata(dev.path()).unwrap().len();
        assert_eq!(len, 52 * PS as u64);
        for (page, want) in [(0, Some(&a)), (16, Some(&a)), (32, None), (36, Some(&a))] {
            let mut r = AlignedBuf::zeroed(if want.is_some() { chunk } else { 4 * PS });
            dev.read(page, &mut r).unwrap();
            match want {
                Some(w) => assert_eq!(&r[..], &w[..], "page {page}"),
                None => assert!(r.iter().all(|&x| x == 0), "the gap reads as zeros"),
            }
        }
        // A batch writing one page of the gap fills the whole gap first.
        let b = aligned(&pattern(4, PS));
        dev.write(33, &b).unwrap();
        assert_eq!(dev.stats().fill_bytes, 4 * PS as u64, "{}", dev.backend());
        for (page, zero) in [(32, true), (33, false), (34, true), (35, true)] {
            let mut r = AlignedBuf::zeroed(PS);
            dev.read(page, &mut r).unwrap();
            assert_eq!(r.iter().all(|&x| x == 0), zero, "page {page}");
        }
        // A gap a started write covers in part keeps only its uncovered part.
        let one = aligned(&pattern(5, PS));
        let t = dev.start_write(56, one.clone(), PS).unwrap();
        dev.finish(t).unwrap();
        let t = dev.start_write(53, one.clone(), PS).unwrap();
        dev.finish(t).unwrap();
        dev.write(52, &b).unwrap();
        // The gap was pages 52..56; page 53 was written, so it became 52 and 54..56, and
        // the batch writing page 52 fills that one page only.
        assert_eq!(dev.stats().fill_bytes, 5 * PS as u64, "{}", dev.backend());
        let mut r = AlignedBuf::zeroed(PS);
        dev.read(53, &mut r).unwrap();
        assert_eq!(
            &r[..],
            &one[..],
            "the started write's page is not overwritten"
        );
        // A batch write past the end grows the file ahead with zeros, as before: by at
        // least FILL_MIN_BYTES (1 MiB), to a whole MiB.
        dev.write(60, &b).unwrap();
        let grown = 2 * FILL_MIN_BYTES - 57 * PS as u64;
        assert_eq!(
            dev.stats().fill_bytes,
            5 * PS as u64 + grown,
            "{}",
            dev.backend()
        );
        drop(dir);
    }
}

/// The gaps a device remembers are bounded: past `MAX_GAPS`, a started write's gap is
/// filled at once.
#[test]
fn remembered_gaps_are_bounded() {
    for (mut dev, dir) in devices("gaps") {
        let one = aligned(&pattern(6, PS));
        // Each write leaves a one-page gap before it.
        for i in 0..MAX_GAPS as u64 + 3 {
            let t = dev.start_write(2 * i + 1, one.clone(), PS).unwrap();
            dev.finish(t).unwrap();
        }
        assert_eq!(dev.stats().fill_bytes, 3 * PS as u64, "{}", dev.backend());
        for page in [0, 2 * MAX_GAPS as u64 + 4] {
            let mut r = AlignedBuf::zeroed(PS);
            dev.read(page, &mut r).unwrap();
            assert!(r.iter().all(|&x| x == 0), "page {page}");
        }
        drop(dir);
    }
}

/// Started requests on every backend: many in flight at once (more than the ring's share
/// for them), written data read back by started reads and by a batch issued while writes
/// are in flight, buffers given back, a ticket dropped unfinished, counters.
#[test]
fn started_requests_overlap_and_are_seen_by_every_later_call() {
    for (mut dev, _dir) in devices("started") {
        let backend = dev.backend().to_string();
        // 40 writes of 3 pages each, all started before any is finished.
        let mut tickets = Vec::new();
        for i in 0..40u64 {
            let buf = aligned(&pattern(i, 3 * PS));
            tickets.push(dev.start_write(i * 3, buf, 3 * PS).unwrap());
        }
        for (i, t) in tickets.into_iter().enumerate() {
            let buf = dev.finish(t).unwrap();
            assert_eq!(&buf[..], &pattern(i as u64, 3 * PS)[..], "{backend}");
        }
        // Started reads of what was written, a prefix of a larger buffer.
        let mut tickets = Vec::new();
        for i in 0..40u64 {
            tickets.push(
                dev.start_read(i * 3, AlignedBuf::zeroed(4 * PS), 3 * PS)
                    .unwrap(),
            );
        }
        for (i, t) in tickets.into_iter().enumerate().rev() {
            let buf = dev.finish(t).unwrap();
            assert_eq!(buf.len(), 4 * PS);
            assert_eq!(&buf[..3 * PS], &pattern(i as u64, 3 * PS)[..], "{backend}");
        }
        // A write in flight, then a batch reading the same pages: the batch sees it.
        let t = dev
            .start_write(500, aligned(&pattern(99, 2 * PS)), 2 * PS)
            .unwrap();
        let mut back = vec![0u8; 2 * PS];
        dev.read(500, &mut back).unwrap();
        assert_eq!(back, pattern(99, 2 * PS), "{backend}");
        dev.finish(t).unwrap();
        // Started requests stay in flight beside a batch on other pages (the batch's
        // reaping keeps their completions) and are right when finished.
        let w = dev
            .start_write(700, aligned(&pattern(70, 8 * PS)), 8 * PS)
            .unwrap();
        let r = dev
            .start_read(0, AlignedBuf::zeroed(3 * PS), 3 * PS)
            .unwrap();
        let mut other = vec![0u8; 3 * PS];
        let mut batch = [
            IoReq::Read {
                page: 3,
                buf: &mut other,
            },
            IoReq::Write {
                page: 800,
                buf: &pattern(80, PS),
            },
        ];
        dev.submit(&mut batch).unwrap();
        assert_eq!(other, pattern(1, 3 * PS), "{backend}");
        assert_eq!(
            &dev.finish(r).unwrap()[..],
            &pattern(0, 3 * PS)[..],
            "{backend}"
        );
        dev.sync().unwrap();
        dev.finish(w).unwrap();
        let mut back = vec![0u8; 8 * PS];
        dev.read(700, &mut back).unwrap();
        assert_eq!(back, pattern(70, 8 * PS), "{backend}");
        // A ticket dropped unfinished: the write still lands, sync covers it.
        drop(dev.start_write(600, aligned(&pattern(7, PS)), PS).unwrap());
        dev.sync().unwrap();
        let mut back = vec![0u8; PS];
        dev.read(600, &mut back).unwrap();
        assert_eq!(back, pattern(7, PS), "{backend}");
        let s = dev.stats();
        assert_eq!(s.write_requests, 40 + 4, "{backend}");
        assert_eq!(s.writes, 40 * 3 + 2 + 8 + 1 + 1, "{backend}");
        assert_eq!(s.read_requests, 40 + 5, "{backend}");
        // Bad requests are refused before anything starts.
        assert!(dev.start_read(0, AlignedBuf::zeroed(PS), 2 * PS).is_err());
        assert!(dev.start_write(0, AlignedBuf::zeroed(PS), 100).is_err());
    }
}

/// A device dropped with requests in flight waits for them (the kernel never writes into
/// freed buffers), and the writes are in the file.
#[test]
fn a_device_dropped_with_started_writes_completes_them() {
    for (mut dev, _dir) in devices("started-drop") {
        let path = dev.path().to_path_buf();
        let backend = dev.backend().to_string();
        for i in 0..20u64 {
            let t = dev
                .start_write(i * 32, aligned(&pattern(i, 32 * PS)), 32 * PS)
                .unwrap();
            std::mem::forget(t);
        }
        drop(dev);
        let data = std::fs::read(&path).unwrap();
        for i in 0..20usize {
            let at = i * 32 * PS;
            assert_eq!(
                &data[at..at + 32 * PS],
                &pattern(i as u64, 32 * PS)[..],
                "{backend}"
            );
        }
    }
}

/// Adjacent requests of a batch go to the kernel as one vectored request
/// (`uring::coalesce_runs`): each still reads and writes its own buffer, across chunk
/// boundaries, beside bounced buffers, direction changes and gaps.
#[test]
fn adjacent_requests_of_a_batch_round_trip() {
    for (mut dev, _d) in devices("data") {
        // 70 one-page writes from separate buffers (two chunks of the ring), a two-page one
        // after them, a gap, and one from an unaligned buffer inside a run of its neighbours.
        let mut bufs: Vec<AlignedBuf> = (0..70).map(|i| aligned(&pattern(100 + i, PS))).collect();
        bufs.push(aligned(&pattern(200, 2 * PS)));
        let odd = pattern(300, PS);
        let mut oddv = vec![0u8; PS + 1];
        oddv[1..].copy_from_slice(&odd);
        {
            let mut batch: Vec<IoReq<'_>> = bufs
                .iter()
                .enumerate()
                .map(|(i, b)| IoReq::Write {
                    page: 10 + i as u64,
                    buf: &b[..],
                })
                .collect();
            batch.push(IoReq::Write {
                page: 82,
                buf: &oddv[1..],
            });
            dev.submit(&mut batch).unwrap();
        }
        // Read them back the same way, with a read of the gap and a write in between.
        let mut back: Vec<AlignedBuf> = (0..72).map(|_| AlignedBuf::zeroed(PS)).collect();
        let mut gap = AlignedBuf::zeroed(PS);
        gap.fill(0x55);
        let extra = aligned(&pattern(400, PS));
        {
            let (first, rest) = back.split_at_mut(35);
            let mut batch: Vec<IoReq<'_>> = first
                .iter_mut()
                .enumerate()
                .map(|(i, b)| IoReq::Read {
                    page: 10 + i as u64,
                    buf: &mut b[..],
                })
                .collect();
            batch.push(IoReq::Write {
                page: 90,
                buf: &extra[..],
            });
            batch.extend(rest.iter_mut().enumerate().map(|(i, b)| IoReq::Read {
                page: 45 + i as u64,
                buf: &mut b[..],
            }));
            batch.push(IoReq::Read {
                page: 83,
                buf: &mut gap[..],
            });
            dev.submit(&mut batch).unwrap();
        }
        for i in 0..70 {
            assert_eq!(
                &back[i][..],
                &bufs[i][..],
                "page {} {}",
                10 + i,
                dev.backend()
            );
        }
        assert_eq!(&back[70][..], &bufs[70][..PS], "{}", dev.backend());
        assert_eq!(&back[71][..], &bufs[70][PS..], "{}", dev.backend());
        assert!(gap.iter().all(|&b| b == 0), "{}", dev.backend());
        let mut r = AlignedBuf::zeroed(PS);
        dev.read(82, &mut r).unwrap();
        assert_eq!(&r[..], &odd[..], "{}", dev.backend());
        dev.read(90, &mut r).unwrap();
        assert_eq!(&r[..], &extra[..], "{}", dev.backend());
        // The counters count the requests as given (the two reads above included).
        let s = dev.stats();
        assert_eq!(s.write_requests, 73, "{}", dev.backend());
        assert_eq!(s.read_requests, 75, "{}", dev.backend());
    }
}

/// A run of adjacent reads that reaches past the end of the file: the vectored read is
/// short, and each request gets its part, the rest zero-filled.
#[test]
fn adjacent_reads_across_the_end_of_the_file() {
    for direct in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("data");
        let mut dev = FileDevice::open_with(&path, PS, direct, true).unwrap();
        dev.write(0, &aligned(&pattern(1, PS))).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len % PS as u64, 0);
        let last = len / PS as u64 - 1;
        let want = aligned(&pattern(2, PS));
        dev.write(last, &want).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        let mut back: Vec<AlignedBuf> = (0..4)
            .map(|_| {
                let mut b = AlignedBuf::zeroed(PS);
                b.fill(0x55);
                b
            })
            .collect();
        let mut batch: Vec<IoReq<'_>> = back
            .iter_mut()
            .enumerate()
            .map(|(i, b)| IoReq::Read {
                page: last + i as u64,
                buf: &mut b[..],
            })
            .collect();
        dev.submit(&mut batch).unwrap();
        assert_eq!(&back[0][..], &want[..], "{}", dev.backend());
        for b in &back[1..] {
            assert!(b.iter().all(|&x| x == 0), "{}", dev.backend());
        }
    }
}

/// A job handle (`Device::job_device`) reads and writes the same file on a ring of its own
/// and counts in its device's counters; the range it writes, reserved first
/// (`Device::reserve_writes`), is never filled with zeros as the device grows the file past
/// it, while an unreserved range would be.
#[test]
fn a_job_handle_writes_reserved_pages_beside_its_device() {
    for (mut dev, _d) in devices("data") {
        let Some(mut job) = dev.job_device().unwrap() else {
            assert!(dev.backend().starts_with("pread+"), "{}", dev.backend());
            continue;
        };
        assert!(
            job.job_device().unwrap().is_none(),
            "a job handle hands out none"
        );
        let first = aligned(&pattern(1, 4 * PS));
        dev.write(0, &first).unwrap();
        // Far past the part of the file the device has written (it grows by at least
        // FILL_MIN_BYTES, an eighth of itself, at a time).
        let at = 4 * (FILL_MIN_BYTES / PS as u64);
        let data = pattern(2, 8 * PS);
        dev.reserve_writes(at, 8).unwrap();
        let t = job.start_write(at, aligned(&data), 8 * PS).unwrap();
        job.finish(t).unwrap();
        // The device grows the file past the job's pages: they keep the job's bytes.
        dev.write(at + 64, &aligned(&pattern(3, PS))).unwrap();
        let mut back = AlignedBuf::zeroed(8 * PS);
        dev.read(at, &mut back).unwrap();
        assert_eq!(&back[..], &data[..], "{}", dev.backend());
        let t = job
            .start_read(0, AlignedBuf::zeroed(4 * PS), 4 * PS)
            .unwrap();
        assert_eq!(&job.finish(t).unwrap()[..], &first[..], "{}", dev.backend());
        let s = dev.stats();
        assert_eq!(
            (s.read_requests, s.write_requests),
            (2, 3),
            "{}",
            dev.backend()
        );
        assert_eq!(s.writes, 4 + 8 + 1, "{}", dev.backend());
        // Unreserved, the job's pages past the written part are the device's to grow
        // with zeros: the reservation is what keeps them.
        let far = at + 1024;
        let t = job.start_write(far, aligned(&data), 8 * PS).unwrap();
        job.finish(t).unwrap();
        dev.write(far + 64, &aligned(&pattern(4, PS))).unwrap();
        dev.read(far, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "{}", dev.backend());
        drop(job);
        // Pages between the device's written part and the reservation are still grown
        // with zeros before the device writes them.
        let mut gap = AlignedBuf::zeroed(PS);
        dev.read(at - 1, &mut gap).unwrap();
        assert!(gap.iter().all(|&b| b == 0), "{}", dev.backend());
    }
}

/// The reader handles write pages below the device's `shared_end` only: beside the
/// device, in place, the data read back by both; a write that would grow the file, or
/// reach a gap a started write left, is refused (nothing written) and left to the device,
/// which fills the gap first, so no handle's write is later overwritten with zeros.
#[test]
fn reader_handles_write_only_what_the_device_will_never_fill() {
    for (mut dev, dir) in devices("shared-writes") {
        let a = aligned(&pattern(7, 8 * PS));
        dev.write(0, &a).unwrap();
        let readers = dev.shared_reader().unwrap().unwrap();
        let end = dev.shared_end.load(std::sync::atomic::Ordering::Acquire);
        assert!(
            end >= 8 * PS as u64,
            "{}: written part {end}",
            dev.backend()
        );
        let b = aligned(&pattern(8, PS));
        let mut reqs = [IoReq::Write { page: 3, buf: &b }];
        assert!(readers.write_batch(&mut reqs).unwrap(), "{}", dev.backend());
        let mut r = AlignedBuf::zeroed(PS);
        dev.read(3, &mut r).unwrap();
        assert_eq!(
            &r[..],
            &b[..],
            "{}: the device reads the handle's write",
            dev.backend()
        );
        // Past what the device has written: refused, nothing written.
        let far = end / PS as u64 + 10;
        let mut reqs = [IoReq::Write { page: far, buf: &b }];
        assert!(
            !readers.write_batch(&mut reqs).unwrap(),
            "{}",
            dev.backend()
        );
        let len = std::fs::metadata(dev.path()).unwrap().len();
        assert!(
            len <= far * PS as u64,
            "{}: the handle grew the file",
            dev.backend()
        );
        // A gap left by a started write past the end caps what handles may write.
        let gap_start = end / PS as u64;
        let t = dev
            .start_write(gap_start + 4, aligned(&pattern(9, PS)), PS)
            .unwrap();
        dev.finish(t).unwrap();
        let mut reqs = [IoReq::Write {
            page: gap_start + 1,
            buf: &b,
        }];
        assert!(
            !readers.write_batch(&mut reqs).unwrap(),
            "{}: write into a gap",
            dev.backend()
        );
        drop(dir);
    }
    // A read-only device's handles never write.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ro");
    let mut w = FileDevice::open_with(&path, PS, false, false).unwrap();
    w.write(0, &aligned(&pattern(1, 4 * PS))).unwrap();
    drop(w);
    let mut ro = FileDevice::open_read_only(&path, PS).unwrap();
    let readers = ro.shared_reader().unwrap().unwrap();
    let b = aligned(&pattern(2, PS));
    let mut reqs = [IoReq::Write { page: 1, buf: &b }];
    assert!(!readers.write_batch(&mut reqs).unwrap());
}
