//! Creation, checkpoints and recovery of the in-page logging core (docs/design.md, contract point 3).
//!
//! The durable state is *checkpoint + logical redo WAL*:
//! - A checkpoint writes the log sector of every dirty frame, so that flash holds the
//!   current version of every node, then switches the manifest to a new WAL generation.
//!   The manifest's engine state lists the blocks in use with, per block, its members
//!   (node id and base page, or ghost), its log area start, the number of log sectors the
//!   checkpoint covers and the last of them, plus the root, height and id counter.
//! - Between checkpoints, nothing the checkpoint references is destroyed: a block it lists
//!   that is cleansed, merged or split is erased only after the next manifest is durable
//!   (blocks born and released in between are erased at once). Log sectors appended to a
//!   listed block after the checkpoint lie beyond the sectors it covers.
//! - Every `Db` operation is logged in the WAL before it is applied; `flush` syncs the WAL.
//! - Recovery opens the NAND (every completed program survives a power cut, one may be
//!   torn), takes the blocks of the manifest, rebuilds each node's log sector list from
//!   flash ([`LogPolicy::recover_sectors`]: d-IPL from the LLSD and LSLM, IPL by reading
//!   the log area), and rebuilds every
//!   listed block that holds any programmed sector the checkpoint does not cover (appends
//!   after the checkpoint, a torn program) into fresh blocks — which yields exactly the
//!   checkpoint's contents. Blocks not listed are free; one left programmed is erased when
//!   it is allocated. The WAL is then replayed and a checkpoint taken.

use super::core::{Block, Cache, Config, Core, Counters, Geometry, Member, Place};
use super::flash::Rebuild;
use super::format::{self, NodeImage, NAND_FILE};
use super::policy::LogPolicy;
use crate::durable::wal::{LogicalOp, Record};
use crate::durable::{Log, Manifest};
use crate::error::{Error, Result};
use crate::io::alloc::AllocState;
use crate::io::Storage;
use crate::settings::{DeviceSpec, Settings};
use crate::sim::{Nand, NandConfig, PageAddr};
use crate::util::sync::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A block as saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BlockState {
    block: u32,
    log_start: u32,
    next_sector: u16,
    last_sector: Option<u16>,
    write_point: u32,
    /// (node, base page) — `None` for a ghost.
    members: Vec<(u64, Option<u32>)>,
}

/// The engine state saved in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    /// [`LogPolicy::TAG`] (serialized as the former `Flavor` enum was: `"Ipl"`, `"Dipl"`).
    flavor: String,
    root: u64,
    height: u32,
    next_id: u64,
    entries: u64,
    alloc_block: Option<u32>,
    blocks: Vec<BlockState>,
}

/// The NAND geometry for an index: the `RawNand` device's config, else (an index built on a
/// plain device, e.g. `Db::create_on` with `DeviceSpec::Memory`) the default NAND with the
/// sub-options' blocks and pages per block and the index's page size, whose pages take one
/// partial program per sector (the default's 4 for 2 KiB pages; 8 for 4 KiB pages, so that
/// IPL can write its log a sector at a time as on the paper's NAND).
fn nand_config(cfg: &Config, opts: &Settings) -> NandConfig {
    if let DeviceSpec::RawNand(cfg) = &opts.device {
        return cfg.clone();
    }
    let (blocks, ppb) = (cfg.nand_blocks, cfg.pages_per_block);
    let defaults = NandConfig::default();
    NandConfig {
        page_bytes: opts.page_size,
        pages_per_block: ppb,
        blocks,
        max_partial_programs: defaults
            .max_partial_programs
            .max((opts.page_size / crate::sim::nand::NAND_SECTOR) as u32),
        ..defaults
    }
}

/// Check the options of an index of policy `P`, whose own options give `config`.
pub fn validate<P: LogPolicy>(opts: &Settings, config: &Config) -> Result<()> {
    let cfg = nand_config(config, opts);
    if cfg.page_bytes != opts.page_size {
        return Err(Error::InvalidOptions(format!(
            "{}: the RawNand device's NAND page of {} bytes differs from the page size {}; \
             the index's page is the NAND page (set page_size({}) or the config's page_bytes)",
            opts.engine.name(),
            cfg.page_bytes,
            opts.page_size,
            cfg.page_bytes
        )));
    }
    cfg.validate()?;
    Geometry::new::<P>(config, opts, &cfg).map(|_| ())
}

