//! B+-tree node format: a slotted page of fixed-length 16-byte entries (FD-tree paper,
//! App. D: "the slotted page layout for fixed-length records").
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

use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, read_u32, read_u64, write_u32, write_u64};

pub const KIND_LEAF: u16 = 1;
pub const KIND_INTERNAL: u16 = 2;
/// No page (end of the leaf chain).
pub const NONE: u64 = u64::MAX;
const COUNT: usize = page::HEADER;
const LEVEL: usize = page::HEADER + 4;
const LINK: usize = page::HEADER + 8;
const ENTRIES: usize = page::HEADER + 16;
const ENTRY: usize = 16;

/// Entries that fit in a page of `page_size` bytes (always even for power-of-two pages).
pub fn capacity(page_size: usize) -> usize {
    (page_size - ENTRIES) / ENTRY
}

pub fn count(b: &[u8]) -> usize {
    read_u32(b, COUNT) as usize
}

pub fn level(b: &[u8]) -> u32 {
    read_u32(b, LEVEL)
}

pub fn is_leaf(b: &[u8]) -> bool {
    page::kind(b) == KIND_LEAF
}

pub fn link(b: &[u8]) -> u64 {
    read_u64(b, LINK)
}

pub fn set_link(b: &mut [u8], v: u64) {
    write_u64(b, LINK, v)
}

pub fn key(b: &[u8], i: usize) -> u64 {
    read_u64(b, ENTRIES + i * ENTRY)
}

pub fn val(b: &[u8], i: usize) -> u64 {
    read_u64(b, ENTRIES + i * ENTRY + 8)
}

pub fn set_val(b: &mut [u8], i: usize, v: u64) {
    write_u64(b, ENTRIES + i * ENTRY + 8, v)
}

pub fn set_key(b: &mut [u8], i: usize, k: u64) {
    write_u64(b, ENTRIES + i * ENTRY, k)
}

/// The format rules a node page read from the device must hold before its accessors run
/// ([`crate::buffer::PageCheck`]): an entry count within the page, and level 0 exactly for
/// leaves. Pages of other kinds (an engine's other page formats) are left to their own
/// decoders.
pub fn check_page(pid: PageId, b: &[u8]) -> Result<()> {
    let kind = page::kind(b);
    if kind != KIND_LEAF && kind != KIND_INTERNAL {
        return Ok(());
    }
    let bad = |d: String| Err(Error::corruption(page::DATA_FILE, Some(pid), d));
    if b.len() < ENTRIES {
        return bad(format!("node page of {} bytes", b.len()));
    }
    let (n, cap) = (count(b), capacity(b.len()));
    if n > cap {
        return bad(format!("node holds {n} entries, a page holds {cap}"));
    }
    if (level(b) == 0) != (kind == KIND_LEAF) {
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

/// Insert an entry at position `i` (the caller checked there is room).
pub fn insert_at(b: &mut [u8], i: usize, k: u64, v: u64) {
    let n = count(b);
    page::open_slot(b, ENTRIES, ENTRY, n, i);
    set_key(b, i, k);
    set_val(b, i, v);
    write_u32(b, COUNT, (n + 1) as u32);
}

/// Remove the entry at position `i`.
pub fn remove_at(b: &mut [u8], i: usize) {
    let n = count(b);
    page::close_slot(b, ENTRIES, ENTRY, n, i);
    write_u32(b, COUNT, (n - 1) as u32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn insert_remove_search_match_a_sorted_vec(keys in proptest::collection::btree_set(any::<u64>(), 0..30), probe in any::<u64>()) {
            let mut b = vec![0u8; 512];
            init(&mut b, 0, NONE, &[]);
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
        }
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
        let mut valid = vec![0u8; 512];
        init(&mut valid, 1, 77, &[(1, 10), (5, 11), (9, 12)]);
        crate::hostile::fuzz_page("B+-tree node", 6, &valid, |b| {
            crate::error::ok_or_corruption(check_page(6, b))?;
            if check_page(6, b).is_ok() && matches!(page::kind(b), KIND_LEAF | KIND_INTERNAL) {
                let _ = entries(b);
                for k in [0, 5, u64::MAX] {
                    let s = child_slot(b, k);
                    let _ = child_at(b, s);
                    let _ = search(b, k);
                }
            }
            Ok(())
        });
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
