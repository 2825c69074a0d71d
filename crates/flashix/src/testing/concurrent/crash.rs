//! The checker of the state a crash left while threads were writing (docs/design.md, contract point 3
//! and Concurrency: "every operation that returned before a completed `flush` is there,
//! and each thread's operations form a prefix").
//!
//! # What must have survived
//!
//! The recovered contents are a prefix of some linearization of the round's writes, so:
//! - **Prefix per thread.** A thread's writes to its private keys (one writer) replayed in
//!   its order on the initial contents give, after some number `n` of them, exactly the
//!   recovered private keys: all of the first `n`, none after (a batch or bulk insert whole
//!   or not at all). Failed calls may be among them (they may have happened before the
//!   crash stopped them); refused ones (`Error::Poisoned`) never are.
//! - **Flushed writes.** Every write that returned before a `flush` that returned `Ok` was
//!   called happened. So did every write whose value the recovered contents hold, every
//!   write of a thread's prefix, and, by real-time order, every write that returned before
//!   any of those began. The checker takes this to a fixpoint: what happened raises each
//!   thread's least prefix (the smallest `n` that matches is taken), whose writes may
//!   raise it again.
//! - **Their effects.** For every key, the recovered version (its value's write, or for an
//!   absent key some delete, range delete or the initial absence) is not superseded by a
//!   write that happened: not older in real time, and not an intermediate version of a
//!   call (half a batch). So a shared key keeps a flushed write's effect or a later one's,
//!   and a batch whose effect on one key survived shows its effect on all its keys.

use super::check::Versions;
use super::history::{Answer, Event, Outcome, Recorded};
use std::collections::BTreeMap;

/// What a crash check found (for the tests' summaries).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CrashStats {
    /// Writes that had to survive (returned before a completed flush, or implied by what
    /// survived).
    pub required: usize,
    /// Private-key writes the recovered prefixes hold.
    pub kept: usize,
    /// Private-key writes after the recovered prefixes (lost, as the prefix rule allows).
    pub lost: usize,
    /// Calls that failed or were refused (the crash stopped them).
    pub failed: usize,
}

impl CrashStats {
    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &CrashStats) {
        self.required += o.required;
        self.kept += o.kept;
        self.lost += o.lost;
        self.failed += o.failed;
    }
}

/// One thread's private writes and the prefix lengths that match the recovered state.
struct Thread {
    /// Its writes that touch its private keys and may have happened, in its order.
    ops: Vec<usize>,
    /// Prefix lengths whose state equals the recovered private keys.
    matches: Vec<usize>,
    /// The prefix length closest to the recovered state, and the keys that differ there.
    nearest: (usize, Vec<String>),
    /// The least prefix that must have survived, and why.
    least: usize,
    /// The prefix chosen (the least match at or above `least`).
    chosen: usize,
}

/// Check the contents `recovered` that a crash during `rec` left (module doc). `Err`
/// describes the first violation, naming the calls involved.
pub fn check_recovered(
    rec: &Recorded,
    recovered: &BTreeMap<u64, u64>,
) -> Result<CrashStats, String> {
    let v = Versions::build(rec)?;
    let ev = &rec.events;
    let mut stats = CrashStats {
        failed: ev.iter().filter(|e| e.outcome != Outcome::Ok).count(),
        ..CrashStats::default()
    };
    let threads = rec.keys.map_or(0, |k| k.threads);
    let mut th: Vec<Thread> = (0..threads).map(|t| prefixes(rec, t, recovered)).collect();

    let mut s = Survived::observed(rec, &v, recovered)?;
    s.raise_to_fixpoint(rec, &mut th)?;
    for (i, e) in ev.iter().enumerate() {
        if e.call.is_write() && e.completed() < s.known.0 {
            s.happened[i] = true;
        }
    }
    stats.required = s.happened.iter().filter(|&&h| h).count();
    for t in &th {
        stats.kept += t.chosen;
        stats.lost += t.ops.len() - t.chosen;
    }
    s.check_effects(rec, &v, recovered)?;
    Ok(stats)
}

/// What happened: `known` is a tick before which every completed write happened, with
/// its reason; `happened` marks writes that happened whatever their end.
struct Survived {
    happened: Vec<bool>,
    known: (u64, String),
}

