//! Components C1..Cn: B+-trees built bottom-up in one contiguous extent, never changed in
//! place. Pages use the FD-tree page format ([`entry`]) with their own page kinds:
//!
//! - leaves (`KIND_LSM_LEAF`, level 0): pages `start .. start + leaves`, normal entries
//!   and tombstones sorted by key, one entry per key, every leaf non-empty; the link is
//!   unused ([`NONE`]): leaves are contiguous, so the next leaf is the next page.
//! - internal nodes (`KIND_LSM_INTERNAL`, level >= 1): after the leaves, level by level;
//!   the link is the leftmost child, entry `i` is (first key of child `i + 1`, child page).
//!   The root is the last page of the extent (a one-leaf component's root is its leaf).
//!
//! A point search's descent reads its internal nodes through the buffer pool, so they stay
//! cached, and the leaf through the pool only for the components that the pool can hold
//! after C0 and the newer components (see `lookup` in `search.rs`); merges and scans read past the
//! pool in `io_unit`-page requests. Components are written only through the device as new extents, and a freed
//! extent's pages are discarded from the pool, so the pool never holds a stale page.

use crate::durable::background::JobIo;
use crate::durable::PageRead;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Extent, PageId};
use crate::kit::sorted::entry::{self, Entry, Kind, Layout, NONE};
use crate::kit::sorted::seq::{ChunkWriter, SeqReader};
use crate::page::{self, DATA_FILE};
use serde::{Deserialize, Serialize};

pub const KIND_LSM_LEAF: u16 = 0x21;
pub const KIND_LSM_INTERNAL: u16 = 0x22;

/// A tombstone: the FD-tree's filter entry type (the key is deleted in older components).
pub const TOMBSTONE: Kind = Kind::Filter;

/// One component's durable description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    pub start: PageId,
    /// All pages of the extent: leaves, then internal nodes.
    pub pages: u64,
    pub leaves: u64,
    /// Levels of the B+-tree (1: the root is the only leaf).
    pub height: u32,
    pub root: PageId,
    /// Entries (normal and tombstones) and, among them, tombstones.
    pub entries: u64,
    pub tombstones: u64,
}

impl Component {
    pub fn extent(&self) -> Extent {
        Extent {
            start: self.start,
            len: self.pages,
        }
    }

    pub fn contains(&self, pid: PageId) -> bool {
        self.start <= pid && pid < self.start + self.pages
    }

    fn is_leaf(&self, pid: PageId) -> bool {
        self.start <= pid && pid < self.start + self.leaves
    }
}

pub fn corrupt(pid: Option<PageId>, what: impl Into<String>) -> Error {
    Error::corruption(DATA_FILE, pid, format!("LSM component: {}", what.into()))
}

/// A decoded page: kind, level, link, entries.
pub struct Node {
    pub kind: u16,
    pub level: u32,
    pub link: u64,
    pub entries: Vec<Entry>,
}

fn decode(pid: PageId, b: &[u8], lay: Layout) -> Result<Node> {
    page::verify(pid, b)?;
    let kind = lay.checked_kind(b).map_err(|e| corrupt(Some(pid), e))?;
    if kind != KIND_LSM_LEAF && kind != KIND_LSM_INTERNAL {
        return Err(corrupt(Some(pid), format!("page kind {kind}")));
    }
    let entries = lay.decode(b).map_err(|e| corrupt(Some(pid), e))?;
    Ok(Node {
        kind,
        level: entry::level(b),
        link: entry::link(b),
        entries,
    })
}

/// Read `n` pages from `first` in ONE request.
pub fn read_nodes(
    mut pager: impl PageRead,
    lay: Layout,
    first: PageId,
    n: u64,
) -> Result<Vec<Node>> {
    let ps = pager.pager().page_size();
    let mut buf = AlignedBuf::zeroed(ps * n as usize);
    pager.run_past(first, &mut buf)?;
    buf.chunks(ps)
        .enumerate()
        .map(|(i, b)| decode(first + i as u64, b, lay))
        .collect()
}

/// Read one page through the buffer pool (point searches: a component's upper nodes stay
/// cached). Component pages are never dirty in the pool and a freed component's pages are
/// discarded from it ([`Pager::free_extent`](crate::durable::Pager::free_extent)), so
/// the pool and past-the-pool reads agree.
pub fn read_node_cached(mut pager: impl PageRead, lay: Layout, pid: PageId) -> Result<Node> {
    pager.page(pid, |b| decode(pid, b, lay))?
}

