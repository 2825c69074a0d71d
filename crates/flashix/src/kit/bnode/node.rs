//! B+-tree node format: a slotted page of fixed-length 16-byte entries (FD-tree paper,
//! App. D: "the slotted page layout for fixed-length records"), in two forms.
//!
//! **Plain** nodes (kinds 1 leaf, 2 internal; the PIO B-tree's internal nodes, the LA-tree):
//!
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind (1 leaf, 2 internal)
//! 16      4     entry count n
//! 20      4     level (0 = leaf)
//! 24      8     link: leaf -> right sibling page (NONE at the end);
//!               internal -> leftmost child (keys below the first separator)
//! 32      16*n  entries, sorted by key: leaf (key, value); internal (separator, child)
//!               where `child` holds keys >= separator (and < the next separator)
//! ```
//!
//! **B-link** nodes (kinds 5 leaf, 6 internal; the B+-tree, `crate::engine::btree`): Lehman
//! and Yao's "Efficient locking for concurrent operations on B-trees" (1981) gives every
//! node a right link and a high key, so that a reader that reaches a node after it split
//! finds the keys that moved by following the link ([`Side::above`]):
//!
//! ```text
//! offset  size  field
//! 0       16    page envelope, kind 5 leaf or 6 internal
//! 16      4     entry count n
//! 20      4     level (0 = leaf)
//! 24      8     link: as a plain node's (a leaf's is its right sibling, as `right`)
//! 32      8     right: the right sibling at the same level (NONE at the level's end)
//! 40      8     high key: every key of the node and of its subtree is below it; it bounds
//!               the node only when `right` is not NONE (the level's last node has none)
//! 48      16*n  entries, as a plain node's
//! ```
//!
//! The accessors below read either form (the entries' offset follows the kind); [`side`]
//! is `None` for a plain node.

use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, read_u32, read_u64, write_u32, write_u64};

pub const KIND_LEAF: u16 = 1;
pub const KIND_INTERNAL: u16 = 2;
/// A B-link leaf (module doc).
pub const KIND_BLINK_LEAF: u16 = 5;
/// A B-link internal node (module doc).
pub const KIND_BLINK_INTERNAL: u16 = 6;
/// No page (end of the leaf chain).
pub const NONE: u64 = u64::MAX;
const COUNT: usize = page::HEADER;
const LEVEL: usize = page::HEADER + 4;
const LINK: usize = page::HEADER + 8;
const ENTRIES: usize = page::HEADER + 16;
const RIGHT: usize = page::HEADER + 16;
const HIGH: usize = page::HEADER + 24;
const BLINK_ENTRIES: usize = page::HEADER + 32;
const ENTRY: usize = 16;

/// The two forms of a node (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    BLink,
}

/// A B-link node's place in its level: its right sibling and its high key (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub right: u64,
    pub high: u64,
}

impl Side {
    /// The last node of a level: no right sibling, no high key.
    pub const END: Side = Side {
        right: NONE,
        high: 0,
    };

    /// The left half of a split: `right` is the new sibling, holding the keys from `high`.
    pub fn split(right: PageId, high: u64) -> Side {
        Side { right, high }
    }

    /// Whether `k` lies above the node (in its right sibling's range or beyond).
    pub fn above(&self, k: u64) -> bool {
        self.right != NONE && k >= self.high
    }
}

/// Entries that fit in a plain node of `page_size` bytes (always even for power-of-two
/// pages).
pub fn capacity(page_size: usize) -> usize {
    (page_size - ENTRIES) / ENTRY
}

/// Entries that fit in a node of `format` on `page_size`-byte pages.
pub fn capacity_of(format: Format, page_size: usize) -> usize {
    match format {
        Format::Plain => capacity(page_size),
        Format::BLink => (page_size - BLINK_ENTRIES) / ENTRY,
    }
}

