//! The streaming merge of a range batch's sources, newest level first (the FD-tree's head
//! trees and runs, the LSM-tree's C0 and components): for each key the newest level holding
//! an entry of it decides (a normal entry is returned, a filter or tombstone hides it),
//! unless the range tombstones of a newer level cover the key ([`super::tombs`]: a level's
//! own entry is newer than its tombstones). One pass over the sources' entries, a forward
//! cursor per level's tombstones.

use super::entry::{Entry, Kind};
use super::tombs::Tombs;

/// The entries one level contributes to a range batch, sorted by key.
pub struct Source {
    /// The level's index among the `tombs` given to [`merge_newest_first`] (0 the newest).
    pub level: usize,
    pub entries: Vec<Entry>,
}

/// Merge the sources of a batch (newest level first, each sorted by key) in one streaming
/// pass over `[lo, hi]`: the first source holding a key decides it, unless the
/// range tombstones of a newer level cover the key (`tombs[l]`: level l's, C0 first; a level
/// without a source may hold some). Tombstones and hidden keys are left out; the rest goes
/// to `out` in key order. With a handful of levels, picking the least head among them costs
/// less than a map of every entry.
pub fn merge_newest_first(
    sources: &[Source],
    tombs: &[&Tombs],
    lo: u64,
    hi: u64,
    out: &mut Vec<(u64, u64)>,
) {
    let mut at: Vec<usize> = sources
        .iter()
        .map(|s| s.entries.partition_point(|e| e.key < lo))
        .collect();
    // Keys go up, so each level's cursor only moves forward.
    let mut covers: Vec<_> = tombs.iter().map(|t| t.cursor()).collect();
    loop {
        // The least key left (on a tie the newest source, the first, wins), and the least
        // key of the other sources: the winner's entries below it need no comparison.
        let mut best: Option<(u64, usize)> = None;
        let mut bound: Option<u64> = None;
        for (i, s) in sources.iter().enumerate() {
            if let Some(e) = s.entries.get(at[i]).filter(|e| e.key <= hi) {
                match best {
                    Some((k, _)) if e.key >= k => {
                        bound = Some(bound.map_or(e.key, |b| b.min(e.key)))
                    }
                    _ => {
                        if let Some((k, _)) = best {
                            bound = Some(bound.map_or(k, |b| b.min(k)));
                        }
                        best = Some((e.key, i));
                    }
                }
            }
        }
        let Some((key, win)) = best else {
            return;
        };
        let newer = sources[win].level.min(covers.len());
        let tombs_above = tombs[..newer].iter().any(|t| !t.is_empty());
        let s = &sources[win].entries;
        if bound.map_or(true, |b| key < b) {
            // A run of the winner alone: up to the other sources' least key, or `hi`.
            let mut j = at[win];
            while let Some(e) = s.get(j) {
                if e.key > hi || bound.is_some_and(|b| e.key >= b) {
                    break;
                }
                let hidden = tombs_above && covers[..newer].iter_mut().any(|c| c.covers(e.key));
                if e.kind == Kind::Normal && !hidden {
                    out.push((e.key, e.val));
                }
                j += 1;
            }
            at[win] = j;
            continue;
        }
        // Several sources hold `key`: the newest decides, the others' entries are older.
        let e = s[at[win]];
        let hidden = tombs_above && covers[..newer].iter_mut().any(|c| c.covers(key));
        if e.kind == Kind::Normal && !hidden {
            out.push((e.key, e.val));
        }
        for (i, s) in sources.iter().enumerate() {
            while s.entries.get(at[i]).is_some_and(|e| e.key == key) {
                at[i] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The streaming merge equals the point search's rule applied key by key: levels
        /// newest first, a level's own entry decides first, then its range tombstones.
        /// Some levels hold range tombstones but no source (an empty component).
        #[test]
        fn merge_newest_first_applies_the_search_rule_to_every_key(
            raw in proptest::collection::vec(
                (
                    proptest::option::of(proptest::collection::btree_map(
                        0u64..80,
                        (any::<u64>(), any::<bool>()),
                        0..25,
                    )),
                    proptest::collection::vec((0u64..80, 0u64..15), 0..4),
                ),
                1..6,
            ),
            lo in 0u64..90,
            hi in 0u64..90,
        ) {
            let mut sources = Vec::new();
            let mut tombs = Vec::new();
            let mut levels: Vec<Option<BTreeMap<u64, Entry>>> = Vec::new();
            for (level, (entries, ranges)) in raw.iter().enumerate() {
                let mut t = Tombs::new();
                for &(lo, len) in ranges {
                    t.add(lo, lo + len);
                }
                tombs.push(t);
                let es: Option<BTreeMap<u64, Entry>> = entries.as_ref().map(|m| {
                    m.iter()
                        .map(|(&k, &(v, normal))| {
                            let kind = if normal { Kind::Normal } else { Kind::Filter };
                            (k, Entry::new(k, v, kind))
                        })
                        .collect()
                });
                if let Some(es) = &es {
                    sources.push(Source { level, entries: es.values().copied().collect() });
                }
                levels.push(es);
            }
            let mut want = Vec::new();
            for key in lo..=hi {
                for (es, t) in levels.iter().zip(&tombs) {
                    if let Some(e) = es.as_ref().and_then(|m| m.get(&key)) {
                        if e.kind == Kind::Normal {
                            want.push((key, e.val));
                        }
                        break;
                    }
                    if t.covers(key) {
                        break;
                    }
                }
            }
            let refs: Vec<&Tombs> = tombs.iter().collect();
            let mut got = Vec::new();
            merge_newest_first(&sources, &refs, lo, hi, &mut got);
            prop_assert_eq!(got, want);
        }
    }
}
