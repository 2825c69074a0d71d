//! Sorted runs L1..L(l-1) (§3.2): each level is one contiguous extent of run pages, written
//! once, sequentially, in multi-page requests of `io_unit` pages (§3.3 Merge, P3). Merges
//! and range scans read them past the buffer pool in multi-page requests (App. D); point
//! searches read one page per level through the pool, so the upper levels stay cached.

use crate::durable::background::JobIo;
use crate::durable::PageRead;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, Extent, PageId};
use crate::kit::sorted::entry::{self, Entry, Layout, Probe, KIND_RUN, NONE};
use crate::kit::sorted::head::Packer;
use crate::kit::sorted::seq::{ChunkWriter, SeqReader};
use crate::page::{self, DATA_FILE};
use serde::{Deserialize, Serialize};

/// One level's run: `pages` pages from `start`, holding `entries` entries (fences
/// included), of which `index_entries` are index entries and `filters` filter entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub start: PageId,
    pub pages: u64,
    pub entries: u64,
    pub index_entries: u64,
    pub filters: u64,
}

impl Run {
    pub fn extent(&self) -> Extent {
        Extent {
            start: self.start,
            len: self.pages,
        }
    }

    pub fn contains(&self, pid: PageId) -> bool {
        self.start <= pid && pid < self.start + self.pages
    }
}

/// The external fences of a run's pages: (first key, page), in order.
pub type Fences = Vec<(u64, PageId)>;

/// A finished run (`None` if empty) and its fences.
pub type Written = (Option<Run>, Fences);

/// Read `n` pages of a run from `first` in ONE request, past the buffer pool (merges and
/// range scans, App. D: "the merge operation ... can skip the buffer layer"), and decode them.
/// From any of many reading threads at once on `&Pager`, or by the Pager's exclusive path
/// on `&mut Pager` ([`PageRead`]).
pub fn read_pages(
    mut pager: impl PageRead,
    lay: Layout,
    first: PageId,
    n: u64,
) -> Result<Vec<Vec<Entry>>> {
    let ps = pager.pager().page_size();
    let mut buf = AlignedBuf::zeroed(ps * n as usize);
    pager.run_past(first, &mut buf)?;
    buf.chunks(ps)
        .enumerate()
        .map(|(i, b)| decode_page(first + i as u64, b, lay))
        .collect()
}

/// Check run page `pid` (`b`) and append its entries, in order, to `out` (a merge's
/// reader decodes straight into its buffer).
pub fn decode_page_into(lay: Layout, pid: PageId, b: &[u8], out: &mut Vec<Entry>) -> Result<()> {
    check_run_page(lay, pid, b)?;
    let bad = |e: String| Error::corruption(DATA_FILE, Some(pid), format!("FD-tree run: {e}"));
    let count = lay.checked_count(b).map_err(bad)?;
    if count == 0 {
        return Err(bad("empty FD-tree run page".into()));
    }
    lay.decode_into(b, count, out).map_err(bad)
}

/// Read one run page through the buffer pool (point searches: the pages of the upper
/// levels stay cached, as the paper's cost model assumes, §4 Eq. 10). Run pages are never
/// dirty in the pool and a freed run's pages are discarded from it
/// ([`Pager::free_extent`](crate::durable::Pager::free_extent)), so the pool and the
/// past-the-pool reads agree.
pub fn read_page_cached(mut pager: impl PageRead, lay: Layout, pid: PageId) -> Result<Vec<Entry>> {
    pager.page(pid, |b| decode_page(pid, b, lay))?
}

