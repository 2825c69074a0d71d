//! The checker of a recorded concurrent history (docs/design.md, Concurrency, Semantics).
//!
//! # Versions
//!
//! Every write's effect on a key is a *version* of that key: an insert a version with its
//! (unique) value, a delete, a range delete or a batch's delete a version "absent". Tick 0
//! holds the initial version of every key (its initial value, or absent). A version has the
//! interval of its call (`end` is [`NEVER`] for a call that failed: it may or may not have
//! happened and never completed). The operations of one batch or bulk insert on the same
//! key are ordered: all but the last are *intermediate*, visible at most while the call
//! runs.
//!
//! Version `a` is **superseded** by `b` when `b` is newer in real time (`a.end < b.start`)
//! or `b` follows `a` in the same call. A version is *dead* for a read that begins after
//! the instant it becomes superseded by a completed write (`dead_at`, computed up front
//! from the writes), or after an earlier read proved a newer version (below).
//!
//! # The per-key rule (linearizability of reads against writes)
//!
//! A read of key `k` over `[start, end]` that returned `x` (a `get`, an answer of a
//! `get_many`, an entry of a scan, or a key a scan left out) must have a *candidate*: a
//! version of `k` with answer `x` that
//! - began before the read ended (`version.start < read.end`; else a read from the future),
//! - is not dead when the read begins (else a stale read).
//!
//! A value must be one written to `k` (else an unknown value). Reads are checked in order
//! of their start. After each, what it saw becomes a fact for the reads that begin after it
//! ends: a version `f` it did not see, which completed before the read began or before the
//! version it saw began, is older than the one it saw, so dead from the read's end on. With
//! the same reader this is **monotonic reads** (no read sees a version older than one the
//! same thread saw before); across readers it is the real-time order of reads that
//! linearizability requires. These facts are only ever drawn from candidates, so a correct
//! history never fails: every fact holds in any linearization that explains the reads.
//!
//! # Scans
//!
//! A `range` (and each range of a `range_many`) returns keys strictly ascending, within its
//! bounds; every entry satisfies the per-key rule over the scan's interval (a value the key
//! held at some instant of the scan); a key of the range that the scan left out must be
//! allowed to be absent (the per-key rule with `x` = absent) unless some write on it ran
//! during the scan: so a key present and unchanged for the whole scan is returned, and no
//! key absent for the whole scan is.
//!
//! # Private keys
//!
//! A thread's private keys have one writer, so a thread's reads of its own keys must give
//! exactly what its own history (replayed on a model) says; a failed write of its own makes
//! the keys it touches unknown from then on. This repeats the per-key rule for those keys
//! with a model that shares no code with it.
//!
//! # The contents after the threads
//!
//! With `after`, the contents after every thread joined are checked as a scan of
//! everything that began after the last call ended: each key holds a version that nothing
//! superseded (for concurrent last writes, any of them) and that no read's fact killed, so
//! the contents agree with one linearization per key that also explains every read.
//!
//! # Cost
//!
//! Each key keeps its versions sorted by start; a key read looks at that key's versions
//! only (a value is found by a hash of `(key, value)`), and so does the fact it leaves.
//! Histories of a few thousand calls check in milliseconds.

use super::history::{Answer, Call, Event, Outcome, Recorded, Value, NEVER};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// Why a version became dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Killer {
    /// Nothing (yet).
    Nobody,
    /// A write (an event) superseded it.
    Write(usize),
    /// A read (an event) saw a newer version.
    Read(usize),
}

/// One version of a key.
#[derive(Debug, Clone)]
pub(super) struct Version {
    pub(super) start: u64,
    /// [`NEVER`] for a failed call.
    pub(super) end: u64,
    pub(super) value: Option<u64>,
    /// The event that wrote it; `None` for the initial version.
    pub(super) event: Option<usize>,
    /// False for the intermediate versions of a call.
    pub(super) last: bool,
    /// Reads that begin after this tick must not see it.
    pub(super) dead_at: u64,
    pub(super) killer: Killer,
}

/// Every key's versions, sorted by start (the initial version first).
pub(super) struct Versions {
    pub(super) keys: BTreeMap<u64, Vec<Version>>,
    /// `(key, value)` to the index of its version in `keys[key]`.
    by_value: HashMap<(u64, u64), usize>,
    /// A value to the key it was written to (for messages).
    written_to: HashMap<u64, u64>,
}

