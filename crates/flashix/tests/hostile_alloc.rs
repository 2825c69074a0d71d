//! Hostile manifests: for every engine, every number of a valid
//! manifest (options record, allocator state, engine state) in turn set to 0, `u32::MAX`,
//! 2^60 and `u64::MAX` under a valid checksum. `open` and the first reads return a value or
//! an error, never panic, and never allocate by such a claim: a counting global allocator
//! measures the peak heap of each open (this binary holds one test, so nothing else
//! allocates meanwhile), which must stay below a small bound, far below what any claim
//! would take (an allocation of 2^60 entries would abort the process).
//!
//! The manifest is rewritten in its documented format (`durable::manifest`): magic (8),
//! version (4), body length (4), crc32c over bytes 8..16 and the body (4), the JSON body.

use flashix::io::{MemDevice, MemVfs, Storage, Vfs};
use flashix::sim::NandConfig;
use flashix::{Db, DeviceSpec, EngineKind, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let now = CURRENT.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap an open and a few reads may take over what was live before: the pool of the
/// options below (64 KiB), the engine's structures and the WAL replay, with a wide margin.
const BOUND: usize = 16 << 20;

fn options(kind: EngineKind) -> Options {
    let o = Options::new(kind)
        .page_size(2048)
        .buffer_pool_bytes(64 << 10);
    match kind {
        // Eight frames of a node and a log sector each.
        EngineKind::IplBTree | EngineKind::DiplBTree => {
            o.buffer_pool_bytes(80 << 10)
                .device(DeviceSpec::RawNand(NandConfig {
                    page_bytes: 2048,
                    pages_per_block: 16,
                    blocks: 64,
                    ..NandConfig::default()
                }))
        }
        _ => o,
    }
}

fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
    Storage {
        device: Box::new(dev.reopen()),
        vfs: Arc::new(vfs.clone()),
    }
}

/// JSON pointers of every number in `v`.
fn numbers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(_) => out.push(at),
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers(x, format!("{at}/{i}"), out);
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                numbers(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// The manifest `header` (its first 20 bytes) with `body`, checksummed.
fn manifest(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = header[..16].to_vec();
    out[12..16].copy_from_slice(&(body.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[8..16]), body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn hostile_numbers_in_a_manifest_open_or_fail_cleanly_within_a_small_heap() {
    let mut cases = 0;
    let mut panics = Vec::new();
    let mut worst = (0usize, String::new());
    for kind in EngineKind::ALL {
        let dev = MemDevice::new(2048);
        let vfs = MemVfs::new();
        let db = Db::create_on(storage(&dev, &vfs), options(kind)).unwrap();
        for k in 0..300u64 {
            db.insert(k * 7919 % 1000, k).unwrap();
        }
        db.close().unwrap();
        let good = vfs.read("MANIFEST").unwrap();
        let body: serde_json::Value = serde_json::from_slice(&good[20..]).unwrap();
        let mut paths = Vec::new();
        numbers(&body, String::new(), &mut paths);
        for path in &paths {
            for value in [0, u32::MAX as u64, 1u64 << 60, u64::MAX] {
                let mut j = body.clone();
                *j.pointer_mut(path).unwrap() = serde_json::Value::from(value);
                let bytes = manifest(&good, &serde_json::to_vec(&j).unwrap());
                vfs.create("MANIFEST").unwrap();
                vfs.append("MANIFEST", &bytes).unwrap();
                cases += 1;
                let base = CURRENT.load(Ordering::Relaxed);
                PEAK.store(base, Ordering::Relaxed);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if let Ok(db) = Db::open_on(storage(&dev, &vfs)) {
                        let _ = db.get(7);
                        if let Ok(r) = db.range(..) {
                            for kv in r.take(2000) {
                                if kv.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                }));
                if r.is_err() {
                    panics.push(format!("{kind} {path} = {value}"));
                }
                let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
                if peak > worst.0 {
                    worst = (peak, format!("{kind} {path} = {value}"));
                }
                assert!(
                    peak < BOUND,
                    "{kind}: {path} = {value}: open took {peak} bytes of heap"
                );
            }
        }
        vfs.create("MANIFEST").unwrap();
        vfs.append("MANIFEST", &good).unwrap();
    }
    eprintln!("{cases} hostile manifests; largest heap of an open: {worst:?}");
    assert!(cases > 100);
    assert!(panics.is_empty(), "panics: {panics:#?}");
}
