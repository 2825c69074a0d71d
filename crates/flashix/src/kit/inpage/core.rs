//! The core of the in-page logging kit: geometry, the block table, the buffer of node
//! frames with their in-memory log sectors, and the B+-tree operations. What differs
//! between the engines built on it (where a node born from a split goes, where a block's
//! log area starts, whether log sectors carry the LLSD) is asked of the [`LogPolicy`].

use super::format::{self, NodeImage, Rec, SECTOR};
use super::policy::LogPolicy;
use crate::durable::Log;
use crate::error::{Error, Result};
use crate::settings::Settings;
use crate::sim::{Nand, NandConfig};
use crate::util::sync::{Condvar, Mutex, MutexGuard};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The longest a shared reader waits for a node another reader is loading; past it, it
/// reads the node from flash itself (a load is a node read: this never passes unless a
/// loader is stalled).
const LOAD_WAIT: Duration = Duration::from_secs(30);

/// How often a waiting reader looks again even without a wake-up.
const RECHECK: Duration = Duration::from_millis(20);

/// The numbers the kit needs from an engine's own options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Node size in bytes, a whole number of NAND pages.
    pub node_bytes: u64,
    /// Buffer frames, fixed (memory is then these frames plus the tables, outside the
    /// budget); `None`: the frames the budget (`buffer_pool_bytes`) leaves after the
    /// block table and the node maps, a node and a log sector each, at least 8 —
    /// recomputed between operations ([`Core::charge_frames`]).
    pub buffer_frames: Option<u32>,
    /// A fixed log area at the end of every block, in bytes (0: none).
    pub log_area_bytes: u64,
    /// Erase blocks of the NAND when the device is not `RawNand`.
    pub nand_blocks: u32,
    /// Pages per erase block in that case.
    pub pages_per_block: u32,
}

impl Config {
    /// Nodes of `node_bytes`, `buffer_frames` of them (`None`: from the budget), the
    /// default NAND geometry and no fixed log area ([`Config::blocks`] and
    /// [`Config::with_log_area`] set them).
    pub fn new(node_bytes: u64, buffer_frames: Option<u32>) -> Config {
        Config {
            node_bytes,
            buffer_frames,
            log_area_bytes: 0,
            nand_blocks: 1024,
            pages_per_block: 64,
        }
    }

    /// These numbers with `nand_blocks` erase blocks of `pages_per_block` pages (the NAND
    /// when the device is not `RawNand`).
    pub fn blocks(self, nand_blocks: u32, pages_per_block: u32) -> Config {
        Config {
            nand_blocks,
            pages_per_block,
            ..self
        }
    }

    /// These numbers with a fixed log area of `bytes` at the end of every block.
    pub fn with_log_area(self, bytes: u64) -> Config {
        Config {
            log_area_bytes: bytes,
            ..self
        }
    }
}

/// What a block layout is derived from ([`LogPolicy::layout`]): nodes of `np` pages
/// (`node_bytes` bytes) in blocks of `ppb` pages, and a log area option of `log_pages`
/// pages (`log_bytes` bytes; 0 without one).
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub np: u32,
    pub ppb: u32,
    pub log_pages: u32,
    pub node_bytes: u64,
    pub log_bytes: u64,
}

/// Block layout a policy derives from the geometry ([`LogPolicy::layout`]).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Most nodes (regular and ghost) a block holds.
    pub max_members: usize,
    /// First page of a fixed log area (0 without one).
    pub fixed_log_start: u32,
}

/// Sizes derived from the options and the NAND geometry.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub page_bytes: usize,
    /// Sectors per page.
    pub spp: u32,
    /// Pages per block.
    pub ppb: u32,
    /// Pages per node.
    pub np: u32,
    pub node_bytes: usize,
    pub leaf_cap: usize,
    pub internal_cap: usize,
    /// Most nodes (regular and ghost) a block holds ([`LogPolicy::layout`]).
    pub max_members: usize,
    /// First page of a fixed log area ([`LogPolicy::layout`]; 0 without one).
    pub fixed_log_start: u32,
    /// Record bytes an in-memory log sector holds.
    pub rec_cap: usize,
    /// Frames the buffer holds at most (with `budget`: recomputed between operations).
    pub frames: usize,
    /// The memory budget the frames and the tables share; `None` when the frames are fixed.
    pub budget: Option<u64>,
}