impl Versions {
    /// The versions of the history's writes that may have happened (refused calls did
    /// not). Errors on a history the harness could not have meant: a value written twice
    /// to a key, a private key written by a thread other than its owner.
    pub(super) fn build(rec: &Recorded) -> Result<Versions, String> {
        let mut universe: BTreeSet<u64> = rec.initial.keys().copied().collect();
        for e in &rec.events {
            if e.call.is_write() {
                universe.extend(e.call.inserted());
            }
        }
        let mut keys: BTreeMap<u64, Vec<Version>> = universe
            .iter()
            .map(|&k| {
                let initial = Version {
                    start: 0,
                    end: 0,
                    value: rec.initial.get(&k).copied(),
                    event: None,
                    last: true,
                    dead_at: NEVER,
                    killer: Killer::Nobody,
                };
                (k, vec![initial])
            })
            .collect();
        let keys_in = |lo: u64, hi: u64| universe.range(lo..=hi).copied().collect();
        for (i, e) in rec.events.iter().enumerate() {
            if !e.call.is_write() || matches!(e.outcome, Outcome::Refused(_)) {
                continue;
            }
            let effects = e.call.effects(&keys_in);
            for (j, &(k, value)) in effects.iter().enumerate() {
                if let Some(owner) = rec.owner(k) {
                    if owner != e.thread {
                        return Err(format!(
                            "history: {e} writes key {k}, private to thread {owner}"
                        ));
                    }
                }
                let last = !effects[j + 1..].iter().any(|&(k2, _)| k2 == k);
                if let Some(vs) = keys.get_mut(&k) {
                    vs.push(Version {
                        start: e.start,
                        end: e.completed(),
                        value,
                        event: Some(i),
                        last,
                        dead_at: NEVER,
                        killer: Killer::Nobody,
                    });
                }
            }
        }
        let mut by_value = HashMap::new();
        let mut written_to = HashMap::new();
        for (&k, vs) in keys.iter_mut() {
            // Stable: the versions of one call keep their order.
            vs.sort_by_key(|v| v.start);
            supersede(vs);
            for (i, v) in vs.iter().enumerate() {
                let Some(x) = v.value else { continue };
                if by_value.insert((k, x), i).is_some() && v.event.is_some() {
                    return Err(format!("history: value {x} written twice to key {k}"));
                }
                written_to.entry(x).or_insert(k);
            }
        }
        Ok(Versions {
            keys,
            by_value,
            written_to,
        })
    }

    /// The index of the version of `k` with value `x`, or why there is none.
    pub(super) fn find(&self, k: u64, x: u64) -> Result<usize, String> {
        if let Some(&i) = self.by_value.get(&(k, x)) {
            return Ok(i);
        }
        Err(match self.written_to.get(&x) {
            Some(other) => format!(
                "value {} of key {k} was written to key {other}, never to {k}",
                Value(x)
            ),
            None => format!("value {} of key {k} was never written", Value(x)),
        })
    }
}

/// Set `dead_at` from the writes: the earliest end of a version newer in real time, or,
/// for an intermediate version, its own call's end.
fn supersede(vs: &mut [Version]) {
    let n = vs.len();
    // suffix[i]: the earliest end, and its event, among versions i.. (sorted by start).
    let mut suffix: Vec<(u64, Option<usize>)> = vec![(NEVER, None); n + 1];
    for i in (0..n).rev() {
        suffix[i] = if vs[i].end < suffix[i + 1].0 {
            (vs[i].end, vs[i].event)
        } else {
            suffix[i + 1]
        };
    }
    for i in 0..n {
        let end = vs[i].end;
        let first_newer = vs.partition_point(|v| v.start <= end);
        let (at, by) = suffix[first_newer];
        let v = &mut vs[i];
        if let (true, Some(by)) = (at < v.dead_at, by) {
            v.dead_at = at;
            v.killer = Killer::Write(by);
        }
        if let (false, Some(own)) = (v.last, v.event) {
            if v.end < v.dead_at {
                v.dead_at = v.end;
                v.killer = Killer::Write(own);
            }
        }
    }
}