impl Survived {
    /// What the history and the recovered contents show directly: every write that returned
    /// before a flush that returned `Ok` was called, and every write whose value survived.
    fn observed(
        rec: &Recorded,
        v: &Versions,
        recovered: &BTreeMap<u64, u64>,
    ) -> Result<Survived, String> {
        let ev = &rec.events;
        let mut happened = vec![false; ev.len()];
        let mut known = (0u64, String::new());
        for e in ev.iter().filter(|e| e.outcome == Outcome::Ok) {
            if matches!(e.call, super::history::Call::Flush) && e.start > known.0 {
                known = (e.start, format!("returned before {e} was called"));
            }
        }
        for (&k, &x) in recovered {
            let i = v
                .find(k, x)
                .map_err(|why| format!("after the crash, key {k}: {why}"))?;
            if let Some(e) = v.keys.get(&k).and_then(|vs| vs[i].event) {
                happened[e] = true;
                if ev[e].start > known.0 {
                    known = (
                        ev[e].start,
                        format!(
                            "returned before {} began, whose write of key {k} survived",
                            ev[e]
                        ),
                    );
                }
            }
        }
        Ok(Survived { happened, known })
    }

    /// Raise each thread's least prefix by what happened, choose its prefix, and let the
    /// chosen prefixes' writes raise `known` in turn, until nothing changes.
    fn raise_to_fixpoint(&mut self, rec: &Recorded, th: &mut [Thread]) -> Result<(), String> {
        let ev = &rec.events;
        loop {
            for t in th.iter_mut() {
                // Its writes that happened: those known, and those before one that happened.
                let mut least = t.least;
                for (n, &i) in t.ops.iter().enumerate() {
                    if ev[i].completed() < self.known.0 || self.happened[i] {
                        least = least.max(n + 1);
                    }
                }
                t.least = least;
            }
            let mut raised = false;
            for (tid, t) in th.iter_mut().enumerate() {
                let Some(&chosen) = t.matches.iter().find(|&&n| n >= t.least) else {
                    return Err(lost(rec, tid, t, &self.known, &self.happened));
                };
                t.chosen = chosen;
                for &i in &t.ops[..chosen] {
                    self.happened[i] = true;
                }
                if let Some(&last) = t.ops[..chosen].last() {
                    if ev[last].start > self.known.0 {
                        self.known = (
                            ev[last].start,
                            format!("returned before {} began, which survived", ev[last]),
                        );
                        raised = true;
                    }
                }
            }
            if !raised {
                return Ok(());
            }
        }
    }

    /// Every key: its recovered version is superseded by no write that happened.
    fn check_effects(
        &self,
        rec: &Recorded,
        v: &Versions,
        recovered: &BTreeMap<u64, u64>,
    ) -> Result<(), String> {
        let ev = &rec.events;
        let happened = &self.happened;
        for (&k, vs) in &v.keys {
            let x = recovered.get(&k).copied();
            let newest = vs
                .iter()
                .filter(|w| w.event.is_some_and(|e| happened[e]))
                .max_by_key(|w| w.start);
            let ok = |w: &super::check::Version| {
                w.value == x
                    && w.last
                    && newest.map_or(true, |n| w.end >= n.start || std::ptr::eq(w, n))
            };
            if vs.iter().any(ok) {
                continue;
            }
            let name = |e: Option<usize>| {
                e.map_or("the initial contents".to_string(), |e| ev[e].to_string())
            };
            let held = match x {
                Some(x) => v.find(k, x).ok().map(|i| &vs[i]),
                None => None,
            };
            let why = match (held, newest) {
                (Some(h), _) if !h.last => format!(
                    "that is an intermediate version of {}: half a call survived",
                    name(h.event)
                ),
                (_, Some(n)) => format!(
                    "{} wrote {} to it and had to survive ({}), and nothing newer did",
                    name(n.event),
                    Answer(n.value),
                    why_happened(rec, n.event, &self.known, happened)
                ),
                _ => "no write could have left it so".to_string(),
            };
            return Err(format!(
                "after the crash, key {k} holds {}, but {why}",
                Answer(x)
            ));
        }
        Ok(())
    }
}

