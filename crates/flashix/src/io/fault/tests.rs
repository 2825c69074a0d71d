//! Tests of the fault injector's durability model.

use super::*;
use crate::io::{MemDevice, MemVfs};
use std::collections::BTreeSet;

fn is_power_loss(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. }
        if source.kind() == std::io::ErrorKind::Other
            && source.to_string() == "simulated power loss")
}

fn errno_of(e: &Error) -> Option<i32> {
    match e {
        Error::Io { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

fn setup_dev(seed: u64, ps: usize) -> (Faults, MemDevice, FaultyDevice) {
    let f = Faults::new(seed);
    let mem = MemDevice::new(ps);
    let d = f.wrap_device(Box::new(mem.clone()));
    (f, mem, d)
}

fn setup_vfs(seed: u64, mem: &MemVfs) -> (Faults, FaultyVfs) {
    let f = Faults::new(seed);
    let v = f.wrap_vfs(Arc::new(mem.clone()));
    (f, v)
}

/// Page `p` of the storage behind `mem`, through a fresh handle (a reopen).
fn page(mem: &MemDevice, p: PageId) -> Vec<u8> {
    let mut d = mem.reopen();
    let mut b = vec![0u8; d.page_size()];
    d.read(p, &mut b).unwrap();
    b
}

fn fill(ps: usize, byte: u8) -> Vec<u8> {
    vec![byte; ps]
}

// 1. Unsynced device writes are dropped at a crash; synced ones survive.
#[test]
fn device_unsynced_writes_dropped_synced_survive() {
    let (f, mem, mut d) = setup_dev(1, 4096);
    d.write(0, &fill(4096, 0xA1)).unwrap();
    d.write(1, &fill(4096, 0xA2)).unwrap();
    d.sync().unwrap();
    d.write(0, &fill(4096, 0xB1)).unwrap(); // overwrite of a synced page
    d.write(0, &fill(4096, 0xC1)).unwrap(); // second overwrite before the sync
    d.write(2, &fill(4096, 0xB3)).unwrap(); // new page, never synced
                                            // Reads see the volatile data before the crash.
    let mut b = vec![0; 4096];
    d.read(0, &mut b).unwrap();
    assert_eq!(b, fill(4096, 0xC1));
    f.crash_now();
    assert!(f.crashed());
    assert_eq!(f.image_error(), None);
    assert_eq!(page(&mem, 0), fill(4096, 0xA1));
    assert_eq!(page(&mem, 1), fill(4096, 0xA2));
    assert_eq!(page(&mem, 2), fill(4096, 0));
}

#[test]
fn device_writes_synced_twice_survive_and_trim_is_durable_at_once() {
    let (f, mem, mut d) = setup_dev(2, 512);
    d.write(0, &fill(512, 1)).unwrap();
    d.sync().unwrap();
    d.write(0, &fill(512, 2)).unwrap();
    d.sync().unwrap();
    d.write(3, &fill(512, 3)).unwrap();
    d.sync().unwrap();
    d.write(3, &fill(512, 4)).unwrap(); // unsynced, then trimmed
    d.trim(3, 1).unwrap();
    d.write(4, &fill(512, 5)).unwrap();
    d.sync().unwrap();
    d.trim(4, 1).unwrap(); // synced, then trimmed without a sync
    assert_eq!(f.ticks(), 9, "trim does not tick");
    f.crash_now();
    assert_eq!(page(&mem, 0), fill(512, 2));
    assert_eq!(page(&mem, 3), fill(512, 0));
    assert_eq!(page(&mem, 4), fill(512, 0));
}

// 2. The torn last write: sectors are old or new, and both mixes appear across seeds.
#[test]
fn torn_device_write_mixes_old_and_new_sectors() {
    let ps = 4096;
    let mut mixed = 0;
    let mut all_old = 0;
    let mut all_new = 0;
    let (mut old_sectors, mut new_sectors) = (0, 0);
    let mut images = Vec::new();
    for seed in 0..64 {
        let (f, mem, mut d) = setup_dev(seed, ps);
        d.write(2, &fill(ps, 0x11)).unwrap();
        d.sync().unwrap();
        d.write(5, &fill(ps, 0x55)).unwrap(); // unsynced: dropped
        f.crash_after(1);
        let e = d.write(2, &fill(ps, 0x22)).unwrap_err();
        assert!(is_power_loss(&e), "{e}");
        assert_eq!(f.ticks(), 4);
        assert_eq!(page(&mem, 5), fill(ps, 0));
        let p = page(&mem, 2);
        let mut news = 0;
        for s in p.chunks(SECTOR) {
            if s == &fill(SECTOR, 0x22)[..] {
                news += 1;
            } else {
                assert_eq!(
                    s,
                    &fill(SECTOR, 0x11)[..],
                    "seed {seed}: a sector is neither"
                );
            }
        }
        new_sectors += news;
        old_sectors += 8 - news;
        match news {
            0 => all_old += 1,
            8 => all_new += 1,
            _ => mixed += 1,
        }
        images.push(p);
    }
    // 8 sectors: nearly every seed mixes; both kinds of sector occur.
    assert!(mixed > 0, "mixed {mixed}");
    assert!(all_old + all_new < 64);
    assert!(old_sectors > 0 && new_sectors > 0);
    // The same seed gives the same image.
    let distinct: BTreeSet<&Vec<u8>> = images.iter().collect();
    assert!(distinct.len() > 2);
    let (f, mem, mut d) = setup_dev(0, ps);
    d.write(2, &fill(ps, 0x11)).unwrap();
    d.sync().unwrap();
    d.write(5, &fill(ps, 0x55)).unwrap();
    f.crash_after(1);
    assert!(d.write(2, &fill(ps, 0x22)).is_err());
    assert_eq!(page(&mem, 2), images[0]);
}

#[test]
fn torn_request_inside_a_batch() {
    let ps = 512;
    let mut seen_new = false;
    let mut seen_old = false;
    for seed in 0..32 {
        let (f, mem, mut d) = setup_dev(seed, ps);
        d.write(1, &[7u8; 1024]).unwrap();
        d.sync().unwrap();
        f.crash_after(2);
        let a = fill(ps, 0xAA);
        let b = [0xBBu8; 1024];
        let c = fill(ps, 0xCC);
        let mut batch = [
            IoReq::Write { page: 0, buf: &a },
            IoReq::Write { page: 1, buf: &b },
            IoReq::Write { page: 3, buf: &c },
        ];
        let e = d.submit(&mut batch).unwrap_err();
        assert!(is_power_loss(&e));
        assert_eq!(f.ticks(), 4);
        assert_eq!(page(&mem, 0), fill(ps, 0), "earlier request unsynced");
        assert_eq!(page(&mem, 3), fill(ps, 0), "later request never ran");
        for p in [1, 2] {
            let got = page(&mem, p);
            if got == fill(ps, 0xBB) {
                seen_new = true;
            } else {
                assert_eq!(got, fill(ps, 7));
                seen_old = true;
            }
        }
    }
    assert!(seen_new && seen_old);
}

// 3. Vfs durability.
#[test]
fn vfs_unsynced_appends_dropped_synced_survive() {
    let mem = MemVfs::new();
    let (f, v) = setup_vfs(3, &mem);
    v.create("wal").unwrap();
    v.sync_dir().unwrap();
    v.append("wal", &[1u8; 600]).unwrap();
    v.sync("wal").unwrap();
    v.append("wal", &[2u8; 900]).unwrap();
    assert_eq!(v.len("wal").unwrap(), 1500);
    f.crash_now();
    assert_eq!(mem.read("wal").unwrap(), vec![1u8; 600]);
}

#[test]
fn vfs_created_file_without_dir_sync_is_empty_or_absent() {
    let mem = MemVfs::new();
    let (f, v) = setup_vfs(4, &mem);
    v.create("c").unwrap();
    v.append("c", b"cccc").unwrap();
    v.sync("c").unwrap();
    v.sync_dir().unwrap();
    v.create("b").unwrap();
    v.append("b", b"bbbb").unwrap();
    v.sync_dir().unwrap(); // the name is durable, contents are not
    v.create("a").unwrap();
    v.append("a", b"aaaa").unwrap();
    v.sync("a").unwrap(); // contents synced, the name is not
    assert_eq!(v.list().unwrap(), vec!["a", "b", "c"]);
    f.crash_now();
    assert_eq!(mem.list().unwrap(), vec!["b".to_string(), "c".to_string()]);
    assert_eq!(mem.read("b").unwrap(), b"");
    assert_eq!(mem.read("c").unwrap(), b"cccc");
}

#[test]
fn torn_append_is_a_512_aligned_prefix() {
    let x = vec![0x58u8; 700];
    let y: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let mut lens = BTreeSet::new();
    for seed in 0..64 {
        let mem = MemVfs::new();
        let (f, v) = setup_vfs(seed, &mem);
        v.create("wal").unwrap();
        v.append("wal", &x).unwrap();
        v.sync("wal").unwrap();
        v.sync_dir().unwrap();
        f.crash_after(1);
        assert!(is_power_loss(&v.append("wal", &y).unwrap_err()));
        let got = mem.read("wal").unwrap();
        let n = got.len();
        assert!(
            n == 700 || n == 2700 || (n % 512 == 0 && n > 700 && n < 2700),
            "{n}"
        );
        assert_eq!(&got[..700], &x[..]);
        assert_eq!(&got[700..], &y[..n - 700]);
        lens.insert(n);
    }
    assert!(lens.contains(&700) && lens.contains(&2700), "{lens:?}");
    assert!(lens.iter().any(|&n| n != 700 && n != 2700), "{lens:?}");
}

#[test]
fn rename_and_remove_need_sync_dir() {
    let mem = MemVfs::new();
    mem.put("x", b"X".to_vec());
    mem.put("y", b"Y".to_vec());
    mem.put("z", b"Z".to_vec());
    let (f, v) = setup_vfs(5, &mem);
    v.rename("x", "y").unwrap(); // replaces y, not durable
    v.remove("z").unwrap(); // not durable
    assert_eq!(v.list().unwrap(), vec!["y".to_string()]);
    f.crash_now();
    assert_eq!(mem.list().unwrap(), vec!["x", "y", "z"]);
    assert_eq!(mem.read("x").unwrap(), b"X");
    assert_eq!(mem.read("y").unwrap(), b"Y");
    assert_eq!(mem.read("z").unwrap(), b"Z");

    let mem = MemVfs::new();
    mem.put("x", b"X".to_vec());
    mem.put("y", b"Y".to_vec());
    mem.put("z", b"Z".to_vec());
    let (f, v) = setup_vfs(5, &mem);
    v.rename("x", "y").unwrap();
    v.remove("z").unwrap();
    v.sync_dir().unwrap();
    v.append("y", b"more").unwrap(); // unsynced
    f.crash_now();
    assert_eq!(mem.list().unwrap(), vec!["y"]);
    assert_eq!(mem.read("y").unwrap(), b"X");
}

#[test]
fn unsynced_truncate_and_recreate_are_undone() {
    let d: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let mem = MemVfs::new();
    mem.put("f", d.clone());
    mem.put("g", d.clone());
    let (f, v) = setup_vfs(6, &mem);
    v.append("f", b"tail").unwrap();
    v.truncate("f", 100).unwrap();
    v.append("f", b"zzz").unwrap();
    v.truncate("f", 50).unwrap();
    v.create("g").unwrap();
    v.append("g", b"new").unwrap();
    assert_eq!(v.read("f").unwrap(), &d[..50]);
    f.crash_now();
    assert_eq!(mem.read("f").unwrap(), d);
    assert_eq!(mem.read("g").unwrap(), d);
}

/// Write MANIFEST through a temporary file; `sync_tmp` false is the classic bug.
fn replace_manifest(v: &FaultyVfs, new: &[u8], sync_tmp: bool) -> Result<()> {
    v.create("MANIFEST.tmp")?;
    v.append("MANIFEST.tmp", new)?;
    if sync_tmp {
        v.sync("MANIFEST.tmp")?;
    }
    v.rename("MANIFEST.tmp", "MANIFEST")?;
    v.sync_dir()
}

#[test]
fn manifest_replacement_is_atomic_at_every_tick() {
    let old = vec![0x0Fu8; 1300];
    let new = vec![0xF0u8; 1500];
    let mut seen = BTreeSet::new();
    for seed in 0..16 {
        for t in 1..=5 {
            let mem = MemVfs::new();
            mem.put("MANIFEST", old.clone());
            let (f, v) = setup_vfs(seed, &mem);
            f.crash_after(t);
            let e = replace_manifest(&v, &new, true).unwrap_err();
            assert!(is_power_loss(&e));
            assert_eq!(f.ticks(), t);
            let got = mem.read("MANIFEST").unwrap();
            assert!(got == old || got == new, "seed {seed} tick {t}: a mix");
            seen.insert(got == new);
        }
    }
    assert_eq!(seen.len(), 2, "both old and new must occur");

    // Without the sync of the temporary file, some crash leaves an empty MANIFEST:
    // the model must catch the bug.
    let mut caught = false;
    for seed in 0..16 {
        for t in 1..=4 {
            let mem = MemVfs::new();
            mem.put("MANIFEST", old.clone());
            let (f, v) = setup_vfs(seed, &mem);
            f.crash_after(t);
            assert!(replace_manifest(&v, &new, false).is_err());
            let got = mem.read("MANIFEST").unwrap();
            caught |= got != old && got != new;
        }
    }
    assert!(caught);
}

// 4. One clock over the device and the vfs.
fn mixed_history(d: &mut FaultyDevice, v: &FaultyVfs) -> Vec<Result<()>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 512];
    out.push(d.write(0, &[1u8; 512])); // tick 1
    out.push(v.create("f")); // tick 2
    out.push(d.read(0, &mut buf)); // no tick
    out.push(v.append("f", b"hello")); // tick 3
    out.push(d.sync()); // tick 4
    out.push(v.read("f").map(|_| ())); // no tick
    out.push(v.sync("f")); // tick 5
    out.push(d.write(1, &[2u8; 512])); // tick 6
    out.push(v.sync_dir()); // tick 7
    out
}

#[test]
fn one_clock_over_device_and_vfs() {
    let f = Faults::new(9);
    let mut d = f.wrap_device(Box::new(MemDevice::new(512)));
    let v = f.wrap_vfs(Arc::new(MemVfs::new()));
    assert!(mixed_history(&mut d, &v).iter().all(|r| r.is_ok()));
    assert_eq!(f.ticks(), 7);

    // Index in the history of the op that carries each tick.
    let tick_op = [0, 1, 3, 4, 6, 7, 8];
    for n in 1..=7u64 {
        let f = Faults::new(n);
        let mem = MemDevice::new(512);
        let vmem = MemVfs::new();
        let mut d = f.wrap_device(Box::new(mem.clone()));
        let v = f.wrap_vfs(Arc::new(vmem.clone()));
        f.crash_after(n);
        let res = mixed_history(&mut d, &v);
        let at = tick_op[n as usize - 1];
        for (i, r) in res.iter().enumerate() {
            assert_eq!(r.is_ok(), i < at, "crash_after({n}): op {i}");
            if let Err(e) = r {
                assert!(is_power_loss(e));
            }
        }
        assert_eq!(f.ticks(), n);
        // The device sync (tick 4) makes page 0 durable, whichever side crashed.
        let p0 = page(&mem, 0);
        if n >= 4 {
            assert_eq!(p0, vec![1u8; 512], "n {n}");
        } else if n >= 2 {
            assert_eq!(p0, vec![0u8; 512], "n {n}");
        }
        // Page 1 is written only at tick 6 and never synced: it survives only as the torn
        // crash-point write of a crash at tick 6 (one sector: all new or all old).
        let p1 = page(&mem, 1);
        if n == 6 {
            assert!(p1 == vec![0u8; 512] || p1 == vec![2u8; 512], "n {n}");
        } else {
            assert_eq!(p1, vec![0u8; 512], "n {n}");
        }
        // Only the final sync_dir (tick 7, which takes effect) makes "f" exist.
        if n == 7 {
            assert_eq!(vmem.read("f").unwrap(), b"hello");
        } else if n != 2 {
            // (At n = 2 the crash-point create is applied or not.)
            assert!(!vmem.exists("f").unwrap(), "n {n}");
        }
    }
}

// 5. Injected failures.
#[test]
fn eio_on_second_device_write_has_no_effect() {
    let (f, mem, mut d) = setup_dev(10, 512);
    f.fail_nth(OpKind::DeviceWrite, 2, libc::EIO, false);
    d.write(0, &fill(512, 1)).unwrap();
    let e = d.write(1, &fill(512, 2)).unwrap_err();
    assert_eq!(errno_of(&e), Some(libc::EIO), "{e}");
    assert!(!e.is_no_space());
    assert_eq!(
        page(&mem, 1),
        fill(512, 0),
        "the failed write had no effect"
    );
    assert_eq!(f.ticks(), 1, "a failed op does not tick");
    d.write(1, &fill(512, 3)).unwrap(); // not sticky
    assert_eq!(page(&mem, 1), fill(512, 3));
    assert!(!f.crashed());
    let s = d.stats();
    assert_eq!((s.write_requests, s.reads), (2, 0));
}

#[test]
fn failure_inside_a_batch_stops_it_there() {
    let (f, mem, mut d) = setup_dev(11, 512);
    f.fail_nth(OpKind::AnyWrite, 2, libc::EIO, false);
    let (a, b, c) = (fill(512, 1), fill(512, 2), fill(512, 3));
    let mut batch = [
        IoReq::Write { page: 0, buf: &a },
        IoReq::Write { page: 1, buf: &b },
        IoReq::Write { page: 2, buf: &c },
    ];
    let e = d.submit(&mut batch).unwrap_err();
    assert_eq!(errno_of(&e), Some(libc::EIO));
    assert_eq!(page(&mem, 0), a);
    assert_eq!(page(&mem, 1), fill(512, 0));
    assert_eq!(page(&mem, 2), fill(512, 0));
    f.fail_nth(OpKind::DeviceRead, 1, libc::EIO, false);
    let mut buf = vec![0u8; 512];
    assert_eq!(errno_of(&d.read(0, &mut buf).unwrap_err()), Some(libc::EIO));
    d.read(0, &mut buf).unwrap();
    assert_eq!(buf, a);
    f.fail_nth(OpKind::AnySync, 1, libc::EIO, false);
    assert_eq!(errno_of(&d.sync().unwrap_err()), Some(libc::EIO));
    d.sync().unwrap();
}

#[test]
fn sticky_enospc_on_vfs_writes() {
    let mem = MemVfs::new();
    mem.put("f", b"f".to_vec());
    let (f, v) = setup_vfs(12, &mem);
    f.fail_nth(OpKind::VfsWrite, 1, libc::ENOSPC, true);
    let errs = [
        v.create("a").unwrap_err(),
        v.append("f", b"x").unwrap_err(),
        v.truncate("f", 0).unwrap_err(),
        v.rename("f", "g").unwrap_err(),
        v.remove("f").unwrap_err(),
        v.create("b").unwrap_err(),
    ];
    for e in &errs {
        assert!(e.is_no_space(), "{e}");
        assert_eq!(errno_of(e), Some(libc::ENOSPC));
    }
    assert_eq!(mem.list().unwrap(), vec!["f"]);
    assert_eq!(mem.read("f").unwrap(), b"f");
    v.sync("f").unwrap(); // syncs are not VfsWrite
    v.sync_dir().unwrap();
    assert_eq!(f.ticks(), 2);
    f.clear_failures();
    v.create("a").unwrap();
    assert!(mem.exists("a").unwrap());
}

/// Vfs reads (`read`, `len`, `exists`, `list`) count and fail as `VfsRead` and `AnyRead`,
/// never as device reads; `fired` counts each failure once, sticky ones included.
#[test]
fn vfs_reads_fail_as_vfs_read_and_any_read() {
    let mem = MemVfs::new();
    mem.put("f", b"abc".to_vec());
    let (f, v) = setup_vfs(14, &mem);
    let mut d = f.wrap_device(Box::new(MemDevice::new(512)));
    f.fail_nth(OpKind::VfsRead, 2, libc::EIO, false);
    assert_eq!(v.read("f").unwrap(), b"abc");
    assert_eq!(errno_of(&v.len("f").unwrap_err()), Some(libc::EIO));
    assert_eq!(v.len("f").unwrap(), 3);
    assert_eq!(f.fired(), 1);
    f.fail_nth(OpKind::AnyRead, 1, libc::ENOSPC, true);
    let errs = [
        v.exists("f").unwrap_err(),
        v.list().unwrap_err(),
        v.read("f").unwrap_err(),
        d.read(0, &mut [0u8; 512]).unwrap_err(),
    ];
    for e in &errs {
        assert_eq!(errno_of(e), Some(libc::ENOSPC), "{e}");
    }
    assert_eq!(f.fired(), 2);
    // Writes and syncs are not reads; a device read failure is not a vfs read's.
    v.append("f", b"d").unwrap();
    v.sync("f").unwrap();
    f.clear_failures();
    f.fail_nth(OpKind::DeviceRead, 1, libc::EIO, false);
    assert_eq!(v.read("f").unwrap(), b"abcd");
    assert_eq!(f.fired(), 2);
    assert_eq!(
        errno_of(&d.read(0, &mut [0u8; 512]).unwrap_err()),
        Some(libc::EIO)
    );
    assert_eq!(f.fired(), 3);
}
// 6. After a crash every operation fails.
#[test]
fn every_op_fails_after_a_crash() {
    let f = Faults::new(13);
    let mut d = f.wrap_device(Box::new(MemDevice::new(512)));
    let vmem = MemVfs::new();
    vmem.put("f", b"f".to_vec());
    let v = f.wrap_vfs(Arc::new(vmem));
    f.crash_after(2);
    d.write(0, &[1; 512]).unwrap();
    assert!(is_power_loss(&v.append("f", b"x").unwrap_err()));
    assert!(f.crashed());
    let mut buf = vec![0u8; 512];
    let dev: Vec<Error> = vec![
        d.read(0, &mut buf).unwrap_err(),
        d.write(0, &buf).unwrap_err(),
        d.sync().unwrap_err(),
        d.trim(0, 1).unwrap_err(),
    ];
    let vfs: Vec<Error> = vec![
        v.create("g").unwrap_err(),
        v.append("f", b"x").unwrap_err(),
        v.read("f").unwrap_err(),
        v.len("f").unwrap_err(),
        v.truncate("f", 0).unwrap_err(),
        v.sync("f").unwrap_err(),
        v.rename("f", "g").unwrap_err(),
        v.remove("f").unwrap_err(),
        v.exists("f").unwrap_err(),
        v.list().unwrap_err(),
        v.sync_dir().unwrap_err(),
    ];
    for e in dev.iter().chain(vfs.iter()) {
        assert!(is_power_loss(e), "{e}");
    }
    assert_eq!(f.ticks(), 2, "nothing ticks after the crash");
    // Failures and crash plans after the crash change nothing.
    f.crash_after(1);
    f.fail_nth(OpKind::DeviceSync, 1, libc::EIO, false);
    assert!(is_power_loss(&d.sync().unwrap_err()));
}

// 7. Two injectors in parallel do not interfere.
#[test]
fn injectors_are_independent() {
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let run = |crash: Option<u64>, seed: u64| {
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            let f = Faults::new(seed);
            let mem = MemDevice::new(512);
            let mut d = f.wrap_device(Box::new(mem.clone()));
            let v = f.wrap_vfs(Arc::new(MemVfs::new()));
            if let Some(n) = crash {
                f.crash_after(n);
            }
            barrier.wait();
            let mut ok = 0u64;
            for i in 0..500u64 {
                let r = if i % 2 == 0 {
                    d.write(i % 7, &[i as u8; 512])
                } else {
                    v.create(&format!("f{}", i % 5))
                };
                if r.is_ok() {
                    ok += 1;
                }
            }
            (ok, f.ticks(), f.crashed())
        })
    };
    let a = run(Some(300), 1);
    let b = run(None, 2);
    assert_eq!(a.join().unwrap(), (299, 300, true));
    assert_eq!(b.join().unwrap(), (500, 500, false));
}

#[test]
fn plan_replays_the_same_image() {
    let plan = FaultPlan {
        seed: 77,
        crash_after: Some(3),
        failures: vec![FailSpec {
            kind: OpKind::DeviceWrite,
            n: 1,
            errno: libc::EIO,
            sticky: false,
        }],
    };
    let image = || {
        let f = Faults::with_plan(&plan);
        let mem = MemDevice::new(4096);
        let mut d = f.wrap_device(Box::new(mem.clone()));
        assert!(d.write(0, &[1; 4096]).is_err()); // injected, no tick
        d.write(0, &[1; 4096]).unwrap(); // tick 1
        d.sync().unwrap(); // tick 2
        assert!(d.write(0, &[2; 4096]).is_err()); // tick 3: torn
        page(&mem, 0)
    };
    assert_eq!(image(), image());
}
