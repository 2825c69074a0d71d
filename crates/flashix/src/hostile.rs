//! Hostile and damaged bytes for the decoders of on-disk bytes (docs/design.md,
//! contract points 4 and 6): the strategies every decoder's property test draws from.
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
//! The manifest's numbers are tested through the public API by `tests/hostile_alloc.rs`,
//! which also measures the heap an `open` takes.

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
/// page). The envelope of `crate::page` (crc32c of bytes 4.. at 0, the page id at 4),
/// written here so that this module imports nothing of the crate it tests (it sits below
/// every module that uses it: `tests/layers.rs`).
pub fn reseal(pid: u64, b: &mut [u8]) {
    b[4..12].copy_from_slice(&pid.to_le_bytes());
    let crc = crc32c::crc32c(&b[4..]);
    b[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Bytes of the page envelope.
const ENVELOPE: usize = 16;

/// Random bytes of `len`.
pub fn random_bytes(len: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), len)
}

/// Random bytes of any length up to `max`.
pub fn random_stream(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// Run `decode` on pages: random bytes of the page's size (with a forged envelope for
/// `pid` half of the time) and copies of `valid` with [`damage`], re-sealed for `pid`
/// half of the time. `decode` returns `Err` for an outcome the property forbids (see
/// `crate::error::ok_or_corruption`); a panic fails too. `valid` itself must pass.
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
        if forge && b.len() >= ENVELOPE {
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