/// Why the write `e` had to survive.
fn why_happened(
    rec: &Recorded,
    e: Option<usize>,
    known: &(u64, String),
    happened: &[bool],
) -> String {
    match e.map(|i| &rec.events[i]) {
        Some(w) if w.completed() < known.0 => known.1.clone(),
        Some(_) if e.is_some_and(|i| happened[i]) => {
            "it is part of what survived: its value, or its thread's prefix".to_string()
        }
        _ => "it is the initial contents".to_string(),
    }
}

/// Thread `t`'s private writes and the prefixes of them that give the recovered state.
fn prefixes(rec: &Recorded, t: usize, recovered: &BTreeMap<u64, u64>) -> Thread {
    let Some(keys) = rec.keys else {
        return Thread {
            ops: Vec::new(),
            matches: vec![0],
            nearest: (0, Vec::new()),
            least: 0,
            chosen: 0,
        };
    };
    let (lo, hi) = keys.private_range(t);
    let mut ops: Vec<usize> = (0..rec.events.len())
        .filter(|&i| {
            let e = &rec.events[i];
            e.thread == t
                && e.call.is_write()
                && !matches!(e.outcome, Outcome::Refused(_))
                && e.call.touches(lo, hi)
        })
        .collect();
    ops.sort_by_key(|&i| rec.events[i].start);
    let target: BTreeMap<u64, u64> = recovered.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
    let mut model: BTreeMap<u64, u64> = rec.initial.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
    let differ = |model: &BTreeMap<u64, u64>| -> Vec<String> {
        let mut keys: Vec<u64> = model.keys().chain(target.keys()).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter(|k| model.get(k) != target.get(k))
            .map(|k| {
                format!(
                    "key {k}: {} after the crash, {} in the prefix",
                    Answer(target.get(&k).copied()),
                    Answer(model.get(&k).copied())
                )
            })
            .collect()
    };
    let mut diff = differ(&model);
    let mut nearest = (0, diff.clone());
    let mut matches = Vec::new();
    if diff.is_empty() {
        matches.push(0);
    }
    for (n, &i) in ops.iter().enumerate() {
        let mut next = model.clone();
        rec.events[i].call.apply(&mut next);
        model = next.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
        diff = differ(&model);
        if diff.is_empty() {
            matches.push(n + 1);
        }
        if diff.len() < nearest.1.len() {
            nearest = (n + 1, diff.clone());
        }
    }
    Thread {
        ops,
        matches,
        nearest,
        least: 0,
        chosen: 0,
    }
}