/// The form of the node in `b`.
pub fn format(b: &[u8]) -> Format {
    match page::kind(b) {
        KIND_BLINK_LEAF | KIND_BLINK_INTERNAL => Format::BLink,
        _ => Format::Plain,
    }
}

/// Where the entries of the node in `b` begin.
fn base(b: &[u8]) -> usize {
    match format(b) {
        Format::Plain => ENTRIES,
        Format::BLink => BLINK_ENTRIES,
    }
}

/// A B-link node's right sibling and high key; `None` for a plain node.
pub fn side(b: &[u8]) -> Option<Side> {
    match format(b) {
        Format::Plain => None,
        Format::BLink => Some(Side {
            right: read_u64(b, RIGHT),
            high: read_u64(b, HIGH),
        }),
    }
}

pub fn count(b: &[u8]) -> usize {
    read_u32(b, COUNT) as usize
}

pub fn level(b: &[u8]) -> u32 {
    read_u32(b, LEVEL)
}

pub fn is_leaf(b: &[u8]) -> bool {
    matches!(page::kind(b), KIND_LEAF | KIND_BLINK_LEAF)
}

/// A node page of either form.
pub fn is_node(b: &[u8]) -> bool {
    matches!(
        page::kind(b),
        KIND_LEAF | KIND_INTERNAL | KIND_BLINK_LEAF | KIND_BLINK_INTERNAL
    )
}

/// An internal node of either form.
pub fn is_internal(b: &[u8]) -> bool {
    matches!(page::kind(b), KIND_INTERNAL | KIND_BLINK_INTERNAL)
}

pub fn link(b: &[u8]) -> u64 {
    read_u64(b, LINK)
}

pub fn set_link(b: &mut [u8], v: u64) {
    write_u64(b, LINK, v)
}

pub fn key(b: &[u8], i: usize) -> u64 {
    read_u64(b, base(b) + i * ENTRY)
}

pub fn val(b: &[u8], i: usize) -> u64 {
    read_u64(b, base(b) + i * ENTRY + 8)
}

pub fn set_val(b: &mut [u8], i: usize, v: u64) {
    let at = base(b) + i * ENTRY + 8;
    write_u64(b, at, v)
}

pub fn set_key(b: &mut [u8], i: usize, k: u64) {
    let at = base(b) + i * ENTRY;
    write_u64(b, at, k)
}

/// The format rules a node page read from the device must hold before its accessors run
/// ([`crate::buffer::PageCheck`]): an entry count within the page, and level 0 exactly for
/// leaves. Pages of other kinds (an engine's other page formats) are left to their own
/// decoders.
pub fn check_page(pid: PageId, b: &[u8]) -> Result<()> {
    let kind = page::kind(b);
    if !is_node(b) {
        return Ok(());
    }
    let bad = |d: String| Err(Error::corruption(page::DATA_FILE, Some(pid), d));
    if b.len() < base(b) {
        return bad(format!("node page of {} bytes", b.len()));
    }
    let (n, cap) = (count(b), capacity_of(format(b), b.len()));
    if n > cap {
        return bad(format!("node holds {n} entries, a page holds {cap}"));
    }
    if (level(b) == 0) != is_leaf(b) {
        return bad(format!("node of kind {kind} at level {}", level(b)));
    }
    Ok(())
}