/// Read `n` leaves of `c` from `first` in one request, checked to be non-empty leaves.
pub fn read_leaves(
    pager: impl PageRead,
    lay: Layout,
    c: &Component,
    first: PageId,
    n: u64,
) -> Result<Vec<Vec<Entry>>> {
    if !c.is_leaf(first) || !c.is_leaf(first + n - 1) {
        return Err(corrupt(
            Some(first),
            "leaf read outside the component's leaves",
        ));
    }
    read_nodes(pager, lay, first, n)?
        .into_iter()
        .enumerate()
        .map(|(i, nd)| {
            let pid = first + i as u64;
            if nd.kind != KIND_LSM_LEAF || nd.level != 0 || nd.entries.is_empty() {
                return Err(corrupt(Some(pid), "not a non-empty leaf"));
            }
            Ok(nd.entries)
        })
        .collect()
}

/// Check leaf `pid` of `c` (`b`) and append its entries, in order, to `out` (a merge's
/// reader decodes straight into its buffer).
pub fn decode_leaf_into(
    lay: Layout,
    c: &Component,
    pid: PageId,
    b: &[u8],
    out: &mut Vec<Entry>,
) -> Result<()> {
    if !c.is_leaf(pid) {
        return Err(corrupt(
            Some(pid),
            "leaf read outside the component's leaves",
        ));
    }
    let count = check_node(pid, b, lay, KIND_LSM_LEAF, 0)?;
    lay.decode_into(b, count, out)
        .map_err(|e| corrupt(Some(pid), e))
}

/// Read leaf `pid` of `c` through the buffer pool, checked to be a non-empty leaf.
pub fn read_leaf_cached(
    pager: impl PageRead,
    lay: Layout,
    c: &Component,
    pid: PageId,
) -> Result<Vec<Entry>> {
    if !c.is_leaf(pid) {
        return Err(corrupt(
            Some(pid),
            "leaf read outside the component's leaves",
        ));
    }
    let nd = read_node_cached(pager, lay, pid)?;
    if nd.kind != KIND_LSM_LEAF || nd.level != 0 || nd.entries.is_empty() {
        return Err(corrupt(Some(pid), "not a non-empty leaf"));
    }
    Ok(nd.entries)
}

/// The child of `node` for `key`: the last separator at or below `key`, else the leftmost.
fn child_for(nd: &Node, key: u64) -> u64 {
    let s = nd.entries.partition_point(|e| e.key <= key);
    if s == 0 {
        nd.link
    } else {
        nd.entries[s - 1].val
    }
}

/// Check page `pid`'s envelope, kind and level in place (no decoded copy); its entry
/// count. A leaf must hold an entry.
fn check_node(pid: PageId, b: &[u8], lay: Layout, kind: u16, level: u32) -> Result<usize> {
    page::verify(pid, b)?;
    let n = lay.checked_count(b).map_err(|e| corrupt(Some(pid), e))?;
    let (k, l) = (page::kind(b), entry::level(b));
    if kind == KIND_LSM_LEAF && (k != lay.kind(KIND_LSM_LEAF) || l != 0 || n == 0) {
        return Err(corrupt(Some(pid), "not a non-empty leaf"));
    }
    if kind == KIND_LSM_INTERNAL && (k != lay.kind(KIND_LSM_INTERNAL) || l != level) {
        return Err(corrupt(
            Some(pid),
            format!("node at level {l}, expected {level}"),
        ));
    }
    Ok(n)
}

/// Entry `i` of page `pid`, read in place.
fn entry_at(lay: Layout, pid: PageId, b: &[u8], i: usize) -> Result<Entry> {
    lay.entry(b, i).map_err(|e| corrupt(Some(pid), e))
}

/// Descend from the root to the leaf that holds `key` if any component entry does: one
/// single-page read per internal level, each node searched in its bytes.
pub fn leaf_for(mut pager: impl PageRead, lay: Layout, c: &Component, key: u64) -> Result<PageId> {
    let mut pid = c.root;
    for want in (1..c.height).rev() {
        let at = pid;
        pid = pager.page(at, |b| -> Result<u64> {
            let n = check_node(at, b, lay, KIND_LSM_INTERNAL, want)?;
            // The last separator at or below `key`, else the leftmost child.
            let s = lay
                .partition(b, n, entry::index_pos(key))
                .map_err(|e| corrupt(Some(at), e))?;
            Ok(match s {
                0 => entry::link(b),
                _ => entry_at(lay, at, b, s - 1)?.val,
            })
        })??;
        if !c.contains(pid) {
            return Err(corrupt(Some(pid), "child outside the component"));
        }
    }
    if !c.is_leaf(pid) {
        return Err(corrupt(Some(pid), "descent ends outside the leaves"));
    }
    Ok(pid)
}

