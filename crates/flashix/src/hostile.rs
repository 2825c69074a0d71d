//! Hostile and damaged bytes for the decoders of on-disk bytes (issue 18, item 4;
//! DESIGN.md, Contracts 4 and 6): the strategies every decoder's property test draws from.
//!
//! Each decoder of on-disk bytes has a property test next to it (in its module's `tests`)
//! that feeds it (a) random bytes and (b) a valid encoding with [`Damage`] applied, and
//! asserts that it returns a corruption error or a valid value and never panics. Damage is
//! what a bad medium or a hostile file does: bit flips, a cut or an extended tail, and
//! length or count fields overwritten with hostile values (0, `u32::MAX`, 2^60, ...). Page
//! formats are also damaged and then *re-sealed* ([`reseal`]), so that the checksum passes
//! and the structural checks behind it are what is tested, as against a file forged on
//! purpose. Allocation bounds: a count the bytes cannot hold must be refused before it
//! sizes an allocation; the tests with counts of 2^60 would abort on a
//! `Vec::with_capacity` driven by it.
//!
//! Cases per property: [`config`] (small in CI, more with `FLASHIX_CONFORMANCE_LONG=1`).

use proptest::prelude::*;

/// Cases per property: 64 by default (the whole set runs in a few seconds in a debug
/// build), 2048 in the long mode.
pub fn config() -> ProptestConfig {
    let long = std::env::var_os("FLASHIX_CONFORMANCE_LONG").is_some();
    ProptestConfig {
        cases: if long { 2048 } else { 64 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One change to a valid encoding. Offsets are taken modulo the length when applied.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Flip one bit.
    Flip { at: usize, bit: u8 },
    /// Overwrite a little-endian u32 (a length or count field).
    Field32 { at: usize, value: u32 },
    /// Overwrite a little-endian u64.
    Field64 { at: usize, value: u64 },
    /// Overwrite a run of bytes with one value.
    Fill { at: usize, len: usize, byte: u8 },
    /// Cut the tail off at `at` (streams only).
    Truncate { at: usize },
    /// Append bytes (streams only).
    Extend(Vec<u8>),
}

/// Values a hostile count or length field takes.
pub fn hostile_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        Just(u32::MAX / 2 + 1),
        Just(u16::MAX as u32),
        any::<u32>(),
    ]
}

/// Values a hostile u64 field takes.
pub fn hostile_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(1u64 << 60),
        Just(u32::MAX as u64),
        Just(i64::MAX as u64 + 1),
        any::<u64>(),
    ]
}

fn one_damage(stream: bool) -> BoxedStrategy<Damage> {
    let fixed = prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        2 => (any::<usize>(), hostile_u32()).prop_map(|(at, value)| Damage::Field32 { at, value }),
        2 => (any::<usize>(), hostile_u64()).prop_map(|(at, value)| Damage::Field64 { at, value }),
        1 => (any::<usize>(), 1usize..64, any::<u8>())
            .prop_map(|(at, len, byte)| Damage::Fill { at, len, byte }),
    ];
    if !stream {
        return fixed.boxed();
    }
    prop_oneof![
        6 => fixed,
        1 => any::<usize>().prop_map(|at| Damage::Truncate { at }),
        1 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Extend),
    ]
    .boxed()
}

/// One to four changes; `stream` allows changes of the length (a file or a record read
/// whole). Pages keep their size: the device hands whole pages to their decoders.
pub fn damage(stream: bool) -> impl Strategy<Value = Vec<Damage>> {
    proptest::collection::vec(one_damage(stream), 1..5)
}

/// Apply `damage` to `b`.
pub fn apply(b: &mut Vec<u8>, damage: &[Damage]) {
    for d in damage {
        if b.is_empty() {
            if let Damage::Extend(x) = d {
                b.extend_from_slice(x);
            }
            continue;
        }
        let n = b.len();
        match d {
            Damage::Flip { at, bit } => b[at % n] ^= 1 << bit,
            Damage::Field32 { at, value } => put(b, at % n, &value.to_le_bytes()),
            Damage::Field64 { at, value } => put(b, at % n, &value.to_le_bytes()),
            Damage::Fill { at, len, byte } => {
                let s = at % n;
                let e = (s + len).min(n);
                b[s..e].fill(*byte);
            }
            Damage::Truncate { at } => b.truncate(at % n),
            Damage::Extend(x) => b.extend_from_slice(x),
        }
    }
}

/// Overwrite at `at` what fits of `v`.
fn put(b: &mut [u8], at: usize, v: &[u8]) {
    let e = (at + v.len()).min(b.len());
    b[at..e].copy_from_slice(&v[..e - at]);
}

/// Seal a damaged page again for `pid`, so that it passes its envelope check (a forged
/// page).
pub fn reseal(pid: u64, b: &mut [u8]) {
    crate::page::seal(pid, b);
}

/// Random bytes of `len`.
pub fn random_bytes(len: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), len)
}

/// Random bytes of any length up to `max`.
pub fn random_stream(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// True for the corruption error (the only error a decoder may give for bad bytes).
pub fn is_corruption(e: &crate::Error) -> bool {
    matches!(e, crate::Error::Corruption { .. })
}

/// The outcome a decoder of damaged bytes may have: a value, or [`crate::Error::Corruption`].
pub fn ok_or_corruption<T>(r: crate::Result<T>) -> Result<(), String> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if is_corruption(&e) => Ok(()),
        Err(e) => Err(format!("not a corruption error: {e:?}")),
    }
}