impl Geometry {
    pub fn new<P: LogPolicy>(cfg: &Config, opts: &Settings, nand: &NandConfig) -> Result<Geometry> {
        let (node_bytes, frames_opt, log_bytes) =
            (cfg.node_bytes, cfg.buffer_frames, cfg.log_area_bytes);
        let page = nand.page_bytes as u64;
        let bad = |m: String| {
            Err(Error::InvalidOptions(format!(
                "{}: {m}",
                opts.engine.name()
            )))
        };
        if node_bytes == 0 || node_bytes % page != 0 {
            return bad(format!(
                "node_bytes {node_bytes} is not a whole number of {page}-byte NAND pages"
            ));
        }
        // Page counts beyond u32 are more than any block holds (refused below).
        let np = u32::try_from(node_bytes / page).unwrap_or(u32::MAX);
        let ppb = nand.pages_per_block;
        let spp = (nand.page_bytes / SECTOR) as u32;
        if ppb.saturating_mul(spp) > 256 {
            return bad(format!(
                "{ppb} pages of {spp} sectors per block exceed the 256 log sectors an LSLM maps"
            ));
        }
        if log_bytes % page != 0 {
            return bad(format!(
                "log_area_bytes {log_bytes} is not a whole number of pages"
            ));
        }
        let log_pages = u32::try_from(log_bytes / page).unwrap_or(u32::MAX);
        let Layout {
            max_members,
            fixed_log_start,
        } = match P::layout(&Sizes {
            np,
            ppb,
            log_pages,
            node_bytes,
            log_bytes,
        }) {
            Ok(l) => l,
            Err(m) => return bad(m),
        };
        let frames = match frames_opt {
            Some(f) => f as u64,
            None => opts.buffer_pool_bytes / (node_bytes + SECTOR as u64),
        };
        if frames < 8 {
            let why = match frames_opt {
                Some(_) => String::new(),
                None => format!(
                    " (the budget of {} bytes holds {frames} frames of a {node_bytes}-byte node \
                     and a {SECTOR}-byte log sector; 8 need {})",
                    opts.buffer_pool_bytes,
                    8 * (node_bytes + SECTOR as u64)
                ),
            };
            return bad(format!(
                "{frames} buffer frames; at least 8 are needed{why}"
            ));
        }
        let nb = node_bytes as usize;
        if format::leaf_capacity(nb) < 4 {
            return bad(format!(
                "node_bytes {node_bytes} holds fewer than 4 entries"
            ));
        }
        let llsd = if P::LLSD { 2 * max_members } else { 0 };
        Ok(Geometry {
            page_bytes: nand.page_bytes,
            spp,
            ppb,
            np,
            node_bytes: nb,
            leaf_cap: format::leaf_capacity(nb),
            internal_cap: format::internal_capacity(nb),
            max_members,
            fixed_log_start,
            rec_cap: SECTOR - format::SECTOR_HEADER - llsd,
            frames: frames as usize,
            budget: frames_opt.is_none().then_some(opts.buffer_pool_bytes),
        })
    }

    pub fn cap(&self, level: u8) -> usize {
        if level == 0 {
            self.leaf_cap
        } else {
            self.internal_cap
        }
    }

    /// Sectors per block.
    pub fn sectors(&self) -> u16 {
        (self.ppb * self.spp) as u16
    }
}

/// Where a node's base version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Place {
    /// A regular node: its image starts at this page of the block.
    Slot(u32),
    /// Its base is in its first log record: a d-IPL ghost node (`GhostCreate`, §3.2) or an
    /// IPL node written as physical log records (`Init`, §2.3.1).
    Ghost,
}

/// A node stored in a block.
#[derive(Debug, Clone)]
pub struct Member {
    pub node: u64,
    pub place: Place,
    /// Its log sectors in the block, ascending (what LLSD and LSLM encode on flash).
    pub sectors: Vec<u16>,
}

/// An erase block in use.
#[derive(Debug, Clone)]
pub struct Block {
    /// d-IPL: consecutive siblings in key order (B.b); IPL: slot order.
    pub members: Vec<Member>,
    /// First page of the log area.
    pub log_start: u32,
    /// Next free log sector.
    pub next_sector: u16,
    /// The last log sector written.
    pub last_sector: Option<u16>,
    /// Next page that may be programmed as a whole (pages before it are programmed or
    /// evaporated, §2.3.2).
    pub write_point: u32,
    /// Referenced by the last checkpoint: its erase waits for the next checkpoint.
    pub checkpointed: bool,
}