/// A point search's step in run page `pid` (see [`Layout::probe`]): through the buffer pool
/// when `cached`, else one read past it. Checks the envelope and the kind as a decode does,
/// but decodes only the few entries the step reads.
pub fn probe_page(
    mut pager: impl PageRead,
    lay: Layout,
    pid: PageId,
    key: u64,
    cached: bool,
) -> Result<Probe> {
    let step = |b: &[u8]| -> Result<Probe> {
        check_run_page(lay, pid, b)?;
        if entry::count(b) == 0 {
            return Err(Error::corruption(
                DATA_FILE,
                Some(pid),
                "empty FD-tree run page",
            ));
        }
        lay.probe(b, key)
            .map_err(|e| Error::corruption(DATA_FILE, Some(pid), format!("FD-tree run: {e}")))
    };
    if cached {
        pager.page(pid, step)?
    } else {
        pager.page_past(pid, step)?
    }
}

/// The envelope (checksum, page id) and the kind of a run page.
fn check_run_page(lay: Layout, pid: PageId, b: &[u8]) -> Result<()> {
    page::verify(pid, b)?;
    if page::kind(b) != lay.kind(KIND_RUN) {
        return Err(Error::corruption(
            DATA_FILE,
            Some(pid),
            format!("FD-tree run page has kind {}", page::kind(b)),
        ));
    }
    Ok(())
}

fn decode_page(pid: PageId, b: &[u8], lay: Layout) -> Result<Vec<Entry>> {
    let mut es = Vec::new();
    decode_page_into(lay, pid, b, &mut es)?;
    Ok(es)
}

/// A sequential reader of a run.
pub struct RunReader(SeqReader);

impl RunReader {
    pub fn new(run: Run) -> Self {
        RunReader(SeqReader::new(run.start, run.pages))
    }

    /// The next entry, or `None` at the end of the run.
    pub fn peek(&mut self, io: &mut dyn JobIo, lay: Layout, io_unit: u64) -> Result<Option<Entry>> {
        self.0.peek(io, io_unit, |pid, b, out| {
            decode_page_into(lay, pid, b, out)
        })
    }

    pub fn advance(&mut self) {
        self.0.advance();
    }

    /// The decoded entries not yet taken, from the one `peek` returned.
    pub fn buffered(&self) -> &[Entry] {
        self.0.buffered()
    }

    /// Take `n` entries of [`RunReader::buffered`].
    pub fn consume(&mut self, n: usize) {
        self.0.consume(n);
    }

    /// Pages read so far.
    pub fn pages_read(&self) -> u64 {
        self.0.pages_read()
    }
}

/// Writes a new run into a fresh extent: packs entries into pages (Invariant 1 via
/// [`Packer`]), writes `io_unit` pages per request, and records the external fence of every
/// page for the level above (§3.2, "We create a fence for each page of L(i+1)"). Entries go
/// straight into the page bytes of the chunk being built.
pub struct RunWriter {
    lay: Layout,
    extent: Extent,
    packer: Packer,
    /// Entries in the page being built (0: none started).
    cur: usize,
    /// Pages are built here and written `io_unit` at a time (one request in flight).
    out: ChunkWriter,
    /// Pages of the run written (or in flight) so far.
    chunk_start: u64,
    /// Pages completed (the one being built not included).
    pages: u64,
    pub entries: u64,
    index_entries: u64,
    filters: u64,
    /// (first key, page) of every page written, in order.
    pub fences: Fences,
}

impl RunWriter {
    /// A writer for at most `max_entries` entries (one internal fence per page extra).
    pub fn new(io: &mut dyn JobIo, lay: Layout, io_unit: u64, max_entries: u64) -> Result<Self> {
        let max_pages = max_entries.div_ceil(lay.cap() as u64 - 1).max(1) + 1;
        let extent = io.alloc_extent(max_pages)?;
        let ps = io.page_size();
        Ok(RunWriter {
            lay,
            extent,
            packer: Packer::new(lay.cap(), true),
            cur: 0,
            out: ChunkWriter::new(ps, io_unit.min(max_pages)),
            chunk_start: 0,
            pages: 0,
            entries: 0,
            index_entries: 0,
            filters: 0,
            fences: Vec::new(),
        })
    }

