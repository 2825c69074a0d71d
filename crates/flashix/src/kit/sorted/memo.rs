//! The memo of a multi-range scan (`Engine::scan_many`): the last page of sorted entries
//! read at each level (FD-tree) or component (LSM) during ONE call, so that neighbouring
//! ranges that fall in the same page read it once. It lives only for the call (no write
//! can change a page under it) and holds at most one decoded page per level: its memory
//! is bounded by the structure's height, like a cursor's.

use super::entry::Entry;
use crate::error::Result;
use crate::io::PageId;
use crate::kit::api::RangeCursor;

#[derive(Debug, Default)]
pub(crate) struct PageMemo {
    last: Vec<Option<(PageId, Vec<Entry>)>>,
}

/// `Engine::scan_many` for an engine whose range batch takes a memo: the ranges in order,
/// each scanned to its end by `batch`, one memo for the whole call.
pub(crate) fn scan_many_with_memo<E: ?Sized>(
    engine: &E,
    ranges: &[(u64, u64)],
    out: &mut Vec<(u64, u64)>,
    mut batch: impl FnMut(&E, &mut RangeCursor, &mut Vec<(u64, u64)>, &mut PageMemo) -> Result<()>,
) -> Result<()> {
    let mut memo = PageMemo::default();
    for &(lo, hi) in ranges {
        let mut cur = RangeCursor::bounded(lo, hi);
        while cur.next.is_some() {
            batch(engine, &mut cur, out, &mut memo)?;
        }
    }
    Ok(())
}

impl PageMemo {
    /// Page `pid`'s entries if it is the one kept for `level`.
    pub(crate) fn get(&mut self, level: usize, pid: PageId) -> Option<Vec<Entry>> {
        match self.last.get(level) {
            Some(Some((p, es))) if *p == pid => Some(es.clone()),
            _ => None,
        }
    }

    /// The entries of the page kept for `level` if every entry of `[lo, hi]` at that level
    /// must be in it: its first key is below `lo` and its last key above `hi` (strictly,
    /// so that no equal key, a fence say, can lie in a neighbouring page). A range inside
    /// the last page read then needs no descent.
    pub(crate) fn covering(&mut self, level: usize, lo: u64, hi: u64) -> Option<Vec<Entry>> {
        match self.last.get(level) {
            Some(Some((_, es)))
                if es.first().is_some_and(|f| f.key < lo)
                    && es.last().is_some_and(|l| hi < l.key) =>
            {
                Some(es.clone())
            }
            _ => None,
        }
    }

    /// Keep page `pid` (entries `es`) as `level`'s last page.
    pub(crate) fn keep(&mut self, level: usize, pid: PageId, es: &[Entry]) {
        if self.last.len() <= level {
            self.last.resize_with(level + 1, || None);
        }
        self.last[level] = Some((pid, es.to_vec()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::sorted::entry::Kind;

    #[test]
    fn a_memo_serves_only_the_page_it_keeps_for_that_level() {
        let e = Entry {
            key: 7,
            val: 1,
            kind: Kind::Normal,
        };
        let mut m = PageMemo::default();
        assert_eq!(m.get(0, 5), None);
        m.keep(2, 5, &[e]);
        assert_eq!(m.get(2, 5), Some(vec![e]));
        assert_eq!(m.get(2, 6), None);
        assert_eq!(m.get(1, 5), None);
        m.keep(2, 6, &[]);
        assert_eq!(m.get(2, 5), None);
        let at = |key| Entry {
            key,
            val: 0,
            kind: Kind::Normal,
        };
        m.keep(0, 9, &[at(10), at(20), at(30)]);
        assert!(m.covering(0, 11, 29).is_some());
        assert!(
            m.covering(0, 10, 29).is_none(),
            "an equal key may be in the page before"
        );
        assert!(
            m.covering(0, 11, 30).is_none(),
            "an equal key may be in the page after"
        );
        assert!(m.covering(0, 5, 15).is_none());
        assert!(m.covering(1, 11, 29).is_none());
    }
}
