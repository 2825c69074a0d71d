//! Flash operations of the core: reading a node's current version (base + log records,
//! ghost reconstruction), writing log sectors, node images, and rebuilding a block (IPL
//! merge, d-IPL block cleansing and block split), block allocation and release.

use super::core::{exclusive, lost, Block, Core, Member, Place};
use super::format::{self, LogSector, NodeImage, Rec, NAND_FILE, NO_SECTOR, SECTOR};
use super::policy::LogPolicy;
use crate::error::{Error, Result};
use crate::sim::PageAddr;
use std::collections::BTreeMap;

/// Why a block is rebuilt into fresh blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rebuild {
    /// d-IPL block cleansing (§4.3, Algorithm 3) or IPL merge: one new block.
    Cleanse,
    /// d-IPL block split (§4.2, Algorithm 2): two new blocks, the first `d` nodes and the rest.
    Split,
    /// Global cleansing (§5.3) or recovery: like `Cleanse`, counted apart.
    Global,
    Recovery,
}

impl<P: LogPolicy> Core<P> {
    /// Linear NAND page number, for error messages.
    pub fn linear(&self, b: u32, page: u32) -> u64 {
        b as u64 * self.geo.ppb as u64 + page as u64
    }

    /// Read sectors of block `b`, one read operation per page touched.
    pub fn read_sectors(&self, b: u32, idx: &[u16]) -> Result<BTreeMap<u16, LogSector>> {
        let spp = self.geo.spp as u16;
        let mut by_page: BTreeMap<u16, (u16, u16)> = BTreeMap::new();
        for &i in idx {
            let e = by_page.entry(i / spp).or_insert((i % spp, i % spp));
            e.0 = e.0.min(i % spp);
            e.1 = e.1.max(i % spp);
        }
        // The pages under the NAND's mutex (one read operation each), decoded after it.
        let mut pages = Vec::with_capacity(by_page.len());
        {
            let mut nand = self.nand();
            for (page, (lo, hi)) in by_page {
                let n = (hi - lo + 1) as usize;
                let mut buf = vec![0u8; n * SECTOR];
                nand.read_sectors(
                    PageAddr {
                        block: b,
                        page: page as u32,
                    },
                    lo as u32,
                    &mut buf,
                    &mut [],
                )?;
                pages.push((page, lo, buf));
            }
        }
        let mut out = BTreeMap::new();
        for (page, lo, buf) in pages {
            let lp = self.linear(b, page as u32);
            for &i in idx.iter().filter(|&&i| i / spp == page) {
                let off = (i % spp - lo) as usize * SECTOR;
                out.insert(i, format::decode_sector(&buf[off..off + SECTOR], lp, i)?);
            }
        }
        Ok(out)
    }

    /// Read and verify a node image at `first` page of block `b`.
    pub fn read_node(&self, b: u32, first: u32, id: u64) -> Result<NodeImage> {
        let mut buf = vec![0u8; self.geo.node_bytes];
        let mut nand = self.nand();
        for (i, chunk) in buf.chunks_mut(self.geo.page_bytes).enumerate() {
            nand.read(
                PageAddr {
                    block: b,
                    page: first + i as u32,
                },
                chunk,
                &mut [],
            )?;
        }
        drop(nand);
        format::decode_node(id, &buf, self.linear(b, first))
    }

    /// The log sectors of node `id` in block `b`, oldest first, up to and including
    /// sector `upto` when given: how they are found is the policy's
    /// ([`LogPolicy::node_log`]).
    fn node_log(&self, b: u32, id: u64, upto: Option<u16>) -> Result<Vec<LogSector>> {
        let blk = &self.blocks[&b];
        let pos = blk.pos(id).ok_or_else(|| lost(id, b))?;
        let known: Vec<u16> = blk.members[pos]
            .sectors
            .iter()
            .copied()
            .filter(|&s| upto.map_or(true, |u| s <= u))
            .collect();
        P::node_log(self, b, id, &known)
    }