    /// The extent reserved so far (to free it if the writer is abandoned).
    pub fn extent(&self) -> Extent {
        self.extent
    }

    #[inline]
    pub fn push(&mut self, io: &mut dyn JobIo, e: Entry) -> Result<()> {
        self.push_run(io, std::slice::from_ref(&e))
    }

    /// [`RunWriter::push`] of each of `es` (index entries and external fences, in order),
    /// a page's worth at a time: at the full bench scale one entry in six of L1 is a fence
    /// into L2, and a merge that wrote each fence on its own spent markedly more CPU an
    /// entry.
    #[inline]
    pub fn push_run(&mut self, io: &mut dyn JobIo, mut es: &[Entry]) -> Result<()> {
        let ps = io.page_size();
        while let Some(first) = es.first() {
            let (place, n) = self.packer.place_run(es);
            if place.close {
                self.close_page(io)?;
            }
            if self.cur == 0 {
                self.start_page(first.key)?;
            }
            if let Some(fence) = place.fence {
                self.lay.set(self.out.next_page(ps), self.cur, fence);
                self.cur += 1;
            }
            let (page, rest) = es.split_at(n);
            self.lay.set_run(self.out.next_page(ps), self.cur, page);
            self.cur += n;
            let (mut fences, mut filters) = (0u64, 0u64);
            for e in page {
                fences += u64::from(e.is_fence());
                filters += u64::from(e.kind == entry::Kind::Filter);
            }
            self.index_entries += n as u64 - fences;
            self.filters += filters;
            es = rest;
        }
        Ok(())
    }

    /// Record the fence of the page that `key` begins (the extent has room for it).
    fn start_page(&mut self, key: u64) -> Result<()> {
        if self.pages >= self.extent.len {
            // The inputs held more entries than their counts said.
            return Err(Error::corruption(
                DATA_FILE,
                Some(self.extent.start),
                format!(
                    "FD-tree run outgrew its extent of {} pages",
                    self.extent.len
                ),
            ));
        }
        self.fences.push((key, self.extent.start + self.pages));
        Ok(())
    }

    /// Seal the page being built; write the chunk when it is full.
    fn close_page(&mut self, io: &mut dyn JobIo) -> Result<()> {
        let ps = io.page_size();
        let pid = self.extent.start + self.pages;
        let b = self.out.next_page(ps);
        self.lay.finish_page(b, KIND_RUN, 0, NONE, self.cur);
        page::seal(pid, b);
        self.entries += self.cur as u64;
        self.cur = 0;
        self.pages += 1;
        if self.out.built(ps) {
            self.write_chunk(io)?;
        }
        Ok(())
    }

    fn write_chunk(&mut self, io: &mut dyn JobIo) -> Result<()> {
        let n = self.out.pending();
        self.out.write(io, self.extent.start + self.chunk_start)?;
        self.chunk_start += n;
        Ok(())
    }

    /// Write the last pages and return the run (`None` if it is empty); the unused tail of
    /// the extent is freed.
    pub fn finish(mut self, io: &mut dyn JobIo) -> Result<Written> {
        if self.cur > 0 {
            self.close_page(io)?;
        }
        self.write_chunk(io)?;
        self.out.wait(io)?;
        let tail = Extent {
            start: self.extent.start + self.pages,
            len: self.extent.len - self.pages,
        };
        io.free_extent(tail);
        let run = (self.pages > 0).then_some(Run {
            start: self.extent.start,
            pages: self.pages,
            entries: self.entries,
            index_entries: self.index_entries,
            filters: self.filters,
        });
        Ok((run, self.fences))
    }

    /// Pages written so far (the one being built included).
    pub fn pages(&self) -> u64 {
        self.pages + u64::from(self.cur > 0)
    }
}