/// What the checker saw (for the tests' summaries).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CheckStats {
    /// Reads checked (gets, get_manys, scans, range_manys).
    pub reads: usize,
    /// Key reads checked (an answer of a read, an entry or a left-out key of a scan).
    pub key_reads: usize,
    /// Scans checked (`range` and `range_many`).
    pub scans: usize,
    /// Entries the scans returned.
    pub scanned: usize,
    /// Key reads whose answer came from a write still running when the read began.
    pub saw_in_flight: usize,
    /// Key reads that had a write on their key running beside them.
    pub contended: usize,
    /// Private-key reads checked exactly against the owner's model.
    pub exact: usize,
}

impl CheckStats {
    /// Add `o`'s counts to these.
    pub fn add(&mut self, o: &CheckStats) {
        self.reads += o.reads;
        self.key_reads += o.key_reads;
        self.scans += o.scans;
        self.scanned += o.scanned;
        self.saw_in_flight += o.saw_in_flight;
        self.contended += o.contended;
        self.exact += o.exact;
    }
}

/// A read to check: an event, or the contents after the threads (`event` `None`).
struct Read<'a> {
    event: Option<usize>,
    thread: Option<usize>,
    start: u64,
    end: u64,
    what: String,
    call: &'a Call,
}

/// A thread's model of its own private keys.
#[derive(Default)]
struct Own {
    model: BTreeMap<u64, u64>,
    /// Keys a failed write of the thread touched: their value is not known.
    unknown: BTreeSet<u64>,
}

/// Check the history `rec` (module doc); with `after`, also the contents after every
/// thread joined. `Err` describes the first violation found, naming the calls involved.
pub fn check_history(
    rec: &Recorded,
    after: Option<&BTreeMap<u64, u64>>,
) -> Result<CheckStats, String> {
    let mut c = Checker {
        rec,
        v: Versions::build(rec)?,
        own: BTreeMap::new(),
        stats: CheckStats::default(),
    };
    if let Some(keys) = rec.keys {
        for t in 0..keys.threads {
            let (lo, hi) = keys.private_range(t);
            let model = rec.initial.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
            c.own.insert(
                t,
                Own {
                    model,
                    unknown: BTreeSet::new(),
                },
            );
        }
    }
    let mut order: Vec<usize> = (0..rec.events.len()).collect();
    order.sort_by_key(|&i| rec.events[i].start);
    for i in order {
        let e = &rec.events[i];
        if e.call.is_write() {
            c.own_write(e);
            continue;
        }
        if e.outcome != Outcome::Ok || matches!(e.call, Call::Flush) {
            continue;
        }
        let read = Read {
            event: Some(i),
            thread: Some(e.thread),
            start: e.start,
            end: e.end,
            what: e.to_string(),
            call: &e.call,
        };
        c.read(&read)?;
    }
    if let Some(after) = after {
        if let Some(e) = rec.events.iter().find(|e| e.outcome != Outcome::Ok) {
            return Err(format!(
                "the contents after the threads cannot be checked: {e} did not succeed"
            ));
        }
        let last = rec.events.iter().map(|e| e.end).max().unwrap_or(0);
        let all = Call::Range(
            Bound::Unbounded,
            Bound::Unbounded,
            after.iter().map(|(&k, &v)| (k, v)).collect(),
        );
        let read = Read {
            event: None,
            thread: None,
            start: last + 1,
            end: last + 2,
            what: "the contents after the threads joined".to_string(),
            call: &all,
        };
        c.read(&read)?;
    }
    Ok(c.stats)
}

struct Checker<'a> {
    rec: &'a Recorded,
    v: Versions,
    own: BTreeMap<usize, Own>,
    stats: CheckStats,
}