    /// The current version of node `id` as stored on flash (base + its log records).
    /// With `upto = Some(x)`: the version just before the `SplitRemove` that ends its log
    /// sector `x` (the version a ghost node was split from, §5.2).
    pub fn materialize(&self, id: u64, upto: Option<u16>) -> Result<NodeImage> {
        let b = self.block_of(id)?;
        let blk = &self.blocks[&b];
        let pos = blk.pos(id).ok_or_else(|| lost(id, b))?;
        let place = blk.members[pos].place;
        let log = self.node_log(b, id, upto)?;
        let mut recs: Vec<Rec> = log.into_iter().flat_map(|s| s.records).collect();
        if upto.is_some() {
            if let Some(Rec::SplitRemove(_)) = recs.last() {
                recs.pop();
            }
        }
        let (mut img, skip) = match place {
            Place::Slot(first) => (self.read_node(b, first, id)?, 0),
            Place::Ghost => match recs.first() {
                Some(&Rec::GhostCreate {
                    origin,
                    key,
                    sector,
                }) => {
                    let o = self.materialize(origin, Some(sector))?;
                    let i = o.entries.partition_point(|e| e.0 < key);
                    (
                        NodeImage {
                            level: o.level,
                            entries: o.entries[i..].to_vec(),
                        },
                        1,
                    )
                }
                Some(&Rec::Init(level)) => (
                    NodeImage {
                        level,
                        entries: Vec::new(),
                    },
                    1,
                ),
                _ => {
                    return Err(Error::corruption(
                        NAND_FILE,
                        Some(self.linear(b, self.blocks[&b].log_start)),
                        format!("node {id} of block {b} has no base: neither an image nor a GhostCreate/Init record"),
                    ))
                }
            },
        };
        for r in &recs[skip..] {
            format::apply(&mut img.entries, r);
        }
        Ok(img)
    }

    /// Write log sectors to block `b`'s log area, in order (§3.3): each carries the LSLM of
    /// its owner's earlier sectors and (d-IPL) the block's LLSD. Sectors of one page go in
    /// one (partial) program. The caller made sure they fit.
    pub fn write_sectors(&mut self, b: u32, items: &[(u64, &[u8])]) -> Result<()> {
        let gen = self.log.generation();
        let dipl = P::LLSD;
        let mut encoded: Vec<(u16, [u8; SECTOR])> = Vec::with_capacity(items.len());
        for &(owner, recs) in items {
            let blk = self.block_mut(b)?;
            let idx = blk.next_sector;
            let pos = blk.pos(owner).ok_or_else(|| lost(owner, b))?;
            let earlier = blk.members[pos].sectors.clone();
            blk.members[pos].sectors.push(idx);
            blk.next_sector += 1;
            blk.last_sector = Some(idx);
            let llsd: Vec<u16> = if dipl {
                blk.members
                    .iter()
                    .map(|m| m.sectors.last().copied().unwrap_or(NO_SECTOR))
                    .collect()
            } else {
                Vec::new()
            };
            encoded.push((
                idx,
                format::encode_sector(owner, gen, &earlier, &llsd, recs),
            ));
        }
        let spp = self.geo.spp as u16;
        let mut i = 0;
        while i < encoded.len() {
            let page = encoded[i].0 / spp;
            let mut j = i;
            let mut data = Vec::new();
            while j < encoded.len() && encoded[j].0 / spp == page {
                data.extend_from_slice(&encoded[j].1);
                j += 1;
            }
            self.nand_mut().program_sectors(
                PageAddr {
                    block: b,
                    page: page as u32,
                },
                (encoded[i].0 % spp) as u32,
                &data,
                &[],
            )?;
            i = j;
        }
        if let Some(&(last, _)) = encoded.last() {
            let spp = self.geo.spp;
            let blk = self.block_mut(b)?;
            blk.write_point = blk.write_point.max(last as u32 / spp + 1);
        }
        self.counters.log_sector_writes += items.len() as u64;
        Ok(())
    }

    /// Write a node image at `first` page of block `b` (whole-page programs).
    pub fn write_node(&mut self, b: u32, first: u32, id: u64, img: &NodeImage) -> Result<()> {
        let buf = format::encode_node(id, img, self.geo.node_bytes);
        for (i, chunk) in buf.chunks(self.geo.page_bytes).enumerate() {
            self.nand_mut().program(
                PageAddr {
                    block: b,
                    page: first + i as u32,
                },
                chunk,
                &[],
            )?;
        }
        Ok(())
    }