/// The leaves that may hold keys in [lo, hi]: the leaf of `lo` and the leaf of `hi` (one
/// descent, one single-page read per internal level, through the pool; a second descent
/// for `hi` when it lies beyond the lowest internal node of `lo`).
pub fn leaf_span(
    mut pager: impl PageRead,
    lay: Layout,
    c: &Component,
    lo: u64,
    hi: u64,
) -> Result<(PageId, PageId)> {
    let mut pid = c.root;
    let mut last = None;
    // Keys of the current node's subtree are below `upper` (None: unbounded).
    let mut upper: Option<u64> = None;
    for want in (1..c.height).rev() {
        let nd = read_node_cached(&mut pager, lay, pid)?;
        if nd.kind != KIND_LSM_INTERNAL || nd.level != want {
            return Err(corrupt(
                Some(pid),
                format!("node at level {}, expected {want}", nd.level),
            ));
        }
        if want == 1 && !matches!(upper, Some(u) if u <= hi) {
            last = Some(child_for(&nd, hi));
        }
        let s = nd.entries.partition_point(|e| e.key <= lo);
        if let Some(next) = nd.entries.get(s) {
            upper = Some(next.key);
        }
        pid = child_for(&nd, lo);
        if !c.contains(pid) {
            return Err(corrupt(Some(pid), "child outside the component"));
        }
    }
    let last = match last {
        Some(l) => l,
        None if c.height <= 1 => pid,
        None => leaf_for(pager, lay, c, hi)?,
    };
    if !c.is_leaf(pid) || !c.is_leaf(last) || last < pid {
        return Err(corrupt(Some(pid), "descent ends outside the leaves"));
    }
    Ok((pid, last))
}

/// Point search: the entry of `key` in `c` (height single-page reads). Internal nodes are
/// read through the pool; the leaf too if `cache_leaf`, else past it.
pub fn find(
    mut pager: impl PageRead,
    lay: Layout,
    c: &Component,
    key: u64,
    cache_leaf: bool,
) -> Result<Option<Entry>> {
    let leaf = leaf_for(&mut pager, lay, c, key)?;
    // A binary search in the leaf's bytes, no decoded copy.
    let look = |b: &[u8]| -> Result<Option<Entry>> {
        let n = check_node(leaf, b, lay, KIND_LSM_LEAF, 0)?;
        let p = lay
            .partition(b, n, entry::index_pos(key))
            .map_err(|e| corrupt(Some(leaf), e))?;
        if p == 0 {
            return Ok(None);
        }
        let e = entry_at(lay, leaf, b, p - 1)?;
        Ok((e.key == key).then_some(e))
    };
    if cache_leaf {
        pager.page(leaf, look)?
    } else {
        pager.page_past(leaf, look)?
    }
}

/// A sequential reader of a component's leaves (the first `leaves` pages of its extent).
pub struct LeafReader {
    c: Component,
    seq: SeqReader,
}

impl LeafReader {
    pub fn new(c: Component) -> Self {
        LeafReader {
            seq: SeqReader::new(c.start, c.leaves),
            c,
        }
    }

    pub fn peek(&mut self, io: &mut dyn JobIo, lay: Layout, io_unit: u64) -> Result<Option<Entry>> {
        let c = self.c;
        self.seq.peek(io, io_unit, |pid, b, out| {
            decode_leaf_into(lay, &c, pid, b, out)
        })
    }

    pub fn advance(&mut self) {
        self.seq.advance();
    }

    /// The decoded entries not yet taken, from the one `peek` returned.
    pub fn buffered(&self) -> &[Entry] {
        self.seq.buffered()
    }

    /// Take `n` entries of [`LeafReader::buffered`].
    pub fn consume(&mut self, n: usize) {
        self.seq.consume(n);
    }

    /// The component's entries (a merge output's size bound).
    pub fn entries(&self) -> u64 {
        self.c.entries
    }