impl<P: LogPolicy> Core<P> {
    fn empty(config: &Config, opts: Settings, nand: Nand, log: Log) -> Result<Core<P>> {
        let geo = Geometry::new::<P>(config, &opts, nand.config())?;
        let free = (0..nand.config().blocks).collect();
        Ok(Core {
            policy: std::marker::PhantomData,
            geo,
            nand: Mutex::new(nand),
            log,
            options: opts,
            blocks: BTreeMap::new(),
            free,
            pending: Vec::new(),
            location: HashMap::new(),
            parent: HashMap::new(),
            root: 0,
            height: 1,
            next_id: 1,
            entries: 0,
            cache: Mutex::new(Cache::default()),
            loaded: Condvar::new(),
            pinned: Vec::new(),
            alloc_block: None,
            counters: Counters::default(),
        })
    }

    /// A new index: formats the NAND and writes an empty root leaf in a block of its own.
    pub fn create(storage: Storage, opts: Settings, config: &Config) -> Result<Core<P>> {
        let cfg = nand_config(config, &opts);
        Geometry::new::<P>(config, &opts, &cfg)?;
        let nand = Nand::create(storage.device, cfg)?;
        let log = Log::create(storage.vfs, opts.record.clone())?;
        let mut c = Core::empty(config, opts, nand, log)?;
        let b = c.new_block(P::log_start(&c.geo, 1))?;
        let img = NodeImage {
            level: 0,
            entries: Vec::new(),
        };
        c.root = c.next_id;
        c.next_id += 1;
        c.write_node(b, 0, c.root, &img)?;
        let root = c.root;
        let np = c.geo.np;
        let blk = c.block_mut(b)?;
        blk.members.push(Member {
            node: root,
            place: Place::Slot(0),
            sectors: Vec::new(),
        });
        blk.write_point = np;
        c.location.insert(c.root, b);
        if P::ALLOC_BLOCK {
            c.alloc_block = Some(b);
        }
        c.checkpoint()?;
        Ok(c)
    }