impl Block {
    pub fn pos(&self, node: u64) -> Option<usize> {
        self.members.iter().position(|m| m.node == node)
    }
}

/// A buffer frame: the current version of a node and its in-memory log sector (§2.2).
#[derive(Debug, Clone)]
pub struct Frame {
    pub img: NodeImage,
    /// Encoded records not yet on flash; non-empty means the frame is dirty.
    pub log: Vec<u8>,
    pub tick: u64,
}

/// Engine counters (STYLE.md naming).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub node_splits: u64,
    pub block_splits: u64,
    /// Rebuilds of a block whose log area is full: d-IPL cleansings, IPL merges
    /// (reported as [`LogPolicy::CLEANSE_COUNTER`]).
    pub block_cleansings: u64,
    pub ghost_nodes_created: u64,
    pub ghosts_split_again: u64,
    /// Node writes requested by the buffer (dirty frames evicted or flushed): C_n of Eq. (1).
    pub node_writes: u64,
    pub log_sector_writes: u64,
    pub released_nodes: u64,
    pub released_blocks: u64,
    pub checkpoints: u64,
    pub recovery_rebuilds: u64,
    /// IPL: nodes born from a split written as physical log records (§2.3.1), and those
    /// records.
    pub physical_nodes: u64,
    pub physical_records: u64,
}

/// The buffer's frame table: the frames, their LRU order, the loads shared readers have
/// in progress, and the buffer's counters. Behind [`Core::cache`]'s mutex (module doc of
/// [`super`], Thread safety).
#[derive(Debug, Default)]
pub struct Cache {
    pub frames: HashMap<u64, Frame>,
    /// tick -> node, oldest first.
    pub lru: BTreeMap<u64, u64>,
    pub tick: u64,
    /// Nodes shared readers are reading from flash into a frame each reserved: they count
    /// against the buffer's frames like resident ones.
    pub loading: Vec<u64>,
    /// Shared readers waiting on [`Core::loaded`].
    pub waiters: usize,
    /// Lookups that found their node resident.
    pub hits: u64,
    /// Nodes read from flash.
    pub node_reads: u64,
}

impl Cache {
    pub fn frame(&self, id: u64) -> Result<&Frame> {
        self.frames
            .get(&id)
            .ok_or_else(|| Error::InvalidArgument(format!("node {id} is not in the buffer")))
    }

    pub fn frame_mut(&mut self, id: u64) -> Result<&mut Frame> {
        self.frames
            .get_mut(&id)
            .ok_or_else(|| Error::InvalidArgument(format!("node {id} is not in the buffer")))
    }

    /// Make `id` the most recently used frame.
    pub fn touch(&mut self, id: u64) {
        self.tick += 1;
        let t = self.tick;
        if let Some(f) = self.frames.get_mut(&id) {
            self.lru.remove(&f.tick);
            f.tick = t;
            self.lru.insert(t, id);
        }
    }

    /// Put a frame in, as the most recently used (the caller made room).
    pub fn insert(&mut self, id: u64, img: NodeImage, log: Vec<u8>) {
        self.tick += 1;
        self.lru.insert(self.tick, id);
        self.frames.insert(
            id,
            Frame {
                img,
                log,
                tick: self.tick,
            },
        );
    }

    pub fn remove(&mut self, id: u64) {
        if let Some(f) = self.frames.remove(&id) {
            self.lru.remove(&f.tick);
        }
    }
}