    /// Pages read so far.
    pub fn pages_read(&self) -> u64 {
        self.seq.pages_read()
    }
}

/// Builds a component bottom-up into one fresh extent: leaves as entries arrive, then the
/// internal levels from the leaves' first keys; all pages go out in sequential requests of
/// `io_unit` pages.
pub struct ComponentWriter {
    extent: Extent,
    lay: Layout,
    /// Entries in the leaf being built straight into the chunk's page bytes (0: none).
    cur: usize,
    /// The first key of that leaf.
    cur_first: u64,
    /// Pages are built here and written `io_unit` at a time (one request in flight).
    out: ChunkWriter,
    /// Pages of the component written (or in flight) so far.
    chunk_start: u64,
    pages: u64,
    entries: u64,
    tombstones: u64,
    last_key: Option<u64>,
    /// (first key, page) of every node of the level being written.
    firsts: Vec<(u64, PageId)>,
}

/// Upper bound of the pages of a component of `n` entries with `cap` per node.
fn max_pages(n: u64, cap: u64) -> u64 {
    let mut level = n.div_ceil(cap).max(1);
    let mut total = level;
    while level > 1 {
        level = level.div_ceil(cap + 1);
        total += level;
    }
    total
}

impl ComponentWriter {
    /// A writer for at most `max_entries` entries.
    pub fn new(io: &mut dyn JobIo, lay: Layout, io_unit: u64, max_entries: u64) -> Result<Self> {
        let max = max_pages(max_entries, lay.cap() as u64);
        let extent = io.alloc_extent(max)?;
        let ps = io.page_size();
        Ok(ComponentWriter {
            extent,
            lay,
            cur: 0,
            cur_first: 0,
            out: ChunkWriter::new(ps, io_unit.min(max)),
            chunk_start: 0,
            pages: 0,
            entries: 0,
            tombstones: 0,
            last_key: None,
            firsts: Vec::new(),
        })
    }

    /// Pages written so far.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// The extent the component is written into.
    pub fn extent(&self) -> Extent {
        self.extent
    }

    /// Bytes held besides the I/O buffers: the first key and page of every node of the
    /// level being written.
    pub fn memory_bytes(&self) -> u64 {
        (self.firsts.capacity() * std::mem::size_of::<(u64, PageId)>()) as u64
    }

    /// Append the next entry (keys strictly increasing).
    #[inline]
    pub fn push(&mut self, io: &mut dyn JobIo, e: Entry) -> Result<()> {
        if self.last_key.is_some_and(|k| k >= e.key) {
            return Err(corrupt(
                None,
                format!("merge output out of order at key {}", e.key),
            ));
        }
        self.last_key = Some(e.key);
        self.entries += 1;
        self.tombstones += u64::from(e.kind == TOMBSTONE);
        if self.cur == 0 {
            self.check_room()?;
            self.cur_first = e.key;
        }
        self.lay
            .set(self.out.next_page(io.page_size()), self.cur, e);
        self.cur += 1;
        if self.cur == self.lay.cap() {
            self.flush_leaf(io)?;
        }
        Ok(())
    }

    /// [`ComponentWriter::push`] of each of `es` (keys strictly increasing), a leaf's worth
    /// at a time.
    #[inline]
    pub fn push_run(&mut self, io: &mut dyn JobIo, mut es: &[Entry]) -> Result<()> {
        let (Some(first), Some(last)) = (es.first(), es.last()) else {
            return Ok(());
        };
        if let Some(i) = es.windows(2).position(|w| w[0].key >= w[1].key) {
            return Err(corrupt(
                None,
                format!("merge output out of order at key {}", es[i + 1].key),
            ));
        }
        if self.last_key.is_some_and(|k| k >= first.key) {
            return Err(corrupt(
                None,
                format!("merge output out of order at key {}", first.key),
            ));
        }
        self.last_key = Some(last.key);
        self.entries += es.len() as u64;
        self.tombstones += es.iter().filter(|e| e.kind == TOMBSTONE).count() as u64;
        while let Some(first) = es.first() {
            if self.cur == 0 {
                self.check_room()?;
                self.cur_first = first.key;
            }
            let n = es.len().min(self.lay.cap() - self.cur);
            let (leaf, rest) = es.split_at(n);
            self.lay
                .set_run(self.out.next_page(io.page_size()), self.cur, leaf);
            self.cur += n;
            if self.cur == self.lay.cap() {
                self.flush_leaf(io)?;
            }
            es = rest;
        }
        Ok(())
    }