/// The message when thread `t` has no matching prefix at or above its least one.
fn lost(rec: &Recorded, t: usize, th: &Thread, known: &(u64, String), happened: &[bool]) -> String {
    let name = |n: usize| -> String {
        th.ops
            .get(n)
            .map_or("none".to_string(), |&i| rec.events[i].to_string())
    };
    let (near, ref keys) = th.nearest;
    let shown: Vec<&String> = keys.iter().take(4).collect();
    match th.matches.last() {
        None => format!(
            "after the crash, thread {t}'s private keys are no prefix of its {} writes to \
             them (the nearest is its first {near}, up to {}; there {} keys differ: {shown:?})",
            th.ops.len(),
            if near == 0 {
                "none".to_string()
            } else {
                name(near - 1)
            },
            keys.len()
        ),
        Some(&best) => {
            let i = th.ops[best];
            let first_lost: &Event = &rec.events[i];
            let why = if first_lost.completed() < known.0 {
                known.1.clone()
            } else if happened[i] {
                "whose value survived".to_string()
            } else {
                format!(
                    "which precedes {}, which had to survive",
                    name(th.least - 1)
                )
            };
            format!(
                "after the crash, thread {t}'s private keys hold its first {best} writes to \
                 them, but at least {} had to survive: lost {first_lost}, {why}",
                th.least
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::history::{BatchOp, Call, Keys, BASE};
    use super::*;

    /// A shared key, and two private keys of thread 0.
    const S: u64 = BASE + 1;
    const P0: u64 = BASE + 100;
    const P1: u64 = BASE + 101;

    /// Events `(thread, start, end, call, ok)`.
    fn hist(events: Vec<(usize, u64, u64, Call, bool)>) -> Recorded {
        let mut n: BTreeMap<usize, usize> = BTreeMap::new();
        Recorded {
            keys: Some(Keys {
                threads: 2,
                shared: 100,
                private: 100,
            }),
            initial: BTreeMap::new(),
            events: events
                .into_iter()
                .map(|(thread, start, end, call, ok)| {
                    let i = n.entry(thread).or_default();
                    *i += 1;
                    Event {
                        thread,
                        index: *i - 1,
                        start,
                        end,
                        call,
                        outcome: if ok {
                            Outcome::Ok
                        } else {
                            Outcome::Failed("simulated power loss".to_string())
                        },
                        after_cut: !ok,
                    }
                })
                .collect(),
        }
    }

    fn state(kv: &[(u64, u64)]) -> BTreeMap<u64, u64> {
        kv.iter().copied().collect()
    }

    fn fails(rec: &Recorded, got: &[(u64, u64)], needle: &str) {
        match check_recovered(rec, &state(got)) {
            Ok(s) => panic!("the checker accepted a bad crash state ({s:?}); wanted: {needle}"),
            Err(e) => assert!(e.contains(needle), "wanted {needle:?} in: {e}"),
        }
    }

    fn history() -> Recorded {
        hist(vec![
            (0, 1, 2, Call::Insert(P0, 1), true),
            (1, 3, 6, Call::Insert(S, 2), true),
            (0, 4, 5, Call::Flush, true),
            (0, 7, 8, Call::Insert(P1, 3), true),
            (
                0,
                9,
                12,
                Call::Batch(vec![BatchOp::Insert(P0, 4), BatchOp::Insert(S, 5)]),
                true,
            ),
            (1, 10, 11, Call::Delete(S), true),
            (0, 13, 14, Call::Flush, false),
            (0, 15, 16, Call::Insert(P1, 6), false),
        ])
    }

    #[test]
    fn every_prefix_that_holds_the_flushed_writes_passes() {
        let rec = history();
        // The flush at 4 covers the insert of P0 only (the shared insert was running).
        for ok in [
            vec![(P0, 1)],
            vec![(P0, 1), (S, 2)],
            vec![(P0, 1), (P1, 3), (S, 2)],
            vec![(P0, 4), (P1, 3), (S, 5)],
            vec![(P0, 4), (P1, 3)],
            vec![(P0, 4), (P1, 6)],
        ] {
            let s = check_recovered(&rec, &state(&ok)).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert_eq!(s.failed, 2);
        }
    }

    #[test]
    fn a_lost_flushed_write_is_reported() {
        let rec = history();
        fails(&rec, &[], "had to survive");
        // A shared key: a flushed insert lost, nothing newer written.
        let rec2 = hist(vec![
            (1, 1, 2, Call::Insert(S, 2), true),
            (0, 3, 4, Call::Flush, true),
        ]);
        fails(&rec2, &[], "had to survive");
    }

    #[test]
    fn a_non_prefix_is_reported() {
        let rec = history();
        // P1's insert without P0's: no prefix of thread 0's writes.
        fails(&rec, &[(P1, 3)], "no prefix");
        // Thread 0's later write survived, but its earlier one did not.
        fails(&rec, &[(P0, 1), (P1, 6)], "no prefix");
    }

    #[test]
    fn half_a_batch_is_reported() {
        let rec = history();
        // The batch's shared key survived, its private key did not: the prefix of thread
        // 0 must then reach the batch.
        fails(&rec, &[(P0, 1), (P1, 3), (S, 5)], "had to survive");
        // The batch's private key survived, its shared key holds an older value.
        fails(&rec, &[(P0, 4), (P1, 3), (S, 2)], "had to survive");
        let half = hist(vec![(
            0,
            1,
            2,
            Call::Batch(vec![BatchOp::Insert(S, 1), BatchOp::Insert(S, 2)]),
            false,
        )]);
        fails(&half, &[(S, 1)], "intermediate version");
        check_recovered(&half, &state(&[(S, 2)])).unwrap();
        check_recovered(&half, &state(&[])).unwrap();
    }

    #[test]
    fn unknown_values_are_reported() {
        fails(&history(), &[(P0, 1), (S, 99)], "never written");
    }
}