/// A mutex's contents through `&mut`: no lock is taken. A panic that poisoned it left the
/// table whole (every update is a few map operations); `Db` poisons on errors.
pub fn exclusive<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// A mutex's contents from one of many threads.
pub fn shared<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared engine state.
pub struct Core<P: LogPolicy> {
    pub policy: PhantomData<P>,
    pub geo: Geometry,
    /// The raw NAND. Its reads need `&mut` (they count and advance the timing model), so
    /// shared readers take this mutex for each NAND operation; the writer reaches it with
    /// `get_mut` ([`Core::nand_mut`]).
    pub nand: Mutex<Nand>,
    /// The WAL generations and the checkpoint switch ([`crate::durable::Log`]).
    pub log: Log,
    pub options: Settings,
    pub blocks: BTreeMap<u32, Block>,
    pub free: BTreeSet<u32>,
    /// Blocks released since the last checkpoint that it still references.
    pub pending: Vec<u32>,
    /// Node -> block.
    pub location: HashMap<u64, u32>,
    /// Node -> parent, learnt on the way down (used to release empty nodes, §4.4).
    pub parent: HashMap<u64, u64>,
    pub root: u64,
    pub height: u32,
    pub next_id: u64,
    pub entries: u64,
    /// The buffer's frame table (module doc of [`super`], Thread safety).
    pub cache: Mutex<Cache>,
    /// Signalled when a shared reader's load ends (with waiters only).
    pub loaded: Condvar,
    /// Nodes the writer's operation in progress pinned (never evicted until it ends).
    pub pinned: Vec<u64>,
    /// The block new nodes go to ([`LogPolicy::ALLOC_BLOCK`]) when their origin's block is full.
    pub alloc_block: Option<u32>,
    pub counters: Counters,
}

/// The entries of a leaf from a key on, and the leaf's upper fence.
pub type LeafRest = (Vec<(u64, u64)>, Option<u64>);

/// A descent: (node, upper fence) from the root to a leaf.
pub type Path = Vec<(u64, Option<u64>)>;

impl<P: LogPolicy> Core<P> {
    // ---- buffer -------------------------------------------------------------------

    /// The frame table, for the writer (no lock taken).
    pub fn cache(&mut self) -> &mut Cache {
        exclusive(&mut self.cache)
    }

    /// The NAND, for the writer (no lock taken).
    pub fn nand_mut(&mut self) -> &mut Nand {
        exclusive(&mut self.nand)
    }