impl Checker<'_> {
    /// A write of thread `e.thread` on its own model.
    fn own_write(&mut self, e: &Event) {
        let (Some(keys), Some(own)) = (self.rec.keys, self.own.get_mut(&e.thread)) else {
            return;
        };
        let (lo, hi) = keys.private_range(e.thread);
        match e.outcome {
            Outcome::Refused(_) => {}
            Outcome::Ok => {
                let mut mine = own.model.clone();
                e.call.apply(&mut mine);
                own.model = mine.range(lo..=hi).map(|(&k, &v)| (k, v)).collect();
            }
            Outcome::Failed(_) => {
                let universe: Vec<u64> = (lo..=hi).collect();
                let keys_in = |a: u64, b: u64| {
                    universe
                        .iter()
                        .copied()
                        .filter(|k| (a..=b).contains(k))
                        .collect()
                };
                for (k, _) in e.call.effects(&keys_in) {
                    if (lo..=hi).contains(&k) {
                        own.unknown.insert(k);
                    }
                }
            }
        }
    }

    /// Check one read, then record what it saw.
    fn read(&mut self, r: &Read<'_>) -> Result<(), String> {
        self.stats.reads += 1;
        let mut seen: Vec<(u64, Vec<usize>)> = Vec::new();
        match r.call {
            Call::Get(k, got) => {
                self.exact(r, *k, *got)?;
                seen.push((*k, self.key_read(r, *k, *got)?));
            }
            Call::GetMany(keys, got) => {
                if keys.len() != got.len() {
                    return Err(format!(
                        "{}: {} answers for {} keys",
                        r.what,
                        got.len(),
                        keys.len()
                    ));
                }
                for (&k, &x) in keys.iter().zip(got) {
                    self.exact(r, k, x)?;
                    seen.push((k, self.key_read(r, k, x)?));
                }
            }
            Call::Range(lo, hi, got) => {
                let ranges: Vec<(u64, u64)> =
                    crate::batch::inclusive(&(*lo, *hi)).into_iter().collect();
                self.scan(r, &ranges, got, &mut seen)?;
            }
            Call::RangeMany(ranges, got) => {
                self.scan(r, &merge(ranges), got, &mut seen)?;
            }
            _ => return Ok(()),
        }
        for (k, cands) in seen {
            self.learn(r, k, &cands);
        }
        Ok(())
    }

    /// The per-key rule for a read of `k` that answered `x`: its candidates, or why it has
    /// none.
    fn key_read(&mut self, r: &Read<'_>, k: u64, x: Option<u64>) -> Result<Vec<usize>, String> {
        self.stats.key_reads += 1;
        let Some(vs) = self.v.keys.get(&k) else {
            // Nobody ever wrote k: it is absent throughout.
            return match x {
                None => Ok(Vec::new()),
                Some(x) => Err(format!(
                    "{}: key {k}: {}",
                    r.what,
                    self.v.find(k, x).err().unwrap_or_default()
                )),
            };
        };
        if vs
            .iter()
            .skip(1)
            .any(|v| v.start < r.end && v.end > r.start)
        {
            self.stats.contended += 1;
        }
        let cands: Vec<usize> = match x {
            Some(x) => {
                let i = self
                    .v
                    .find(k, x)
                    .map_err(|why| format!("{}: {why}", r.what))?;
                let v = &vs[i];
                if v.start >= r.end {
                    return Err(format!(
                        "{}: read from the future: key {k} = {}, written by {}, which began \
                         after the read ended",
                        r.what,
                        Value(x),
                        self.event_name(v.event)
                    ));
                }
                if v.dead_at < r.start {
                    return Err(self.stale(r, k, v));
                }
                vec![i]
            }
            None => {
                let c: Vec<usize> = (0..vs.len())
                    .filter(|&i| {
                        let v = &vs[i];
                        v.value.is_none() && v.start < r.end && v.dead_at >= r.start
                    })
                    .collect();
                if c.is_empty() {
                    return Err(self.not_absent(r, k, vs));
                }
                c
            }
        };
        if cands
            .iter()
            .any(|&i| vs[i].end > r.start && vs[i].event.is_some())
        {
            self.stats.saw_in_flight += 1;
        }
        Ok(cands)
    }

    /// What a read saw becomes a fact for later reads (module doc): every version of `k`
    /// it could not have seen, older than every one it could have, is dead from its end.
    fn learn(&mut self, r: &Read<'_>, k: u64, cands: &[usize]) {
        let (Some(vs), Some(event)) = (self.v.keys.get_mut(&k), r.event) else {
            return;
        };
        let Some(oldest) = cands.iter().map(|&i| vs[i].start).min() else {
            return;
        };
        let floor = r.start.max(oldest);
        for (i, v) in vs.iter_mut().enumerate() {
            if v.end < floor && r.end < v.dead_at && !cands.contains(&i) {
                v.dead_at = r.end;
                v.killer = Killer::Read(event);
            }
        }
    }

    /// A reader's own private key: exactly what its model says.
    fn exact(&mut self, r: &Read<'_>, k: u64, x: Option<u64>) -> Result<(), String> {
        let (Some(t), Some(keys)) = (r.thread, self.rec.keys) else {
            return Ok(());
        };
        let Some(own) = self.own.get(&t) else {
            return Ok(());
        };
        if keys.owner(k) != Some(t) || own.unknown.contains(&k) {
            return Ok(());
        }
        self.stats.exact += 1;
        let want = own.model.get(&k).copied();
        if x != want {
            return Err(format!(
                "{}: thread {t} read its private key {k} as {}, but its own history says {} ({})",
                r.what,
                Answer(x),
                Answer(want),
                self.story(k, r)
            ));
        }
        Ok(())
    }

    /// The rules of a scan over the sorted, disjoint inclusive `ranges` that returned
    /// `got`; the candidates of every key it read go to `seen`.
    fn scan(
        &mut self,
        r: &Read<'_>,
        ranges: &[(u64, u64)],
        got: &[(u64, u64)],
        seen: &mut Vec<(u64, Vec<usize>)>,
    ) -> Result<(), String> {
        self.stats.scans += 1;
        self.stats.scanned += got.len();
        let mut prev: Option<u64> = None;
        for &(k, x) in got {
            if prev.is_some_and(|p| k <= p) {
                return Err(format!(
                    "{}: keys out of order: {k} after {}",
                    r.what,
                    prev.unwrap_or_default()
                ));
            }
            prev = Some(k);
            let i = ranges.partition_point(|&(_, hi)| hi < k);
            if !ranges.get(i).is_some_and(|&(lo, _)| lo <= k) {
                return Err(format!(
                    "{}: key {k} is outside the scanned ranges {ranges:?}",
                    r.what
                ));
            }
            self.exact(r, k, Some(x))?;
            seen.push((k, self.key_read(r, k, Some(x))?));
        }
        let returned: BTreeSet<u64> = got.iter().map(|&(k, _)| k).collect();
        for &(lo, hi) in ranges {
            let left_out: Vec<u64> = self
                .v
                .keys
                .range(lo..=hi)
                .map(|(&k, _)| k)
                .filter(|k| !returned.contains(k))
                .collect();
            for k in left_out {
                self.exact(r, k, None)?;
                let written = self.v.keys.get(&k).is_some_and(|vs| {
                    vs.iter()
                        .skip(1)
                        .any(|v| v.start < r.end && v.end > r.start)
                });
                if written {
                    // The key may have changed during the scan: the scan need not return
                    // it (docs/design.md: only keys unchanged for the whole scan must be).
                    continue;
                }
                self.key_read(r, k, None).map_err(|_| {
                    let held = self.v.keys.get(&k).map_or(String::new(), |vs| {
                        self.live(r, vs)
                            .iter()
                            .map(|&i| self.version_name(&vs[i]))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    });
                    format!(
                        "{}: scan left out key {k}, present and unchanged for the whole scan \
                         (it held {held})",
                        r.what
                    )
                })?;
            }
        }
        Ok(())
    }

    /// The last few versions of `k` that began before `r` ended, for messages.
    fn story(&self, k: u64, r: &Read<'_>) -> String {
        let Some(vs) = self.v.keys.get(&k) else {
            return format!("key {k} was never written");
        };
        let before: Vec<&Version> = vs.iter().filter(|v| v.start < r.end).collect();
        let shown: Vec<String> = before
            .iter()
            .skip(before.len().saturating_sub(4))
            .map(|v| self.version_name(v))
            .collect();
        format!("the last versions of key {k}: {}", shown.join("; "))
    }

    /// The versions of a key a read over `r` may see (started before it ended, not dead).
    fn live(&self, r: &Read<'_>, vs: &[Version]) -> Vec<usize> {
        (0..vs.len())
            .filter(|&i| vs[i].start < r.end && vs[i].dead_at >= r.start)
            .collect()
    }

    fn event_name(&self, e: Option<usize>) -> String {
        match e.and_then(|i| self.rec.events.get(i)) {
            Some(e) => e.to_string(),
            None => "the initial contents".to_string(),
        }
    }

    fn version_name(&self, v: &Version) -> String {
        format!("{} from {}", Answer(v.value), self.event_name(v.event))
    }

    /// The message of a stale read of `v`.
    fn stale(&self, r: &Read<'_>, k: u64, v: &Version) -> String {
        let why = match v.killer {
            Killer::Write(by) if Some(by) == v.event => {
                "a later operation of the same call replaced it, and the call had returned \
                 before the read began"
                    .to_string()
            }
            Killer::Write(by) => format!(
                "{} overwrote it and returned before the read began",
                self.event_name(Some(by))
            ),
            Killer::Read(by) => {
                let same =
                    r.thread.is_some() && self.rec.events.get(by).map(|e| e.thread) == r.thread;
                let kind = if same {
                    "non-monotonic read: the same thread's earlier read"
                } else {
                    "an earlier read, which ended before this one began,"
                };
                format!("{kind} {} saw a newer version", self.event_name(Some(by)))
            }
            Killer::Nobody => "it was dead".to_string(),
        };
        format!(
            "{}: stale read: key {k} = {} (written by {}), but {why}",
            r.what,
            Answer(v.value),
            self.event_name(v.event)
        )
    }

    /// The message of a read of `k` as absent when no absent version was possible.
    fn not_absent(&self, r: &Read<'_>, k: u64, vs: &[Version]) -> String {
        let held: Vec<String> = self
            .live(r, vs)
            .into_iter()
            .map(|i| self.version_name(&vs[i]))
            .collect();
        let dead_absent = vs
            .iter()
            .filter(|v| v.value.is_none() && v.start < r.end)
            .max_by_key(|v| v.start)
            .map(|v| {
                let why = match v.killer {
                    Killer::Read(by) => format!(", proved older by {}", self.event_name(Some(by))),
                    Killer::Write(by) => format!(", overwritten by {}", self.event_name(Some(by))),
                    Killer::Nobody => String::new(),
                };
                format!(
                    "; the latest absent version is from {}{why}",
                    self.event_name(v.event)
                )
            })
            .unwrap_or_default();
        format!(
            "{}: key {k} read as absent, but it could only hold {}{dead_absent}",
            r.what,
            held.join(" or ")
        )
    }
}