    pub(super) fn state(&self) -> serde_json::Value {
        serde_json::json!(State {
            flavor: P::TAG.to_string(),
            root: self.root,
            height: self.height,
            next_id: self.next_id,
            entries: self.entries,
            alloc_block: self.alloc_block,
            blocks: self
                .blocks
                .iter()
                .map(|(&b, x)| BlockState {
                    block: b,
                    log_start: x.log_start,
                    next_sector: x.next_sector,
                    last_sector: x.last_sector,
                    write_point: x.write_point,
                    members: x
                        .members
                        .iter()
                        .map(|m| {
                            (
                                m.node,
                                match m.place {
                                    Place::Slot(p) => Some(p),
                                    Place::Ghost => None,
                                },
                            )
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    /// Make flash hold every node's current version (which changes the block table), then
    /// publish the state ([`Core::publish`]).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.write_dirty_frames()?;
        let state = self.state();
        self.publish(state)
    }

    /// With flash current ([`Core::write_dirty_frames`] done), switch the manifest to
    /// `state`, then erase the blocks the previous checkpoint referenced and that are no
    /// longer used.
    pub fn publish(&mut self, state: serde_json::Value) -> Result<()> {
        self.log.switch(AllocState::default(), state)?;
        for b in std::mem::take(&mut self.pending) {
            self.nand_mut().erase(b)?;
            self.free.insert(b);
        }
        for blk in self.blocks.values_mut() {
            blk.checkpointed = true;
        }
        self.counters.checkpoints += 1;
        Ok(())
    }

    /// Reopen: the checkpoint's blocks, then the WAL replayed (module doc).
    pub fn open(
        storage: Storage,
        manifest: Manifest,
        options: Settings,
        config: &Config,
    ) -> Result<(Core<P>, Vec<LogicalOp>)> {
        let bad = |d: String| Error::corruption("MANIFEST", None, d);
        let state: State = serde_json::from_value(manifest.engine.clone())
            .map_err(|e| bad(format!("bad {} state: {e}", options.engine.name())))?;
        if state.flavor != P::TAG {
            return Err(bad(format!(
                "state of {}, expected {}",
                state.flavor,
                P::TAG
            )));
        }
        let Storage { device, vfs } = storage;
        let nand = Nand::open(device)?;
        if let DeviceSpec::RawNand(cfg) = &options.device {
            if nand.config() != cfg {
                return Err(Error::InvalidOptions(format!(
                    "{}: the medium in {NAND_FILE} holds NAND geometry {:?}, the manifest's \
                     RawNand device says {cfg:?}",
                    options.engine.name(),
                    nand.config()
                )));
            }
        }
        // WAL: drop leftovers, cut a torn tail (the shared first step of recovery).
        let (log, records) = Log::recover(vfs, &manifest)?;
        let ops: Vec<LogicalOp> = records
            .into_iter()
            .filter_map(|r| match r {
                Record::Op(op) => Some(op),
                Record::Image(..) => None,
            })
            .collect();
        let mut c = Core::empty(config, options, nand, log)?;
        if !crate::kit::api::plausible_height(state.height) {
            return Err(bad(format!("height {}", state.height)));
        }
        c.root = state.root;
        c.height = state.height;
        c.next_id = state.next_id;
        c.entries = state.entries;
        c.alloc_block = state.alloc_block;
        let nblocks = c.nand().config().blocks;
        for bs in &state.blocks {
            if bs.block >= nblocks || !c.free.remove(&bs.block) {
                return Err(bad(format!(
                    "block {} is out of range or listed twice",
                    bs.block
                )));
            }
            let members = bs
                .members
                .iter()
                .map(|&(node, p)| Member {
                    node,
                    place: p.map_or(Place::Ghost, Place::Slot),
                    sectors: Vec::new(),
                })
                .collect();
            for &(node, _) in &bs.members {
                if c.location.insert(node, bs.block).is_some() {
                    return Err(bad(format!("node {node} is listed twice")));
                }
            }
            c.blocks.insert(
                bs.block,
                Block {
                    members,
                    log_start: bs.log_start,
                    next_sector: bs.next_sector,
                    last_sector: bs.last_sector,
                    write_point: bs.write_point,
                    checkpointed: true,
                },
            );
        }
        if !c.location.contains_key(&c.root) {
            return Err(bad(format!("root node {} is in no block", c.root)));
        }
        let ids: Vec<u32> = c.blocks.keys().copied().collect();
        let mut stale = Vec::new();
        for &b in &ids {
            c.recover_sectors(b)?;
            if c.has_uncovered_programs(b) {
                stale.push(b);
            }
        }
        for b in stale {
            c.rebuild(b, Rebuild::Recovery)?;
        }
        Ok((c, ops))
    }

    /// Rebuild the members' log sector lists of block `b` from flash.
    fn recover_sectors(&mut self, b: u32) -> Result<()> {
        let blk = &self.blocks[&b];
        let Some(last) = blk.last_sector else {
            return Ok(());
        };
        P::recover_sectors(self, b, last)
    }

    /// Read log sector `s` of block `b` (one sector read).
    pub fn read_sector(&self, b: u32, s: u16) -> Result<format::LogSector> {
        let spp = self.geo.spp as u16;
        let mut buf = vec![0u8; format::SECTOR];
        self.nand().read_sectors(
            PageAddr {
                block: b,
                page: (s / spp) as u32,
            },
            (s % spp) as u32,
            &mut buf,
            &mut [],
        )?;
        format::decode_sector(&buf, self.linear(b, (s / spp) as u32), s)
    }

    /// True if block `b` holds a programmed sector the checkpoint does not cover.
    fn has_uncovered_programs(&self, b: u32) -> bool {
        let blk = &self.blocks[&b];
        let spp = self.geo.spp;
        let full = (1u32 << spp) - 1;
        let mut expect = vec![0u32; self.geo.ppb as usize];
        for m in &blk.members {
            if let Place::Slot(p) = m.place {
                for q in p..p + self.geo.np {
                    if let Some(e) = expect.get_mut(q as usize) {
                        *e = full;
                    }
                }
            }
            for &s in &m.sectors {
                if let Some(e) = expect.get_mut((s as u32 / spp) as usize) {
                    *e |= 1 << (s as u32 % spp);
                }
            }
        }
        let nand = self.nand();
        (0..self.geo.ppb).any(|p| {
            nand.programmed_sectors(PageAddr { block: b, page: p }) & !expect[p as usize] != 0
        })
    }
}