    /// The NAND, for one operation from `&self`.
    pub fn nand(&self) -> MutexGuard<'_, Nand> {
        shared(&self.nand)
    }

    pub fn frame(&mut self, id: u64) -> Result<&Frame> {
        exclusive(&mut self.cache).frame(id)
    }

    pub fn frame_mut(&mut self, id: u64) -> Result<&mut Frame> {
        exclusive(&mut self.cache).frame_mut(id)
    }

    /// True if `id` is resident with records not yet on flash.
    pub fn is_dirty(&mut self, id: u64) -> bool {
        self.cache()
            .frames
            .get(&id)
            .is_some_and(|f| !f.log.is_empty())
    }

    /// Put a node's current version in a frame, evicting the least recently used unpinned
    /// frame first if the buffer is full (Rule 1: a dirty victim's log sector is written).
    pub fn install(&mut self, id: u64, img: NodeImage, log: Vec<u8>) -> Result<()> {
        self.make_room()?;
        self.cache().insert(id, img, log);
        Ok(())
    }

    pub fn make_room(&mut self) -> Result<()> {
        loop {
            let c = exclusive(&mut self.cache);
            if c.frames.len() + c.loading.len() < self.geo.frames {
                return Ok(());
            }
            let victim = c
                .lru
                .values()
                .copied()
                .find(|id| !self.pinned.contains(id))
                .ok_or_else(|| {
                    Error::InvalidArgument("every buffer frame is pinned".to_string())
                })?;
            if !c.frame(victim)?.log.is_empty() {
                self.counters.node_writes += 1;
                self.flush_log(victim)?;
            }
            self.drop_frame(victim);
        }
    }

    /// With frames taken from the budget: give the buffer what the block table and the
    /// node maps leave of it (at least 8 frames), evicting the least recent frames beyond
    /// it. Between operations (nothing pinned).
    pub fn charge_frames(&mut self) -> Result<()> {
        let Some(budget) = self.geo.budget else {
            return Ok(());
        };
        let per = (self.geo.node_bytes + SECTOR) as u64;
        let frames = (budget.saturating_sub(self.table_bytes()) / per).max(8) as usize;
        if frames < self.geo.frames {
            self.geo.frames = frames + 1;
            self.make_room()?;
        }
        self.geo.frames = frames;
        Ok(())
    }

    pub fn drop_frame(&mut self, id: u64) {
        self.cache().remove(id);
    }

    /// Bring a node into the buffer (a miss reads it from flash) and pin it.
    pub fn load(&mut self, id: u64) -> Result<()> {
        // Pinned first: the eviction that makes room may rebuild the node's block, which
        // must not release it.
        self.pinned.push(id);
        let c = self.cache();
        if c.frames.contains_key(&id) {
            c.hits += 1;
            c.touch(id);
        } else {
            let img = self.materialize(id, None)?;
            self.cache().node_reads += 1;
            self.install(id, img, Vec::new())?;
        }
        Ok(())
    }

    /// Run `f` on node `id`'s current version from `&self`, beside other readers (module
    /// doc of [`super`], Thread safety): a resident frame under the table's mutex; a miss
    /// reads the node from flash with the mutex released, into a frame it reserved, made
    /// by evicting the least recently used *clean* frame (a dirty one's eviction writes a
    /// log sector, which a reader does not do), or past the buffer when every other frame
    /// is dirty or pinned. A node another reader is loading is waited for.
    pub fn with_node<T>(&self, id: u64, f: impl FnOnce(&NodeImage) -> T) -> Result<T> {
        let mut c = shared(&self.cache);
        let mut deadline = None;
        loop {
            if c.frames.contains_key(&id) {
                c.hits += 1;
                c.touch(id);
                return Ok(f(&c.frame(id)?.img));
            }
            if !c.loading.contains(&id) {
                break;
            }
            let until = *deadline.get_or_insert_with(|| Instant::now() + LOAD_WAIT);
            let now = Instant::now();
            if now >= until {
                // Never under a working loader: read it past the buffer.
                drop(c);
                let img = self.materialize(id, None)?;
                shared(&self.cache).node_reads += 1;
                return Ok(f(&img));
            }
            c.waiters += 1;
            c = self
                .loaded
                .wait_timeout(c, RECHECK.min(until - now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            c.waiters -= 1;
        }
        let reserved = self.claim(&mut c);
        if reserved {
            c.loading.push(id);
        }
        drop(c);
        // Nothing writes flash under the shared lock, and a node that is not resident has
        // its current version on flash (a dirty frame is written when it is evicted).
        let r = self.materialize(id, None).map(|img| {
            let out = f(&img);
            (img, out)
        });
        let mut c = shared(&self.cache);
        if reserved {
            c.loading.retain(|&x| x != id);
            if c.waiters > 0 {
                self.loaded.notify_all();
            }
        }
        let (img, out) = r?;
        c.node_reads += 1;
        if reserved {
            c.insert(id, img, Vec::new());
        }
        Ok(out)
    }

    /// Room for one more frame for a shared reader: evict least recently used clean
    /// unpinned frames until the resident and loading frames leave one; false if only
    /// dirty or pinned frames are left to evict.
    fn claim(&self, c: &mut Cache) -> bool {
        while c.frames.len() + c.loading.len() >= self.geo.frames {
            let frames = &c.frames;
            let victim = c.lru.values().copied().find(|id| {
                !self.pinned.contains(id) && frames.get(id).is_some_and(|f| f.log.is_empty())
            });
            match victim {
                Some(v) => c.remove(v),
                None => return false,
            }
        }
        true
    }

    /// Append a record to a node's in-memory log sector; a full sector is written first
    /// (Rule 2).
    pub fn log_record(&mut self, id: u64, rec: Rec) -> Result<()> {
        let len = self.frame(id)?.log.len();
        if len + rec.len() > self.geo.rec_cap {
            self.flush_log(id)?;
        }
        let f = self.frame_mut(id)?;
        rec.encode(&mut f.log);
        Ok(())
    }

    // ---- tree -------------------------------------------------------------------

    /// Descend to the leaf for `k`, loading and pinning every node on the way.
    pub fn descend(&mut self, k: u64) -> Result<Path> {
        let mut path = Vec::with_capacity(self.height as usize);
        let mut id = self.root;
        let mut hi = None;
        loop {
            self.load(id)?;
            path.push((id, hi));
            let want = self.height as usize - path.len();
            let Some((child, fence)) = step(id, &self.frame(id)?.img, want, k)? else {
                return Ok(path);
            };
            hi = fence.or(hi);
            self.parent.insert(child, id);
            id = child;
        }
    }

    /// [`Core::descend`] from `&self`, beside other readers ([`Core::with_node`]): `leaf`
    /// is given the leaf for `k` and its upper fence. It pins nothing (a reader holds no
    /// frame between two steps) and does not learn parents (module doc of [`super`],
    /// Thread safety).
    pub fn descend_shared<T>(
        &self,
        k: u64,
        leaf: impl Fn(&NodeImage, Option<u64>) -> T,
    ) -> Result<T> {
        let mut id = self.root;
        let mut hi = None;
        let mut depth = 0;
        loop {
            depth += 1;
            let want = self.height as usize - depth;
            let next = self.with_node(id, |img| {
                Ok::<_, Error>(match step(id, img, want, k)? {
                    None => Err(leaf(img, hi)),
                    Some(next) => Ok(next),
                })
            })??;
            match next {
                Err(out) => return Ok(out),
                Ok((child, fence)) => {
                    hi = fence.or(hi);
                    id = child;
                }
            }
        }
    }

    pub fn unpin(&mut self) {
        self.pinned.clear();
    }

    pub fn insert_unlogged(&mut self, k: u64, v: u64) -> Result<()> {
        let path = self.descend(k)?;
        let r = self.insert_at(&path, path.len() - 1, k, v);
        self.unpin();
        r
    }

    /// Insert `(k, v)` into the node at `path[depth]`, splitting it first if it is full.
    fn insert_at(&mut self, path: &Path, depth: usize, k: u64, v: u64) -> Result<()> {
        let id = path[depth].0;
        let f = self.frame(id)?;
        let level = f.img.level;
        match f.img.entries.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => {
                if f.img.entries[i].1 == v {
                    return Ok(());
                }
                self.log_record(id, Rec::Put(k, v))?;
                self.frame_mut(id)?.img.entries[i].1 = v;
                Ok(())
            }
            Err(_) => {
                let target = if f.img.entries.len() >= self.geo.cap(level) {
                    let (s, new) = self.split(path, depth)?;
                    if k >= s {
                        new
                    } else {
                        id
                    }
                } else {
                    id
                };
                self.log_record(target, Rec::Put(k, v))?;
                format::apply(&mut self.frame_mut(target)?.img.entries, &Rec::Put(k, v));
                if level == 0 {
                    self.entries += 1;
                } else {
                    self.parent.insert(v, target);
                }
                Ok(())
            }
        }
    }

    /// Split the full node at `path[depth]` (Algorithm 1 lines 2-7): returns the separator
    /// and the new node, whose entries are those `>= separator`.
    fn split(&mut self, path: &Path, depth: usize) -> Result<(u64, u64)> {
        let id = path[depth].0;
        let new = self.next_id;
        self.next_id += 1;
        let s = P::split(self, id, new)?;
        self.counters.node_splits += 1;
        let level = self.frame(id)?.img.level;
        if level > 0 {
            let moved: Vec<u64> = self.frame(new)?.img.entries.iter().map(|e| e.1).collect();
            for c in moved {
                self.parent.insert(c, new);
            }
        }
        self.pinned.push(new);
        if depth == 0 {
            self.new_root(id, new, s, level + 1)?;
        } else {
            self.insert_at(path, depth - 1, s, new)?;
        }
        Ok((s, new))
    }

    /// Halve the entries of `id`'s frame: the upper half, and the separator.
    pub fn take_upper_half(&mut self, id: u64) -> Result<(u64, Vec<(u64, u64)>)> {
        let f = self.frame_mut(id)?;
        let mid = f.img.entries.len() / 2;
        let upper = f.img.entries.split_off(mid);
        Ok((upper[0].0, upper))
    }

    /// A new root above `left` and `right` in a block of its own (B.b).
    fn new_root(&mut self, left: u64, right: u64, s: u64, level: u8) -> Result<()> {
        let r = self.next_id;
        self.next_id += 1;
        let img = NodeImage {
            level,
            entries: vec![(0, left), (s, right)],
        };
        let b = self.new_block(P::log_start(&self.geo, 1))?;
        self.write_node(b, 0, r, &img)?;
        let np = self.geo.np;
        let blk = self.block_mut(b)?;
        blk.members.push(Member {
            node: r,
            place: Place::Slot(0),
            sectors: Vec::new(),
        });
        blk.write_point = np;
        if P::ALLOC_BLOCK {
            self.alloc_block = Some(b);
        }
        self.location.insert(r, b);
        self.parent.insert(left, r);
        self.parent.insert(right, r);
        self.install(r, img, Vec::new())?;
        self.root = r;
        self.height += 1;
        Ok(())
    }

    /// Delete `k` by a log record; underflow is allowed and nodes are never merged (§4.4).
    pub fn delete_unlogged(&mut self, k: u64) -> Result<()> {
        let path = self.descend(k)?;
        let leaf = path[path.len() - 1].0;
        let r = (|| {
            if self
                .frame(leaf)?
                .img
                .entries
                .binary_search_by_key(&k, |e| e.0)
                .is_ok()
            {
                self.log_record(leaf, Rec::Del(k))?;
                format::apply(&mut self.frame_mut(leaf)?.img.entries, &Rec::Del(k));
                self.entries -= 1;
            }
            Ok(())
        })();
        self.unpin();
        r
    }

    pub fn get(&mut self, k: u64) -> Result<Option<u64>> {
        let path = self.descend(k);
        self.unpin();
        let path = path?;
        let leaf = path[path.len() - 1].0;
        Ok(search(&self.frame(leaf)?.img, k))
    }

    /// [`Core::get`] from `&self`, beside other readers ([`Core::descend_shared`]).
    pub fn get_shared(&self, k: u64) -> Result<Option<u64>> {
        self.descend_shared(k, |img, _| search(img, k))
    }

    /// Entries of the leaf holding `from` that are `>= from`, and the leaf's upper fence.
    pub fn leaf_from(&mut self, from: u64) -> Result<LeafRest> {
        let path = self.descend(from);
        self.unpin();
        let path = path?;
        let (leaf, hi) = path[path.len() - 1];
        Ok(rest(&self.frame(leaf)?.img, from, hi))
    }

    /// [`Core::leaf_from`] from `&self`, beside other readers ([`Core::descend_shared`]).
    pub fn leaf_from_shared(&self, from: u64) -> Result<LeafRest> {
        self.descend_shared(from, |img, hi| rest(img, from, hi))
    }

    pub fn block_of(&self, id: u64) -> Result<u32> {
        self.location.get(&id).copied().ok_or_else(|| {
            Error::corruption(format::NAND_FILE, None, format!("node {id} is in no block"))
        })
    }

    pub fn block_mut(&mut self, b: u32) -> Result<&mut Block> {
        self.blocks.get_mut(&b).ok_or_else(|| {
            Error::corruption(format::NAND_FILE, None, format!("block {b} is not in use"))
        })
    }

    pub fn free_sectors(&self, b: u32) -> u16 {
        self.blocks
            .get(&b)
            .map_or(0, |x| self.geo.sectors().saturating_sub(x.next_sector))
    }
}