/// Inclusive ranges sorted and merged where they overlap or touch (as `Db::range_many`
/// does); ranges with `lo > hi` are dropped.
pub(super) fn merge(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut sorted: Vec<(u64, u64)> = ranges.iter().copied().filter(|(a, b)| a <= b).collect();
    sorted.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
    for (lo, hi) in sorted {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::history::{BatchOp, Keys, BASE};
    use super::*;

    /// A hand-made history: events `(thread, start, end, call)`, all `Ok`.
    fn hist(initial: &[(u64, u64)], events: Vec<(usize, u64, u64, Call)>) -> Recorded {
        let mut per_thread: BTreeMap<usize, usize> = BTreeMap::new();
        Recorded {
            keys: Some(Keys {
                threads: 3,
                shared: 100,
                private: 100,
            }),
            initial: initial.iter().copied().collect(),
            events: events
                .into_iter()
                .map(|(thread, start, end, call)| {
                    let n = per_thread.entry(thread).or_default();
                    *n += 1;
                    Event {
                        thread,
                        index: *n - 1,
                        start,
                        end,
                        call,
                        outcome: Outcome::Ok,
                        after_cut: false,
                    }
                })
                .collect(),
        }
    }

    const K: u64 = BASE + 5;
    const K2: u64 = BASE + 6;
    /// Thread 0's first private key.
    const P0: u64 = BASE + 100;

    fn fails(rec: &Recorded, after: Option<&BTreeMap<u64, u64>>, needle: &str) {
        match check_history(rec, after) {
            Ok(s) => panic!("the checker accepted a bad history ({s:?}); wanted: {needle}"),
            Err(e) => assert!(e.contains(needle), "wanted {needle:?} in: {e}"),
        }
    }

    #[test]
    fn a_correct_concurrent_history_passes() {
        let rec = hist(
            &[(K, 1)],
            vec![
                (0, 1, 10, Call::Insert(K, 2)),
                // Concurrent with the insert and with each other: either value.
                (1, 2, 5, Call::Get(K, Some(2))),
                (2, 3, 4, Call::Get(K, Some(1))),
                (1, 11, 12, Call::Get(K, Some(2))),
                (
                    2,
                    13,
                    14,
                    Call::Range(Bound::Included(K), Bound::Included(K2), vec![(K, 2)]),
                ),
                (0, 15, 16, Call::Delete(K)),
                (
                    1,
                    17,
                    18,
                    Call::GetMany(vec![K, K2, K], vec![None, None, None]),
                ),
                (0, 19, 20, Call::Insert(P0, 7)),
                (0, 21, 22, Call::Get(P0, Some(7))),
                (
                    0,
                    23,
                    24,
                    Call::Batch(vec![BatchOp::Insert(K2, 3), BatchOp::Delete(P0)]),
                ),
                (
                    1,
                    25,
                    26,
                    Call::RangeMany(vec![(P0, P0), (K, K2)], vec![(K2, 3)]),
                ),
                (0, 27, 28, Call::Get(P0, None)),
            ],
        );
        let after: BTreeMap<u64, u64> = [(K2, 3)].into();
        let s = check_history(&rec, Some(&after)).unwrap();
        assert_eq!(s.saw_in_flight, 1);
        assert!(s.exact >= 2);
    }

    /// The owner's model applies a batch in order: a range delete after an insert of the
    /// same key in one batch leaves it absent (the checker once kept it).
    #[test]
    fn a_batch_range_delete_covers_its_own_inserts() {
        let rec = hist(
            &[],
            vec![
                (
                    0,
                    1,
                    2,
                    Call::Batch(vec![
                        BatchOp::Insert(P0, 1),
                        BatchOp::DeleteRange(P0, P0 + 5),
                    ]),
                ),
                (0, 3, 4, Call::Get(P0, None)),
                (
                    0,
                    5,
                    6,
                    Call::Range(Bound::Unbounded, Bound::Unbounded, vec![]),
                ),
            ],
        );
        check_history(&rec, Some(&BTreeMap::new())).unwrap();
    }

    #[test]
    fn a_stale_read_is_reported() {
        let rec = hist(
            &[],
            vec![
                (0, 1, 2, Call::Insert(K, 1)),
                (0, 3, 4, Call::Insert(K, 2)),
                (1, 5, 6, Call::Get(K, Some(1))),
            ],
        );
        fails(&rec, None, "stale read");
    }

    #[test]
    fn a_read_from_the_future_is_reported() {
        let rec = hist(
            &[],
            vec![
                (1, 1, 2, Call::Get(K, Some(1))),
                (0, 3, 4, Call::Insert(K, 1)),
            ],
        );
        fails(&rec, None, "read from the future");
    }

    #[test]
    fn a_non_monotonic_reader_is_reported() {
        // Thread 0's insert of 2 runs across both reads: each alone could see 1 or 2, but
        // after seeing 2 the same reader must not see 1 again.
        let rec = hist(
            &[(K, 1)],
            vec![
                (0, 3, 10, Call::Insert(K, 2)),
                (1, 4, 5, Call::Get(K, Some(2))),
                (1, 6, 7, Call::Get(K, Some(1))),
            ],
        );
        fails(&rec, None, "non-monotonic read");
        // Another reader after the first read ended: real-time order of reads.
        let rec = hist(
            &[(K, 1)],
            vec![
                (0, 3, 10, Call::Insert(K, 2)),
                (1, 4, 5, Call::Get(K, Some(2))),
                (2, 6, 7, Call::Get(K, Some(1))),
            ],
        );
        fails(&rec, None, "an earlier read");
        // Absent after present, present after absent, within one get_many's neighbours.
        let rec = hist(
            &[(K, 1)],
            vec![
                (0, 3, 10, Call::Delete(K)),
                (1, 4, 5, Call::GetMany(vec![K], vec![None])),
                (1, 6, 7, Call::Get(K, Some(1))),
            ],
        );
        fails(&rec, None, "non-monotonic read");
    }

    #[test]
    fn a_scan_missing_an_unchanged_key_is_reported() {
        let rec = hist(
            &[],
            vec![
                (0, 1, 2, Call::Insert(K, 1)),
                (0, 3, 4, Call::Insert(K2, 2)),
                (
                    1,
                    5,
                    8,
                    Call::Range(Bound::Included(K), Bound::Unbounded, vec![(K, 1)]),
                ),
            ],
        );
        fails(&rec, None, "scan left out key");
        // A key written during the scan may be left out; one absent throughout must not
        // be returned.
        let ok = hist(
            &[],
            vec![
                (0, 1, 2, Call::Insert(K, 1)),
                (0, 3, 4, Call::Insert(K2, 2)),
                (0, 6, 7, Call::Insert(K2, 3)),
                (
                    1,
                    5,
                    8,
                    Call::Range(Bound::Included(K), Bound::Unbounded, vec![(K, 1)]),
                ),
            ],
        );
        check_history(&ok, None).unwrap();
        let ghost = hist(
            &[],
            vec![
                (0, 1, 2, Call::Insert(K, 1)),
                (0, 3, 4, Call::Delete(K)),
                (
                    1,
                    5,
                    8,
                    Call::Range(Bound::Unbounded, Bound::Unbounded, vec![(K, 1)]),
                ),
            ],
        );
        fails(&ghost, None, "stale read");
    }

    #[test]
    fn a_scan_out_of_order_or_out_of_bounds_is_reported() {
        let rec = hist(
            &[(K, 1), (K2, 2)],
            vec![(
                1,
                1,
                2,
                Call::Range(Bound::Unbounded, Bound::Unbounded, vec![(K2, 2), (K, 1)]),
            )],
        );
        fails(&rec, None, "out of order");
        let rec = hist(
            &[(K, 1), (K2, 2)],
            vec![(
                1,
                1,
                2,
                Call::Range(Bound::Excluded(K), Bound::Unbounded, vec![(K, 1), (K2, 2)]),
            )],
        );
        fails(&rec, None, "outside the scanned ranges");
    }

    #[test]
    fn unknown_values_and_private_keys_are_checked() {
        let rec = hist(&[(K, 1)], vec![(1, 1, 2, Call::Get(K, Some(9)))]);
        fails(&rec, None, "never written");
        let rec = hist(&[(K, 1)], vec![(1, 1, 2, Call::Get(K2, Some(1)))]);
        fails(&rec, None, "was written to key");
        let rec = hist(
            &[],
            vec![
                (0, 1, 2, Call::Insert(P0, 1)),
                (0, 3, 4, Call::Get(P0, None)),
            ],
        );
        fails(&rec, None, "its own history says");
        let rec = hist(&[], vec![(1, 1, 2, Call::Insert(P0, 1))]);
        fails(&rec, None, "private to thread 0");
    }

    #[test]
    fn batches_are_seen_whole_by_their_thread_and_final_contents_are_checked() {
        // A batch's intermediate version is stale once the batch returned.
        let rec = hist(
            &[],
            vec![
                (
                    0,
                    1,
                    2,
                    Call::Batch(vec![BatchOp::Insert(K, 1), BatchOp::Insert(K, 2)]),
                ),
                (0, 3, 4, Call::Get(K, Some(1))),
            ],
        );
        fails(&rec, None, "same call replaced it");
        // Final contents: the last write wins; for overlapping last writes either, but
        // not one a read after it proved older.
        let rec = hist(
            &[],
            vec![(0, 1, 4, Call::Insert(K, 1)), (1, 2, 3, Call::Insert(K, 2))],
        );
        for v in [1, 2] {
            check_history(&rec, Some(&[(K, v)].into())).unwrap();
        }
        fails(&rec, Some(&BTreeMap::new()), "left out key");
        let mut seen = rec.clone();
        seen.events
            .extend(hist(&[], vec![(2, 5, 6, Call::Get(K, Some(1)))]).events);
        fails(&seen, Some(&[(K, 2)].into()), "saw a newer version");
        check_history(&seen, Some(&[(K, 1)].into())).unwrap();
    }
}