    /// Seal the leaf being built.
    fn flush_leaf(&mut self, io: &mut dyn JobIo) -> Result<()> {
        if self.cur == 0 {
            return Ok(());
        }
        let ps = io.page_size();
        let pid = self.extent.start + self.pages;
        let b = self.out.next_page(ps);
        self.lay.finish_page(b, KIND_LSM_LEAF, 0, NONE, self.cur);
        self.cur = 0;
        self.firsts.push((self.cur_first, pid));
        self.seal_page(io, pid)
    }

    /// An error if the extent has no page left for the next node.
    fn check_room(&self) -> Result<()> {
        if self.pages >= self.extent.len {
            return Err(corrupt(
                Some(self.extent.start),
                format!("component outgrew its extent of {} pages", self.extent.len),
            ));
        }
        Ok(())
    }

    /// Seal the page just built at `pid`; write the chunk when it is full.
    fn seal_page(&mut self, io: &mut dyn JobIo, pid: PageId) -> Result<()> {
        let ps = io.page_size();
        page::seal(pid, self.out.next_page(ps));
        self.pages += 1;
        if self.out.built(ps) {
            self.write_chunk(io)?;
        }
        Ok(())
    }

    fn emit(
        &mut self,
        io: &mut dyn JobIo,
        kind: u16,
        level: u32,
        link: u64,
        es: &[Entry],
    ) -> Result<PageId> {
        self.check_room()?;
        let pid = self.extent.start + self.pages;
        self.lay
            .init(self.out.next_page(io.page_size()), kind, level, link, es);
        self.seal_page(io, pid)?;
        Ok(pid)
    }

    fn write_chunk(&mut self, io: &mut dyn JobIo) -> Result<()> {
        let n = self.out.pending();
        self.out.write(io, self.extent.start + self.chunk_start)?;
        self.chunk_start += n;
        Ok(())
    }

    /// Write the last leaf and the internal levels; `None` if no entry was pushed. The
    /// unused tail of the extent is freed.
    pub fn finish(mut self, io: &mut dyn JobIo) -> Result<Option<Component>> {
        self.flush_leaf(io)?;
        let leaves = self.pages;
        let mut height = 1;
        let mut level_nodes = std::mem::take(&mut self.firsts);
        while level_nodes.len() > 1 {
            let mut upper = Vec::with_capacity(level_nodes.len().div_ceil(self.lay.cap() + 1));
            for group in level_nodes.chunks(self.lay.cap() + 1) {
                let seps: Vec<Entry> = group[1..]
                    .iter()
                    .map(|&(k, p)| Entry::new(k, p, Kind::Internal))
                    .collect();
                let pid = self.emit(io, KIND_LSM_INTERNAL, height, group[0].1, &seps)?;
                upper.push((group[0].0, pid));
            }
            level_nodes = upper;
            height += 1;
        }
        self.write_chunk(io)?;
        self.out.wait(io)?;
        io.free_extent(Extent {
            start: self.extent.start + self.pages,
            len: self.extent.len - self.pages,
        });
        Ok(level_nodes.first().map(|&(_, root)| Component {
            start: self.extent.start,
            pages: self.pages,
            leaves,
            height,
            root,
            entries: self.entries,
            tombstones: self.tombstones,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_pages_counts_every_level() {
        assert_eq!(max_pages(0, 20), 1);
        assert_eq!(max_pages(20, 20), 1);
        assert_eq!(max_pages(21, 20), 3);
        assert_eq!(max_pages(20 * 21 + 1, 20), 22 + 2 + 1);
    }

    /// Hostile bytes (crate::hostile): a damaged component page decodes or is corruption.
    #[test]
    fn hostile_component_pages_decode_or_are_corruption() {
        use crate::kit::sorted::entry::{Entry, Kind};
        let es = [
            Entry::new(1, 2, Kind::Normal),
            Entry::new(8, 9, Kind::Normal),
        ];
        for lay in [Layout::wide(512), Layout::packed(512)] {
            let mut valid = vec![0u8; 512];
            lay.init(&mut valid, KIND_LSM_LEAF, 0, 77, &es);
            page::seal(5, &mut valid);
            crate::hostile::fuzz_page("LSM component page", 5, &valid, |b| {
                crate::error::ok_or_corruption(decode(5, b, lay))
            });
        }
    }
}
