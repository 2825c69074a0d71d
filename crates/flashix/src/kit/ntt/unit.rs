//! Index units and the pages that hold them (BFTL's "index units" packed into "sectors",
//! Wu, Kuo, Chang; here packed into device pages), and BFTL's commit policy.
//!
//! # Page format
//!
//! ```text
//! offset  size  field
//! 0       16    page envelope (crate::page): crc32c, page id, kind KIND_UNITS
//! 16      2     number of groups g (u16 LE)
//! 18      ...   g groups, back to back:
//!                 8   node id (u64 LE)
//!                 2   number of units n (u16 LE), n >= 1
//!                 17n units
//! ```
//!
//! A unit is 17 bytes: a tag and two u64 operands `a`, `b` (LE):
//!
//! | tag | unit       | a       | b     | effect on the node                          |
//! |-----|------------|---------|-------|---------------------------------------------|
//! | 1   | `Insert`   | key     | value | put the entry (leaf: record; internal: child) |
//! | 2   | `Delete`   | key     | 0     | remove the entry if present                  |
//! | 3   | `Reset`    | level   | link  | the node starts empty at `level`; `link` is an internal node's leftmost child |
//! | 4   | `Truncate` | key     | 0     | remove every entry with key >= `a` (node split) |
//! | 5   | `SetLink`  | link    | 0     | new leftmost child (a removed child)          |
//!
//! A node's content is its units applied in order: the units of each page of its node
//! translation table list, in list order, then those still in the reservation buffer.
//! Unused bytes after the last group are zero.

use crate::error::{Error, Result};
use crate::io::PageId;
use crate::page::{self, read_u64, write_u64, DATA_FILE};

/// Page kind of a page of index units.
pub const KIND_UNITS: u16 = 0x4246;
/// Bytes of one unit.
pub const UNIT: usize = 17;
const GROUPS: usize = page::HEADER;
const BODY: usize = page::HEADER + 2;
/// Bytes of a group's header: node id and unit count.
pub const GROUP_HEADER: usize = 10;

/// One index unit: a change to one node (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Insert(u64, u64),
    Delete(u64),
    Reset { level: u32, link: u64 },
    Truncate(u64),
    SetLink(u64),
}

impl Unit {
    fn encode(self, out: &mut [u8]) {
        let (tag, a, b) = match self {
            Unit::Insert(k, v) => (1u8, k, v),
            Unit::Delete(k) => (2, k, 0),
            Unit::Reset { level, link } => (3, level as u64, link),
            Unit::Truncate(k) => (4, k, 0),
            Unit::SetLink(l) => (5, l, 0),
        };
        out[0] = tag;
        write_u64(out, 1, a);
        write_u64(out, 9, b);
    }

    fn decode(b: &[u8]) -> Option<Unit> {
        let (x, y) = (read_u64(b, 1), read_u64(b, 9));
        Some(match b[0] {
            1 => Unit::Insert(x, y),
            2 => Unit::Delete(x),
            3 => Unit::Reset {
                level: u32::try_from(x).ok()?,
                link: y,
            },
            4 => Unit::Truncate(x),
            5 => Unit::SetLink(x),
            _ => return None,
        })
    }
}

/// True when a page holds `groups` groups of `units` units in all.
pub fn fits(page_size: usize, groups: usize, units: usize) -> bool {
    BODY + groups * GROUP_HEADER + units * UNIT <= page_size
}

/// Units a page holds when it holds a single group.
pub fn units_per_page(page_size: usize) -> usize {
    (page_size - BODY - GROUP_HEADER) / UNIT
}

/// Pages a node of `units` units takes when written alone (compaction, a new node).
pub fn pages_for(units: usize, page_size: usize) -> usize {
    units.div_ceil(units_per_page(page_size)).max(1)
}

/// A page of units being filled.
#[derive(Debug, Clone)]
pub struct PageBuilder {
    buf: Vec<u8>,
    used: usize,
    groups: u16,
}