    /// Write a resident node's in-memory log sector to its block (Rules 1 and 2). A block
    /// whose log area is full is cleansed (d-IPL, §4.3) or merged (IPL) first, and the
    /// sector goes to the new block's log area (Fig. 10).
    pub fn flush_log(&mut self, id: u64) -> Result<()> {
        if self.frame(id)?.log.is_empty() {
            return Ok(());
        }
        let mut b = self.block_of(id)?;
        if self.free_sectors(b) == 0 {
            self.rebuild(b, Rebuild::Cleanse)?;
            if !self.is_dirty(id) {
                return Ok(());
            }
            b = self.block_of(id)?;
        }
        let log = std::mem::take(&mut self.frame_mut(id)?.log);
        self.write_sectors(b, &[(id, &log)])
    }

    /// A fresh erased block with an empty log area starting at `log_start`.
    pub fn new_block(&mut self, log_start: u32) -> Result<u32> {
        let Some(b) = self.free.pop_first() else {
            return Err(Error::no_space(format!(
                "allocating an erase block on the raw NAND ({} blocks in use, {} waiting for erase at the next checkpoint)",
                self.blocks.len(),
                self.pending.len()
            )));
        };
        // A block left programmed by an interrupted run is erased before reuse.
        let nand = exclusive(&mut self.nand);
        if (0..self.geo.ppb).any(|p| !nand.is_page_erased(PageAddr { block: b, page: p })) {
            nand.erase(b)?;
        }
        self.blocks.insert(
            b,
            Block {
                members: Vec::new(),
                log_start,
                next_sector: (log_start * self.geo.spp) as u16,
                last_sector: None,
                write_point: 0,
                checkpointed: false,
            },
        );
        Ok(b)
    }

    /// Release a block: erased now, or at the next checkpoint if the last one references it.
    fn release_block(&mut self, b: u32) -> Result<()> {
        if let Some(blk) = self.blocks.remove(&b) {
            if blk.checkpointed {
                self.pending.push(b);
            } else {
                self.nand_mut().erase(b)?;
                self.free.insert(b);
            }
        }
        if self.alloc_block == Some(b) {
            self.alloc_block = None;
        }
        Ok(())
    }

