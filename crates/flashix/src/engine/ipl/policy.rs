//! [`Ipl`]: the IPL B+-tree's [`LogPolicy`] for the in-page logging kit.

use super::IplOptions;
use crate::error::{Error, Result};
use crate::kit::inpage::core::{Block, Geometry, Layout, Member, Place, Sizes};
use crate::kit::inpage::format::{LogSector, NodeImage, Rec, NAND_FILE};
use crate::kit::inpage::{Config, Core, LogPolicy};

/// IPL (§2.2): a fixed log area at the end of every block, whole-log-area reads, merges,
/// new nodes in free slots (or as physical log records once the slot has evaporated).
pub struct Ipl;

impl LogPolicy for Ipl {
    type Options = IplOptions;

    /// The IPL options' numbers, the fixed log area among them.
    fn config(o: &IplOptions) -> Config {
        Config::new(o.node_bytes, o.buffer_frames)
            .blocks(o.nand_blocks, o.pages_per_block)
            .with_log_area(o.log_area_bytes)
    }

    const TAG: &'static str = "Ipl";
    const LLSD: bool = false;
    const ALLOC_BLOCK: bool = true;
    const CLEANSE_COUNTER: &'static str = "block_merges";

    /// The slots before the fixed log area of `log_pages` pages.
    fn layout(s: &Sizes) -> std::result::Result<Layout, String> {
        let Sizes {
            np,
            ppb,
            log_pages,
            node_bytes,
            log_bytes,
        } = *s;
        if log_pages == 0 || log_pages.saturating_add(np) > ppb {
            return Err(format!(
                "a {log_bytes}-byte log area and one {node_bytes}-byte node do not fit a block of {ppb} pages"
            ));
        }
        Ok(Layout {
            max_members: ((ppb - log_pages) / np) as usize,
            fixed_log_start: ppb - log_pages,
        })
    }

    fn log_start(geo: &Geometry, _nodes: u32) -> u32 {
        geo.fixed_log_start
    }

    /// IPL node split (§2.3): the old node logs a `SplitRemove`; the new node goes to a free
    /// slot of the old node's block, else of the current allocation block, else of a new
    /// block. If that slot can still be programmed it is written as a node image; otherwise
    /// (the block's log area has been written: page evaporation, §2.3.2) the new node is
    /// written as physical log records, one per entry (frequent log overflow, §2.3.1).
    fn split(core: &mut Core<Ipl>, id: u64, new: u64) -> Result<u64> {
        // Room for the new node's frame now: an eviction later could merge the block
        // chosen for it.
        core.make_room()?;
        let median = median_key(core, id)?;
        core.log_record(id, Rec::SplitRemove(median))?;
        let (s, upper) = core.take_upper_half(id)?;
        let level = core.frame(id)?.img.level;
        let home = core.block_of(id)?;
        let has_slot = |c: &Core<Ipl>, b: u32| {
            c.blocks
                .get(&b)
                .is_some_and(|x| x.members.len() < c.geo.max_members)
        };
        let b = if has_slot(core, home) {
            home
        } else if let Some(a) = core.alloc_block.filter(|&a| has_slot(core, a)) {
            a
        } else {
            let a = core.new_block(core.geo.fixed_log_start)?;
            core.alloc_block = Some(a);
            a
        };
        let slot = core.blocks[&b].members.len() as u32;
        let first = slot * core.geo.np;
        let img = NodeImage {
            level,
            entries: upper,
        };
        let blk = &core.blocks[&b];
        if blk.last_sector.is_none() && first >= blk.write_point {
            core.write_node(b, first, new, &img)?;
            let np = core.geo.np;
            let blk = core.block_mut(b)?;
            blk.members.push(Member {
                node: new,
                place: Place::Slot(first),
                sectors: Vec::new(),
            });
            blk.write_point = first + np;
            core.location.insert(new, b);
            core.install(new, img, Vec::new())?;
        } else {
            let entries = img.entries.clone();
            let mut log = Vec::new();
            Rec::Init(level).encode(&mut log);
            // Installed before it becomes a member: an eviction here may merge block `b`.
            core.install(new, img, log)?;
            core.pinned.push(new);
            core.block_mut(b)?.members.push(Member {
                node: new,
                place: Place::Ghost,
                sectors: Vec::new(),
            });
            core.location.insert(new, b);
            core.counters.physical_nodes += 1;
            // A merge of the block on the way writes the node as flash has it (the records
            // written so far, Algorithm 3); the rest go on as records of the regular node.
            for (k, v) in entries {
                core.counters.physical_records += 1;
                core.log_record(new, Rec::Put(k, v))?;
            }
        }
        Ok(s)
    }

    /// The whole written log area is read and the node's sectors picked out (§6.2.3:
    /// "reading log data as much as 4 KB on average").
    fn node_log(core: &Core<Ipl>, b: u32, id: u64, known: &[u16]) -> Result<Vec<LogSector>> {
        let (log_start, next) = (core.blocks[&b].log_start, core.blocks[&b].next_sector);
        let start = log_start as u16 * core.geo.spp as u16;
        let all: Vec<u16> = (start..next).collect();
        let got = core.read_sectors(b, &all)?;
        let mut out = Vec::new();
        for (s, sec) in got {
            if sec.owner == id {
                out.push(sec);
            } else if known.contains(&s) {
                return Err(Error::corruption(
                    NAND_FILE,
                    Some(core.linear(b, s as u32 / core.geo.spp)),
                    format!("log sector {s} of block {b} should belong to node {id}"),
                ));
            }
        }
        if out.len() != known.len() {
            return Err(Error::corruption(
                NAND_FILE,
                Some(core.linear(b, log_start)),
                format!(
                    "block {b} holds {} log sectors of node {id}, expected {}",
                    out.len(),
                    known.len()
                ),
            ));
        }
        Ok(out)
    }

    /// Every written sector of the log area is read and given to its owner.
    fn recover_sectors(core: &mut Core<Ipl>, b: u32, last: u16) -> Result<()> {
        let spp = core.geo.spp as u16;
        let blk = &core.blocks[&b];
        let lp = core.linear(b, blk.log_start);
        let start = blk.log_start as u16 * spp;
        for s in start..=last {
            let sec = core.read_sector(b, s)?;
            let blk = core.block_mut(b)?;
            let pos = blk.pos(sec.owner).ok_or_else(|| {
                Error::corruption(
                    NAND_FILE,
                    Some(lp),
                    format!(
                        "log sector {s} of block {b} belongs to node {}, not a member",
                        sec.owner
                    ),
                )
            })?;
            blk.members[pos].sectors.push(s);
        }
        Ok(())
    }

    /// The log area starts at the fixed page.
    fn check_block(geo: &Geometry, b: u32, blk: &Block) -> std::result::Result<(), String> {
        if blk.log_start != geo.fixed_log_start {
            return Err(format!(
                "IPL block {b}'s log area starts at page {}",
                blk.log_start
            ));
        }
        Ok(())
    }

    fn check_tree(_core: &Core<Ipl>, _levels: &[Vec<u64>]) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// The key at the middle of node `id`'s entries.
fn median_key(core: &mut Core<Ipl>, id: u64) -> Result<u64> {
    let e = &core.frame(id)?.img.entries;
    Ok(e[e.len() / 2].0)
}