/// One step of a descent for `k` at node `id`, expected at level `want`: `None` at a leaf,
/// else the child for `k` and its upper fence if the node gives one.
#[allow(clippy::type_complexity)]
fn step(id: u64, img: &NodeImage, want: usize, k: u64) -> Result<Option<(u64, Option<u64>)>> {
    if img.level as usize != want {
        return Err(Error::corruption(
            format::NAND_FILE,
            None,
            format!("node {id} is at level {}, expected level {want}", img.level),
        ));
    }
    if img.level == 0 {
        return Ok(None);
    }
    let e = &img.entries;
    if e.is_empty() {
        return Err(Error::corruption(
            format::NAND_FILE,
            None,
            format!("internal node {id} has no children"),
        ));
    }
    let i = child_index(e, k);
    Ok(Some((e[i].1, e.get(i + 1).map(|n| n.0))))
}

/// The value of `k` in a leaf.
fn search(img: &NodeImage, k: u64) -> Option<u64> {
    let e = &img.entries;
    e.binary_search_by_key(&k, |e| e.0).ok().map(|i| e[i].1)
}

/// A leaf's entries from `from` on, with its upper fence `hi`.
fn rest(img: &NodeImage, from: u64, hi: Option<u64>) -> LeafRest {
    let e = &img.entries;
    let i = e.partition_point(|x| x.0 < from);
    (e[i..].to_vec(), hi)
}

/// The child slot for `k` in an internal node: the last entry with key `<= k`, or the first.
pub fn child_index(e: &[(u64, u64)], k: u64) -> usize {
    e.partition_point(|x| x.0 <= k).saturating_sub(1)
}

pub fn lost(id: u64, b: u32) -> Error {
    Error::corruption(
        format::NAND_FILE,
        None,
        format!("node {id} is not among the members of block {b}"),
    )
}