    /// Rebuild block `b`: compute every node's version on flash (base plus the block's log
    /// records; ghosts are embodied), release empty nodes (§4.4), write the nodes as
    /// regular nodes into one fresh block (cleansing / merge) or two (block split: the
    /// first half of the nodes and the rest), and release the old block. In-memory log
    /// sectors stay with their frames.
    pub fn rebuild(&mut self, b: u32, why: Rebuild) -> Result<()> {
        let members: Vec<(u64, Place, bool)> = self.blocks[&b]
            .members
            .iter()
            .map(|m| (m.node, m.place, m.sectors.is_empty()))
            .collect();
        let ids: Vec<u64> = members.iter().map(|m| m.0).collect();
        // Algorithm 3 (§4.3; IPL's merge likewise): each node's version on flash, its base
        // plus the log records stored in the block. Buffered frames keep their in-memory
        // log sectors, which Rules 1 and 2 write to the new block later (Fig. 10).
        let mut imgs: Vec<NodeImage> = Vec::with_capacity(ids.len());
        for &(id, place, no_sectors) in &members {
            imgs.push(if place == Place::Ghost && no_sectors {
                // An IPL node being written as physical log records whose `Init` has not
                // reached flash: its flash version is empty, its frame holds the records.
                NodeImage {
                    level: self.frame(id)?.img.level,
                    entries: Vec::new(),
                }
            } else {
                self.materialize(id, None)?
            });
        }
        // Release empty nodes whose parent is in the buffer, keeps another child, and has
        // room in its log sector for the removal (a buffered node is judged by its current
        // version; its pending records go with it).
        let mut keep = Vec::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            let empty = match self.cache().frames.get(&id) {
                Some(f) => f.img.entries.is_empty(),
                None => imgs[i].entries.is_empty(),
            };
            if empty && id != self.root && !self.pinned.contains(&id) && self.release_node(id)? {
                continue;
            }
            keep.push(i);
        }
        let groups: Vec<Vec<usize>> = if why == Rebuild::Split && keep.len() >= 2 {
            let d = keep.len() / 2;
            vec![keep[..d].to_vec(), keep[d..].to_vec()]
        } else {
            vec![keep]
        };
        let np = self.geo.np;
        for g in groups {
            if g.is_empty() {
                continue;
            }
            let nb = self.new_block(P::log_start(&self.geo, g.len() as u32))?;
            let mut members = Vec::with_capacity(g.len());
            for (slot, &i) in g.iter().enumerate() {
                let id = ids[i];
                let img = std::mem::take(&mut imgs[i]);
                let first = slot as u32 * np;
                self.write_node(nb, first, id, &img)?;
                self.location.insert(id, nb);
                members.push(Member {
                    node: id,
                    place: Place::Slot(first),
                    sectors: Vec::new(),
                });
            }
            let blk = self.block_mut(nb)?;
            blk.write_point = members.len() as u32 * np;
            blk.members = members;
            if P::ALLOC_BLOCK && self.alloc_block == Some(b) {
                self.alloc_block = Some(nb);
            }
        }
        self.release_block(b)?;
        match why {
            Rebuild::Cleanse => self.counters.block_cleansings += 1,
            Rebuild::Split => self.counters.block_splits += 1,
            Rebuild::Global => {}
            Rebuild::Recovery => self.counters.recovery_rebuilds += 1,
        }
        Ok(())
    }

    /// Remove empty node `id` from its parent if that is possible without I/O; true if
    /// it was released.
    fn release_node(&mut self, id: u64) -> Result<bool> {
        let Some(&p) = self.parent.get(&id) else {
            return Ok(false);
        };
        let cap = self.geo.rec_cap;
        let Some(f) = self.cache().frames.get_mut(&p) else {
            return Ok(false);
        };
        let Some(i) = f.img.entries.iter().position(|e| e.1 == id) else {
            return Ok(false);
        };
        if f.img.level == 0
            || f.img.entries.len() < 2
            || f.log.len() + Rec::Put(0, 0).len() + Rec::Del(0).len() > cap
        {
            return Ok(false);
        }
        if i == 0 {
            // The first entry's key is the node's lower bound: the next child takes it
            // over, so that later separators still sort after it.
            let (k0, _) = f.img.entries[0];
            let (k1, c1) = f.img.entries[1];
            Rec::Put(k0, c1).encode(&mut f.log);
            Rec::Del(k1).encode(&mut f.log);
            f.img.entries[0].1 = c1;
            f.img.entries.remove(1);
        } else {
            let key = f.img.entries[i].0;
            Rec::Del(key).encode(&mut f.log);
            f.img.entries.remove(i);
        }
        self.parent.remove(&id);
        self.location.remove(&id);
        self.drop_frame(id);
        self.counters.released_nodes += 1;
        Ok(true)
    }

    /// Global cleansing (§5.3): rebuild every block that has log sectors, so that no node
    /// read needs its log. Dirty frames are written first.
    pub fn global_cleansing(&mut self) -> Result<()> {
        self.write_dirty_frames()?;
        let ids: Vec<u32> = self
            .blocks
            .iter()
            .filter(|(_, x)| {
                x.last_sector.is_some() || x.members.iter().any(|m| m.place == Place::Ghost)
            })
            .map(|(&b, _)| b)
            .collect();
        for b in ids {
            if self.blocks.contains_key(&b) {
                self.rebuild(b, Rebuild::Global)?;
            }
        }
        Ok(())
    }

    /// Write the log sector of every dirty frame (checkpoints, global cleansing).
    pub fn write_dirty_frames(&mut self) -> Result<()> {
        loop {
            let mut dirty: Vec<u64> = self
                .cache()
                .frames
                .iter()
                .filter(|(_, f)| !f.log.is_empty())
                .map(|(&id, _)| id)
                .collect();
            if dirty.is_empty() {
                return Ok(());
            }
            dirty.sort_unstable();
            for id in dirty {
                if self.is_dirty(id) {
                    self.counters.node_writes += 1;
                    self.flush_log(id)?;
                }
            }
        }
    }
}
