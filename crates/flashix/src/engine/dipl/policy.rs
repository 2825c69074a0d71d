//! [`Dipl`]: the d-IPL B+-tree's [`LogPolicy`] for the in-page logging kit.

use super::DiplOptions;
use crate::error::{Error, Result};
use crate::kit::inpage::core::{lost, Block, Geometry, Layout, Member, Place, Sizes};
use crate::kit::inpage::flash::Rebuild;
use crate::kit::inpage::format::{self, LogSector, NodeImage, Rec, NAND_FILE};
use crate::kit::inpage::{Config, Core, LogPolicy};
use std::collections::HashMap;

/// d-IPL (§3-§5): dynamic log area, ghost nodes, block split, cleansing, LLSD and LSLM.
pub struct Dipl;

impl LogPolicy for Dipl {
    type Options = DiplOptions;

    /// The d-IPL options' numbers (no fixed log area).
    fn config(o: &DiplOptions) -> Config {
        Config::new(o.node_bytes, o.buffer_frames).blocks(o.nand_blocks, o.pages_per_block)
    }

    const TAG: &'static str = "Dipl";
    const LLSD: bool = true;
    const ALLOC_BLOCK: bool = false;
    const CLEANSE_COUNTER: &'static str = "block_cleansings";

    /// At most `ppb/np - 1` nodes: the log area never shrinks below one node (§3.2).
    fn layout(s: &Sizes) -> std::result::Result<Layout, String> {
        if s.np.saturating_mul(3) > s.ppb {
            return Err(format!(
                "a block of {} pages holds fewer than three {}-byte nodes",
                s.ppb, s.node_bytes
            ));
        }
        Ok(Layout {
            max_members: (s.ppb / s.np - 1) as usize,
            fixed_log_start: 0,
        })
    }

    /// Right after the block's regular nodes (§3.2).
    fn log_start(geo: &Geometry, nodes: u32) -> u32 {
        nodes * geo.np
    }

    /// d-IPL node split (§4.1, §4.2): block split first when the block is full, then the
    /// new node is born a ghost in the same block; the two log sectors describing the split
    /// (`SplitRemove` in the old node's, `GhostCreate` in the ghost's) go to the same log
    /// area together (Rule 3).
    fn split(core: &mut Core<Dipl>, id: u64, new: u64) -> Result<u64> {
        let mut b = core.block_of(id)?;
        if core.blocks[&b].members.len() >= core.geo.max_members {
            core.rebuild(b, Rebuild::Split)?;
            b = core.block_of(id)?;
        }
        // Room for the two sectors of the split; the old node's pending records go first,
        // in the sector that ends with its SplitRemove.
        let pending = core.frame(id)?.log.len();
        if pending + Rec::SplitRemove(0).len() > core.geo.rec_cap {
            core.flush_log(id)?;
            b = core.block_of(id)?;
        }
        if core.free_sectors(b) < 2 {
            core.rebuild(b, Rebuild::Cleanse)?;
            b = core.block_of(id)?;
        }
        let (s, upper) = core.take_upper_half(id)?;
        let level = core.frame(id)?.img.level;
        Rec::SplitRemove(s).encode(&mut core.frame_mut(id)?.log);
        let blk = core.block_mut(b)?;
        let pos = blk.pos(id).ok_or_else(|| lost(id, b))?;
        if blk.members[pos].place == Place::Ghost {
            core.counters.ghosts_split_again += 1;
        }
        let blk = core.block_mut(b)?;
        blk.members.insert(
            pos + 1,
            Member {
                node: new,
                place: Place::Ghost,
                sectors: Vec::new(),
            },
        );
        core.location.insert(new, b);
        core.counters.ghost_nodes_created += 1;
        let old_log = std::mem::take(&mut core.frame_mut(id)?.log);
        let x = core.blocks[&b].next_sector;
        let mut ghost_log = Vec::new();
        Rec::GhostCreate {
            origin: id,
            key: s,
            sector: x,
        }
        .encode(&mut ghost_log);
        core.write_sectors(b, &[(id, &old_log), (new, &ghost_log)])?;
        core.install(
            new,
            NodeImage {
                level,
                entries: upper,
            },
            Vec::new(),
        )?;
        Ok(s)
    }