impl PageBuilder {
    pub fn new(page_size: usize) -> Self {
        let mut buf = vec![0u8; page_size];
        page::set_kind(&mut buf, KIND_UNITS);
        PageBuilder {
            buf,
            used: BODY,
            groups: 0,
        }
    }

    /// Units a new group could still take.
    pub fn room(&self) -> usize {
        (self.buf.len() - self.used).saturating_sub(GROUP_HEADER) / UNIT
    }

    /// Append a group (the caller checked `units.len() <= room()`, `units` non-empty).
    pub fn add(&mut self, node: u64, units: &[Unit]) {
        let at = self.used;
        write_u64(&mut self.buf, at, node);
        self.buf[at + 8..at + 10].copy_from_slice(&(units.len() as u16).to_le_bytes());
        let mut off = at + GROUP_HEADER;
        for u in units {
            u.encode(&mut self.buf[off..off + UNIT]);
            off += UNIT;
        }
        self.used = off;
        self.groups += 1;
        self.buf[GROUPS..GROUPS + 2].copy_from_slice(&self.groups.to_le_bytes());
    }

    /// The page, not sealed yet (the caller seals it for the page it goes to).
    pub fn into_unsealed(self) -> Vec<u8> {
        self.buf
    }

    /// The sealed page for page id `pid`.
    pub fn finish(mut self, pid: PageId) -> Vec<u8> {
        page::seal(pid, &mut self.buf);
        self.buf
    }
}

fn bad(pid: PageId, what: String) -> Error {
    Error::corruption(DATA_FILE, Some(pid), what)
}

/// Append the units of `node` in the page to `out`; returns how many there were. Groups
/// of other nodes are skipped by their headers (their units are checked when their own
/// node is read, and by `check_integrity`).
pub fn collect(buf: &[u8], pid: PageId, node: u64, out: &mut Vec<Unit>) -> Result<usize> {
    let before = out.len();
    walk(buf, pid, |id| id == node, |_, u| out.push(u))?;
    Ok(out.len() - before)
}

/// The units of every node of `nodes` in the page, in one pass over it: `(node, units)`
/// for each of them that has a group there (a node with several groups gets one entry,
/// its units in page order). For pages that many nodes name (the FBX-tree's log pages
/// read once for all the leaves of a range query).
pub fn collect_nodes(buf: &[u8], pid: PageId, nodes: &[u64]) -> Result<Vec<(u64, Vec<Unit>)>> {
    let mut out: Vec<(u64, Vec<Unit>)> = Vec::new();
    walk(
        buf,
        pid,
        |id| nodes.contains(&id),
        |id, u| match out.iter_mut().find(|(n, _)| *n == id) {
            Some((_, v)) => v.push(u),
            None => out.push((id, vec![u])),
        },
    )?;
    Ok(out)
}

/// Check the page's kind and group headers, and hand every unit of the groups whose node
/// `wanted` accepts to `f`, in page order. Units of other groups are not decoded.
fn walk(
    buf: &[u8],
    pid: PageId,
    wanted: impl Fn(u64) -> bool,
    mut f: impl FnMut(u64, Unit),
) -> Result<()> {
    if page::kind(buf) != KIND_UNITS {
        return Err(bad(
            pid,
            format!("page kind {:#x} is not an index-unit page", page::kind(buf)),
        ));
    }
    let g = u16::from_le_bytes([buf[GROUPS], buf[GROUPS + 1]]);
    let mut off = BODY;
    for i in 0..g {
        if off + GROUP_HEADER > buf.len() {
            return Err(bad(pid, format!("group {i} of {g} runs past the page")));
        }
        let n_id = read_u64(buf, off);
        let n = u16::from_le_bytes([buf[off + 8], buf[off + 9]]) as usize;
        let start = off + GROUP_HEADER;
        let end = start + n * UNIT;
        if n == 0 || end > buf.len() {
            return Err(bad(pid, format!("group {i} of node {n_id} has {n} units")));
        }
        if wanted(n_id) {
            for (j, ub) in buf[start..end].chunks_exact(UNIT).enumerate() {
                f(
                    n_id,
                    Unit::decode(ub).ok_or_else(|| {
                        bad(
                            pid,
                            format!("unit {j} of node {n_id} has an unknown tag or operand"),
                        )
                    })?,
                );
            }
        }
        off = end;
    }
    Ok(())
}