/// Binary search among the entries: `Ok(i)` if found, `Err(i)` where it would go.
pub fn search(b: &[u8], k: u64) -> Result<usize, usize> {
    let (mut lo, mut hi) = (0, count(b));
    while lo < hi {
        let mid = (lo + hi) / 2;
        let km = key(b, mid);
        if km == k {
            return Ok(mid);
        }
        if km < k {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Err(lo)
}

/// Child slot of an internal node for `k`: 0 is the leftmost child, `s >= 1` the child of
/// entry `s - 1`.
pub fn child_slot(b: &[u8], k: u64) -> usize {
    match search(b, k) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

/// The child page in slot `s`.
pub fn child_at(b: &[u8], s: usize) -> u64 {
    if s == 0 {
        link(b)
    } else {
        val(b, s - 1)
    }
}

/// All entries.
pub fn entries(b: &[u8]) -> Vec<(u64, u64)> {
    (0..count(b)).map(|i| (key(b, i), val(b, i))).collect()
}

/// Rewrite a node from scratch.
pub fn init(b: &mut [u8], level: u32, link: u64, entries: &[(u64, u64)]) {
    b[page::HEADER..].fill(0);
    page::set_kind(b, if level == 0 { KIND_LEAF } else { KIND_INTERNAL });
    write_u32(b, COUNT, entries.len() as u32);
    write_u32(b, LEVEL, level);
    set_link(b, link);
    for (i, &(k, v)) in entries.iter().enumerate() {
        set_key(b, i, k);
        set_val(b, i, v);
    }
}

/// Rewrite a node from scratch as a B-link node: `link` is an internal node's leftmost
/// child (a leaf's link is its right sibling, `side.right`).
pub fn init_blink(b: &mut [u8], level: u32, link: u64, side: Side, entries: &[(u64, u64)]) {
    b[page::HEADER..].fill(0);
    let leaf = level == 0;
    page::set_kind(
        b,
        if leaf {
            KIND_BLINK_LEAF
        } else {
            KIND_BLINK_INTERNAL
        },
    );
    write_u32(b, COUNT, entries.len() as u32);
    write_u32(b, LEVEL, level);
    set_link(b, if leaf { side.right } else { link });
    write_u64(b, RIGHT, side.right);
    write_u64(b, HIGH, side.high);
    for (i, &(k, v)) in entries.iter().enumerate() {
        set_key(b, i, k);
        set_val(b, i, v);
    }
}

/// Rewrite a node from scratch in the form `side` says: B-link with that place in its
/// level, or plain (`None`).
pub fn init_as(b: &mut [u8], level: u32, link: u64, side: Option<Side>, es: &[(u64, u64)]) {
    match side {
        Some(s) => init_blink(b, level, link, s, es),
        None => init(b, level, link, es),
    }
}

/// Insert an entry at position `i` (the caller checked there is room).
pub fn insert_at(b: &mut [u8], i: usize, k: u64, v: u64) {
    let n = count(b);
    page::open_slot(b, base(b), ENTRY, n, i);
    set_key(b, i, k);
    set_val(b, i, v);
    write_u32(b, COUNT, (n + 1) as u32);
}

/// Remove the entry at position `i`.
pub fn remove_at(b: &mut [u8], i: usize) {
    let n = count(b);
    page::close_slot(b, base(b), ENTRY, n, i);
    write_u32(b, COUNT, (n - 1) as u32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn insert_remove_search_match_a_sorted_vec(keys in proptest::collection::btree_set(any::<u64>(), 0..30), probe in any::<u64>(), blink in any::<bool>()) {
            let mut b = vec![0u8; 1024];
            let place = Side { right: 9, high: u64::MAX };
            if blink {
                init_blink(&mut b, 0, NONE, place, &[]);
            } else {
                init(&mut b, 0, NONE, &[]);
            }
            for (n, &k) in keys.iter().rev().enumerate() {
                let pos = search(&b, k).unwrap_err();
                insert_at(&mut b, pos, k, k ^ 1);
                prop_assert_eq!(count(&b), n + 1);
            }
            let want: Vec<(u64, u64)> = keys.iter().map(|&k| (k, k ^ 1)).collect();
            prop_assert_eq!(entries(&b), want.clone());
            prop_assert_eq!(search(&b, probe).is_ok(), keys.contains(&probe));
            if let Some(&first) = keys.iter().next() {
                remove_at(&mut b, 0);
                prop_assert_eq!(search(&b, first).is_ok(), false);
                prop_assert_eq!(entries(&b), want[1..].to_vec());
            }
            // The header outlives every change of the entries.
            prop_assert_eq!(side(&b), blink.then_some(place));
            prop_assert_eq!(link(&b), if blink { 9 } else { NONE });
        }
    }

    /// The right sibling a search for `k` moves to (Lehman and Yao's move right).
    fn moves_right(b: &[u8], k: u64) -> Option<u64> {
        side(b).filter(|s| s.above(k)).map(|s| s.right)
    }

    #[test]
    fn a_blink_node_moves_right_at_and_above_its_high_key_only() {
        let mut b = vec![0u8; 512];
        init_blink(&mut b, 1, 40, Side::split(77, 100), &[(50, 41), (70, 42)]);
        assert_eq!(format(&b), Format::BLink);
        assert!(is_internal(&b) && !is_leaf(&b));
        assert_eq!((link(&b), child_at(&b, 0), child_at(&b, 2)), (40, 40, 42));
        assert_eq!(moves_right(&b, 99), None);
        assert_eq!(moves_right(&b, 100), Some(77));
        assert_eq!(moves_right(&b, u64::MAX), Some(77));
        // The last node of a level bounds nothing.
        init_blink(&mut b, 0, NONE, Side::END, &[(1, 2)]);
        assert_eq!(moves_right(&b, u64::MAX), None);
        assert!(is_leaf(&b));
        assert_eq!(link(&b), NONE);
        // A plain node never moves right.
        init(&mut b, 0, 5, &[(1, 2)]);
        assert_eq!((side(&b), moves_right(&b, u64::MAX)), (None, None));
    }

    #[test]
    fn a_blink_node_holds_one_entry_less_than_a_plain_one() {
        assert_eq!(capacity_of(Format::BLink, 4096), 253);
        assert_eq!(capacity_of(Format::Plain, 4096), capacity(4096));
        let mut b = vec![0u8; 4096];
        let full: Vec<(u64, u64)> = (0..253).map(|i| (i, i)).collect();
        init_blink(&mut b, 0, NONE, Side::END, &full);
        assert!(check_page(1, &b).is_ok());
        write_u32(&mut b, COUNT, 254);
        assert!(check_page(1, &b).is_err());
    }

    #[test]
    fn capacity_is_even() {
        for ps in [512, 1024, 2048, 4096, 8192] {
            assert_eq!(capacity(ps) % 2, 0);
        }
        assert_eq!(capacity(4096), 254);
    }

    /// Hostile bytes (crate::hostile): a node page either fails [`check_page`] with
    /// corruption or keeps every accessor in bounds.
    #[test]
    fn hostile_node_pages_are_refused_or_safe_to_read() {
        let mut plain = vec![0u8; 512];
        init(&mut plain, 1, 77, &[(1, 10), (5, 11), (9, 12)]);
        let mut blink = vec![0u8; 512];
        init_blink(&mut blink, 1, 77, Side::split(80, 9), &[(1, 10), (5, 11)]);
        for valid in [plain, blink] {
            crate::hostile::fuzz_page("B+-tree node", 6, &valid, |b| {
                crate::error::ok_or_corruption(check_page(6, b))?;
                if check_page(6, b).is_ok() && is_node(b) {
                    let _ = entries(b);
                    for k in [0, 5, u64::MAX] {
                        let s = child_slot(b, k);
                        let _ = child_at(b, s);
                        let _ = search(b, k);
                        let _ = moves_right(b, k);
                    }
                }
                Ok(())
            });
        }
    }

    /// Regression (hostile bytes): a node whose count claims `u32::MAX` entries under a
    /// valid checksum is corruption, not an out-of-bounds read.
    #[test]
    fn a_forged_node_claiming_u32_max_entries_is_corruption() {
        let mut b = vec![0u8; 512];
        init(&mut b, 0, NONE, &[(1, 2)]);
        write_u32(&mut b, COUNT, u32::MAX);
        page::seal(3, &mut b);
        assert!(page::verify(3, &b).is_ok());
        assert!(matches!(
            check_page(3, &b),
            Err(Error::Corruption { page: Some(3), .. })
        ));
    }
}