    /// §5.1: the node's last sector (its LLSD entry) is read with the rest of its page, and
    /// its LSLM names the earlier ones, so only the node's own sectors are fetched.
    fn node_log(core: &Core<Dipl>, b: u32, id: u64, known: &[u16]) -> Result<Vec<LogSector>> {
        let Some(&last) = known.last() else {
            return Ok(Vec::new());
        };
        let spp = core.geo.spp as u16;
        let page_first = last - last % spp;
        let lead: Vec<u16> =
            (page_first.max(core.blocks[&b].log_start as u16 * spp)..=last).collect();
        let mut got = core.read_sectors(b, &lead)?;
        let lp = core.linear(b, (last / spp) as u32);
        let tail = got
            .remove(&last)
            .ok_or_else(|| Error::corruption(NAND_FILE, Some(lp), "log sector missing"))?;
        let earlier = tail.earlier();
        let mut want: Vec<u16> = earlier.clone();
        want.push(last);
        if want != known || tail.owner != id {
            return Err(Error::corruption(
                NAND_FILE,
                Some(lp),
                format!(
                    "log sector {last} of block {b}: owner {} and LSLM {earlier:?} disagree with node {id}'s sectors {known:?}",
                    tail.owner
                ),
            ));
        }
        let rest: Vec<u16> = earlier
            .iter()
            .copied()
            .filter(|&s| !got.contains_key(&s))
            .collect();
        let mut more = core.read_sectors(b, &rest)?;
        let mut out = Vec::with_capacity(want.len());
        for s in earlier {
            let sec = got
                .remove(&s)
                .or_else(|| more.remove(&s))
                .ok_or_else(|| Error::corruption(NAND_FILE, None, "log sector missing"))?;
            if sec.owner != id {
                return Err(Error::corruption(
                    NAND_FILE,
                    Some(core.linear(b, (s / spp) as u32)),
                    format!(
                        "log sector {s} of block {b} belongs to node {}, not {id}",
                        sec.owner
                    ),
                ));
            }
            out.push(sec);
        }
        out.push(tail);
        Ok(out)
    }

    fn recover_sectors(core: &mut Core<Dipl>, b: u32, last: u16) -> Result<()> {
        let lp = core.linear(b, core.blocks[&b].log_start);
        // §5.1: the LLSD of the last sector names each member's last sector, whose
        // LSLM names its earlier ones.
        let llsd = core.read_sector(b, last)?.llsd;
        let n = core.blocks[&b].members.len();
        if llsd.len() != n {
            return Err(Error::corruption(
                NAND_FILE,
                Some(lp),
                format!(
                    "LLSD of block {b} has {} entries for {n} members",
                    llsd.len()
                ),
            ));
        }
        for (j, &s) in llsd.iter().enumerate() {
            if s == format::NO_SECTOR {
                continue;
            }
            let sec = core.read_sector(b, s)?;
            let node = core.blocks[&b].members[j].node;
            if sec.owner != node {
                return Err(Error::corruption(
                    NAND_FILE,
                    Some(lp),
                    format!(
                        "LLSD of block {b} names sector {s} of node {} for node {node}",
                        sec.owner
                    ),
                ));
            }
            let mut list = sec.earlier();
            list.push(s);
            core.block_mut(b)?.members[j].sectors = list;
        }
        Ok(())
    }

    fn check_block(_geo: &Geometry, _b: u32, _blk: &Block) -> std::result::Result<(), String> {
        Ok(())
    }

    /// B.b: the root's block holds only the root; the nodes of every other block are
    /// consecutive nodes of one level, in the block's member order.
    fn check_tree(core: &Core<Dipl>, levels: &[Vec<u64>]) -> std::result::Result<(), String> {
        let rb = core.block_of(core.root).map_err(|e| e.to_string())?;
        if core.blocks[&rb].members.len() != 1 {
            return Err(format!("the root's block {rb} holds other nodes (B.b)"));
        }
        let mut rank: HashMap<u64, (usize, usize)> = HashMap::new();
        for (l, ids) in levels.iter().enumerate() {
            for (i, &id) in ids.iter().enumerate() {
                rank.insert(id, (l, i));
            }
        }
        for (&b, blk) in &core.blocks {
            let r: Vec<(usize, usize)> = blk
                .members
                .iter()
                .filter_map(|m| rank.get(&m.node).copied())
                .collect();
            for w in r.windows(2) {
                if w[1].0 != w[0].0 || w[1].1 != w[0].1 + 1 {
                    return Err(format!(
                        "block {b}'s nodes are not consecutive siblings (B.b)"
                    ));
                }
            }
        }
        Ok(())
    }
}