/// The result of BFTL's commit policy: page contents, and for each node the pages that
/// hold its units in unit order (indices into `pages`).
#[derive(Debug)]
pub struct Packing {
    pub pages: Vec<PageBuilder>,
    pub chunks: Vec<(u64, Vec<usize>)>,
}

/// BFTL's commit policy (Wu et al.: "index units of the same node are packed into the same
/// sector as far as possible"): the reservation buffer's units, grouped by node, go into
/// as few pages as a node allows. Groups are taken largest first; a group larger than a
/// page fills pages of its own, and the rest of a group (or a whole small group) goes to
/// the first page with room for it (first-fit decreasing), else to a new page. A node's
/// units thus span `ceil(n / units_per_page)` pages, one page when they fit.
pub fn pack(mut groups: Vec<(u64, Vec<Unit>)>, page_size: usize) -> Packing {
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let per = units_per_page(page_size);
    let mut pages: Vec<PageBuilder> = Vec::new();
    let mut chunks = Vec::with_capacity(groups.len());
    for (node, units) in groups {
        let mut at = Vec::new();
        let mut rest: &[Unit] = &units;
        while rest.len() > per {
            let mut p = PageBuilder::new(page_size);
            p.add(node, &rest[..per]);
            at.push(pages.len());
            pages.push(p);
            rest = &rest[per..];
        }
        if !rest.is_empty() {
            let i = match pages.iter().position(|p| p.room() >= rest.len()) {
                Some(i) => i,
                None => {
                    pages.push(PageBuilder::new(page_size));
                    pages.len() - 1
                }
            };
            pages[i].add(node, rest);
            at.push(i);
        }
        chunks.push((node, at));
    }
    Packing { pages, chunks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit_strategy() -> impl Strategy<Value = Unit> {
        prop_oneof![
            (any::<u64>(), any::<u64>()).prop_map(|(k, v)| Unit::Insert(k, v)),
            any::<u64>().prop_map(Unit::Delete),
            (any::<u32>(), any::<u64>()).prop_map(|(level, link)| Unit::Reset { level, link }),
            any::<u64>().prop_map(Unit::Truncate),
            any::<u64>().prop_map(Unit::SetLink),
        ]
    }

    proptest! {
        /// Every node's units come back in order from the pages of its chunks, and no page
        /// overflows.
        #[test]
        fn pack_then_collect_gives_each_nodes_units_in_order(
            groups in proptest::collection::btree_map(0u64..50, proptest::collection::vec(unit_strategy(), 1..80), 1..12),
            ps in prop_oneof![Just(512usize), Just(1024), Just(2048)],
        ) {
            let groups: Vec<(u64, Vec<Unit>)> = groups.into_iter().collect();
            let packing = pack(groups.clone(), ps);
            let sealed: Vec<Vec<u8>> = packing
                .pages
                .into_iter()
                .enumerate()
                .map(|(i, p)| p.finish(100 + i as u64))
                .collect();
            for (i, b) in sealed.iter().enumerate() {
                prop_assert_eq!(b.len(), ps);
                page::verify(100 + i as u64, b).unwrap();
            }
            for (node, units) in &groups {
                let (_, at) = packing.chunks.iter().find(|c| c.0 == *node).unwrap();
                prop_assert_eq!(at.len(), pages_for(units.len(), ps));
                let mut got = Vec::new();
                for &i in at {
                    collect(&sealed[i], 100 + i as u64, *node, &mut got).unwrap();
                }
                prop_assert_eq!(&got, units);
            }
        }
    }

    /// One pass for many nodes gives each node what `collect` gives it alone, and leaves
    /// out the nodes not asked for and those without a group.
    #[test]
    fn collect_nodes_equals_collect_for_each_node() {
        let mut p = PageBuilder::new(512);
        p.add(3, &[Unit::Insert(1, 10), Unit::Delete(2)]);
        p.add(9, &[Unit::Reset { level: 0, link: 7 }]);
        p.add(3, &[Unit::Truncate(5)]);
        p.add(4, &[Unit::SetLink(8)]);
        let b = p.finish(6);
        let got = collect_nodes(&b, 6, &[4, 3, 11]).unwrap();
        let mut three = Vec::new();
        collect(&b, 6, 3, &mut three).unwrap();
        assert_eq!(three.len(), 3);
        assert_eq!(got, vec![(3, three), (4, vec![Unit::SetLink(8)])]);
        let mut bad = b.clone();
        page::set_kind(&mut bad, 7);
        assert!(collect_nodes(&bad, 6, &[3]).is_err());
    }

    #[test]
    fn first_fit_decreasing_shares_pages_and_keeps_big_groups_apart() {
        // 2 KiB pages: (2048 - 18 - 10) / 17 = 118 units alone; a page with one group of
        // k units has room for (2048 - 18 - 10 - 17k - 10) / 17 more.
        assert_eq!(units_per_page(2048), 118);
        let g = |node: u64, n: usize| (node, vec![Unit::Delete(node); n]);
        // 130 units of node 1: a full page of 118, then 12 units; 100 of node 2; 5 of 3.
        let p = pack(vec![g(3, 5), g(1, 130), g(2, 100)], 2048);
        // Order: node 1 (130): page 0 full, rest 12 -> page 1; node 2 (100): page 1 has
        // room (2048-18-10-204-10)/17 = 106 -> page 1; node 3 (5): page 1 has room
        // (2048-18-10-204-10-1700-10)/17 = 5 -> page 1.
        assert_eq!(p.pages.len(), 2);
        assert_eq!(p.chunks, vec![(1, vec![0, 1]), (2, vec![1]), (3, vec![1])]);
        assert_eq!(p.pages[1].room(), 0);
    }

    #[test]
    fn a_damaged_group_is_corruption_naming_the_page() {
        let mut p = PageBuilder::new(512);
        p.add(7, &[Unit::Insert(1, 2)]);
        let mut b = p.finish(9);
        b[BODY + GROUP_HEADER] = 99; // unknown tag
        let e = collect(&b, 9, 7, &mut Vec::new()).unwrap_err();
        assert!(matches!(&e, Error::Corruption { page: Some(9), .. }), "{e}");
        b[BODY + GROUP_HEADER] = 1;
        b[BODY + 8] = 200; // 200 units cannot fit in 512 bytes
        assert!(collect(&b, 9, 7, &mut Vec::new()).is_err());
    }

    /// Hostile bytes (crate::hostile): a damaged unit page gives a node's units or
    /// corruption, never a panic.
    #[test]
    fn hostile_unit_pages_collect_or_are_corruption() {
        let mut p = PageBuilder::new(512);
        p.add(3, &[Unit::Insert(1, 2), Unit::Reset { level: 1, link: 9 }]);
        p.add(4, &[Unit::Delete(7), Unit::SetLink(8), Unit::Truncate(2)]);
        let valid = p.finish(11);
        crate::hostile::fuzz_page("NTT unit page", 11, &valid, |b| {
            let mut out = Vec::new();
            crate::error::ok_or_corruption(collect(b, 11, 4, &mut out))?;
            crate::error::ok_or_corruption(collect_nodes(b, 11, &[3, 4]))
        });
    }
}