/// Run `decode` on pages: random bytes of the page's size (with a forged envelope for
/// `pid` half of the time) and copies of `valid` with [`damage`], re-sealed for `pid`
/// half of the time. `decode` returns `Err` for an outcome the property forbids (see
/// [`ok_or_corruption`]); a panic fails too. `valid` itself must pass.
pub fn fuzz_page(name: &str, pid: u64, valid: &[u8], decode: impl Fn(&[u8]) -> Result<(), String>) {
    if let Err(e) = decode(valid) {
        panic!("{name}: the valid page fails: {e}");
    }
    let strategy = (
        damage(false),
        any::<bool>(),
        random_bytes(valid.len()),
        0u8..4,
    );
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let r = runner.run(&strategy, |(d, forge, random, mode)| {
        let mut b = if mode == 0 { random } else { valid.to_vec() };
        if mode != 0 {
            apply(&mut b, &d);
        }
        if forge && b.len() >= crate::page::HEADER {
            reseal(pid, &mut b);
        }
        decode(&b).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))
    });
    if let Err(e) = r {
        panic!("{name}: {e}");
    }
}

/// [`fuzz_page`] for streams (a WAL, a manifest, a record area): random bytes of any
/// length up to twice `valid`'s, and copies of `valid` damaged, cut or extended.
pub fn fuzz_stream(name: &str, valid: &[u8], decode: impl Fn(&[u8]) -> Result<(), String>) {
    if let Err(e) = decode(valid) {
        panic!("{name}: the valid stream fails: {e}");
    }
    let strategy = (
        damage(true),
        random_stream(2 * valid.len() + 16),
        any::<bool>(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let r = runner.run(&strategy, |(d, random, use_random)| {
        let mut b = if use_random { random } else { valid.to_vec() };
        if !use_random {
            apply(&mut b, &d);
        }
        decode(&b).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))
    });
    if let Err(e) = r {
        panic!("{name}: {e}");
    }
}

/// Manifests of valid shape whose numbers are hostile (a checksum forged over them): for
/// every engine, every number of the manifest (options record, allocator state, engine
/// state) in turn set to 0, `u32::MAX`, 2^60 and `u64::MAX`. `open` and the first reads
/// return a value or an error, never panic, and never size an allocation by such a number
/// (an allocation of 2^60 entries aborts the test process).
#[cfg(test)]
mod manifests {
    use crate::durable::Manifest;
    use crate::io::{MemDevice, MemVfs, Storage};
    use crate::sim::NandConfig;
    use crate::{Db, DeviceSpec, EngineKind, Options};
    use std::sync::Arc;

    fn options(kind: EngineKind) -> Options {
        let o = Options::new(kind)
            .page_size(2048)
            .buffer_pool_bytes(64 << 10);
        match kind {
            EngineKind::IplBTree | EngineKind::DiplBTree => {
                o.device(DeviceSpec::RawNand(NandConfig {
                    page_bytes: 2048,
                    pages_per_block: 16,
                    blocks: 64,
                    ..NandConfig::default()
                }))
            }
            _ => o,
        }
    }

    /// Paths (as JSON pointers) of every number in `v`.
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

    fn storage(dev: &MemDevice, vfs: &MemVfs) -> Storage {
        Storage {
            device: Box::new(dev.reopen()),
            vfs: Arc::new(vfs.clone()),
        }
    }

    #[test]
    fn hostile_numbers_in_a_manifest_open_or_fail_cleanly() {
        let mut failures = Vec::new();
        let mut cases = 0;
        for kind in EngineKind::ALL {
            let dev = MemDevice::new(2048);
            let vfs = MemVfs::new();
            let mut db = Db::create_on(storage(&dev, &vfs), options(kind)).unwrap();
            for k in 0..300u64 {
                db.insert(k * 7919 % 1000, k).unwrap();
            }
            db.close().unwrap();
            let good = Manifest::load(&vfs).unwrap();
            let json = serde_json::to_value(&good).unwrap();
            let mut paths = Vec::new();
            numbers(&json, String::new(), &mut paths);
            for path in &paths {
                for value in [0u64, u32::MAX as u64, 1 << 60, u64::MAX] {
                    let mut j = json.clone();
                    if let Some(x) = j.pointer_mut(path) {
                        *x = serde_json::Value::from(value);
                    }
                    let Ok(m) = serde_json::from_value::<Manifest>(j) else {
                        continue;
                    };
                    cases += 1;
                    m.store(&vfs).unwrap();
                    if std::env::var_os("FLASHIX_TRACE").is_some() {
                        eprintln!("manifest case: {kind} {path} = {value}");
                    }
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if let Ok(mut db) = Db::open_on(storage(&dev, &vfs)) {
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
                        failures.push(format!("{kind} {path} = {value}"));
                    }
                }
            }
            good.store(&vfs).unwrap();
        }
        assert!(cases > 100, "only {cases} manifests tried");
        assert!(failures.is_empty(), "panics: {failures:#?}");
    }
}