/// Write a run made only of the external fences `fences` (the upper levels rebuilt after a
/// merge, §3.3 Merge; Property 1 of App. C.2).
pub fn write_fence_run(
    io: &mut dyn JobIo,
    lay: Layout,
    io_unit: u64,
    fences: &[(u64, PageId)],
) -> Result<Written> {
    let mut w = RunWriter::new(io, lay, io_unit, fences.len() as u64)?;
    for &(k, p) in fences {
        w.push(io, Entry::new(k, p, entry::Kind::External))?;
    }
    w.finish(io)
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    use crate::kit::sorted::entry::{self, Entry, Kind};

    /// Hostile bytes (crate::hostile): a damaged run page decodes or is corruption.
    #[test]
    fn hostile_run_pages_decode_or_are_corruption() {
        let es = [
            Entry::new(1, 2, Kind::Normal),
            Entry::new(8, 3, Kind::External),
        ];
        for lay in [Layout::wide(512), Layout::packed(512)] {
            let mut valid = vec![0u8; 512];
            lay.init(&mut valid, KIND_RUN, 0, entry::NONE, &es);
            page::seal(21, &mut valid);
            crate::hostile::fuzz_page("FD-tree run page", 21, &valid, |b| {
                crate::error::ok_or_corruption(decode_page(21, b, lay))
            });
        }
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use crate::durable::Pager;
    use crate::kit::sorted::entry::Kind;
    use proptest::prelude::*;

    proptest! {
        /// `push_run` over slices of any length, external fences among the index entries,
        /// writes the pages [`Packer::pack`] makes of the entries one at a time, with their
        /// counters and fences (so a merge may hand the writer L(i)'s external fences with
        /// the index entries between them).
        #[test]
        fn pushing_runs_writes_the_pages_of_placing_each_entry(
            items in proptest::collection::btree_map(any::<u64>(), 0u8..4, 1..300),
            cuts in proptest::collection::vec(0usize..40, 1..40),
            packed in any::<bool>(),
        ) {
            let lay = if packed { Layout::packed(512) } else { Layout::wide(512) };
            let es: Vec<Entry> = items
                .iter()
                .enumerate()
                .map(|(i, (&k, &t))| match t {
                    0 => Entry::new(k, i as u64, Kind::External),
                    1 => Entry::new(k, 0, Kind::Filter),
                    _ => Entry::new(k, k ^ 1, Kind::Normal),
                })
                .collect();
            let mut pager = Pager::in_memory(512, 8);
            let mut w = RunWriter::new(&mut pager, lay, 3, es.len() as u64).unwrap();
            let mut rest = &es[..];
            // Empty pushes included; the 1 after the cuts makes every pass over them take
            // an entry (cuts of zeros alone looped for ever).
            for &c in cuts.iter().chain(std::iter::once(&1)).cycle() {
                if rest.is_empty() {
                    break;
                }
                let (a, b) = rest.split_at(c.min(rest.len()));
                w.push_run(&mut pager, a).unwrap();
                rest = b;
            }
            let (run, fences) = w.finish(&mut pager).unwrap();
            let run = run.unwrap();

            let want = Packer::pack(lay.cap(), true, &es);
            prop_assert_eq!(run.pages, want.len() as u64);
            let got = read_pages(&pager, lay, run.start, run.pages).unwrap();
            prop_assert_eq!(&got, &want);
            let firsts: Vec<(u64, PageId)> = want
                .iter()
                .enumerate()
                .map(|(i, p)| (p[0].key, run.start + i as u64))
                .collect();
            prop_assert_eq!(fences, firsts);
            let stored = want.iter().map(Vec::len).sum::<usize>() as u64;
            let external = es.iter().filter(|e| e.is_fence()).count() as u64;
            let filters = es.iter().filter(|e| e.kind == Kind::Filter).count() as u64;
            prop_assert_eq!(
                (run.entries, run.index_entries, run.filters),
                (stored, es.len() as u64 - external, filters)
            );
        }
    }
}
