//! The `Engine` operations of the core: logged mutations (WAL first, then the tree), range
//! scans, checkpoints when due, and statistics.

use super::core::{shared, Core, LeafRest};
use super::policy::LogPolicy;
use crate::durable::{Log, Logged, Store};
use crate::error::Result;
use crate::io::DeviceStats;
use crate::kit::api::RangeCursor;
use crate::stats::{counters, BufferStats, Stats};

/// Free blocks below which a checkpoint is taken to erase the blocks it releases.
const RESERVE_BLOCKS: usize = 24;

/// The log cycle of the IPL and d-IPL B+-trees ([`Logged`]): their checkpoint makes flash
/// current and switches the manifest ([`Core::checkpoint`]).
/// The in-page logging core is its own [`Store`]: [`Logged::before_checkpoint`] makes flash
/// current (writing log sectors changes the block table the state describes), then the
/// store publishes the state ([`Core::publish`]).
impl<P: LogPolicy> Store for Core<P> {
    fn log(&mut self) -> &mut Log {
        &mut self.log
    }

    fn checkpoint_wal_bytes(&self) -> u64 {
        self.options.checkpoint_wal_bytes
    }

    fn checkpoint(&mut self, engine_state: serde_json::Value) -> Result<()> {
        self.publish(engine_state)
    }
}

/// The log cycle of the IPL and d-IPL B+-trees ([`Logged`]).
impl<P: LogPolicy> Logged for Core<P> {
    fn store(&mut self) -> &mut dyn Store {
        self
    }

    fn engine_state(&self) -> serde_json::Value {
        self.state()
    }

    fn charge_memory(&mut self) -> Result<()> {
        self.charge_frames()
    }

    /// Write the log sector of every dirty frame: flash then holds every node's current
    /// version, and the block table its state.
    fn before_checkpoint(&mut self) -> Result<()> {
        self.write_dirty_frames()
    }

    fn insert_unlogged(&mut self, key: u64, value: u64) -> Result<()> {
        Core::insert_unlogged(self, key, value)
    }

    fn delete_unlogged(&mut self, key: u64) -> Result<()> {
        Core::delete_unlogged(self, key)
    }

    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        Core::delete_range_unlogged(self, lo, hi)
    }

    /// No bulk load: a bulk insert into an empty tree inserts pair by pair.
    fn holds_nothing(&self) -> bool {
        false
    }

    fn load_empty(&mut self, sorted: &[(u64, u64)]) -> Result<()> {
        Logged::bulk_unlogged(self, sorted)
    }

    /// Free blocks run low while blocks wait for their erase (durable.rs).
    fn checkpoint_due(&self) -> bool {
        self.free.len() < RESERVE_BLOCKS && !self.pending.is_empty()
    }

    /// Recovery rebuilt blocks and its result must reach a manifest.
    fn checkpoint_after_recovery(&self) -> bool {
        true
    }
}

impl<P: LogPolicy> Core<P> {
    fn delete_range_unlogged(&mut self, lo: u64, hi: u64) -> Result<()> {
        crate::kit::api::delete_range_by_scan(
            self,
            lo,
            hi,
            |e, cur, out| e.scan(cur, out),
            |e, k| e.delete_unlogged(k).map(|_| ()),
        )
    }

    /// At least one entry of the range from `cur.next`, or the cursor marked done: the rest
    /// of a leaf, then the next leaf from its lower fence.
    pub fn scan(&mut self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        scan_leaves(cur, out, |from| self.leaf_from(from))
    }

    /// [`Core::scan`] from `&self`, beside other readers ([`Core::leaf_from_shared`]).
    pub fn scan_shared(&self, cur: &mut RangeCursor, out: &mut Vec<(u64, u64)>) -> Result<()> {
        scan_leaves(cur, out, |from| self.leaf_from_shared(from))
    }

    /// Zero the NAND and engine counters.
    pub fn reset_counters(&mut self) {
        self.nand_mut().reset_stats();
        self.counters = super::core::Counters::default();
        let c = self.cache();
        c.hits = 0;
        c.node_reads = 0;
    }

    pub fn stats(&self) -> Stats {
        let n = self.nand().stats();
        let (resident, hits, node_reads) = {
            let t = shared(&self.cache);
            (t.frames.len() as u64, t.hits, t.node_reads)
        };
        let c = &self.counters;
        let node_bytes = self.geo.node_bytes as f64;
        let wa_milli = if c.node_writes == 0 {
            0
        } else {
            (n.page_programs as f64 * self.geo.page_bytes as f64
                / (c.node_writes as f64 * node_bytes)
                * 1000.0)
                .round() as u64
        };
        let ghosts = self
            .blocks
            .values()
            .flat_map(|b| b.members.iter())
            .filter(|m| m.place == super::core::Place::Ghost)
            .count() as u64;
        let max_ghosts = self
            .blocks
            .values()
            .map(|b| {
                b.members
                    .iter()
                    .filter(|m| m.place == super::core::Place::Ghost)
                    .count()
            })
            .max()
            .unwrap_or(0) as u64;
        let cleansings = (P::CLEANSE_COUNTER, c.block_cleansings);
        let engine_counters = counters(&[
            ("entries", self.entries),
            ("height", self.height as u64),
            ("nodes", self.location.len() as u64),
            ("blocks_in_use", self.blocks.len() as u64),
            ("blocks_pending_erase", self.pending.len() as u64),
            ("node_splits", c.node_splits),
            ("block_splits", c.block_splits),
            cleansings,
            ("ghost_nodes", ghosts),
            ("max_ghosts_per_block", max_ghosts),
            ("ghost_nodes_created", c.ghost_nodes_created),
            ("ghosts_split_again", c.ghosts_split_again),
            ("node_reads", node_reads),
            ("node_writes", c.node_writes),
            ("log_sector_writes", c.log_sector_writes),
            ("released_nodes", c.released_nodes),
            ("released_blocks", c.released_blocks),
            ("checkpoints", c.checkpoints),
            ("recovery_rebuilds", c.recovery_rebuilds),
            ("nand_page_reads", n.page_reads),
            ("nand_sector_reads", n.sector_reads),
            ("nand_page_programs", n.page_programs),
            ("nand_sector_programs", n.sector_programs),
            ("nand_erases", n.erases),
            ("nand_time_us", n.time_us as u64),
            ("max_erase_count", n.max_erase_count),
            ("write_amplification_milli", wa_milli),
            ("physical_nodes", c.physical_nodes),
            ("physical_records", c.physical_records),
        ]);
        let page = self.geo.page_bytes as u64;
        let device = DeviceStats {
            backend: "raw-nand".to_string(),
            reads: n.page_reads,
            read_requests: n.page_reads,
            read_bytes: n.sector_reads * super::format::SECTOR as u64,
            writes: n.page_programs,
            write_requests: n.page_programs,
            write_bytes: n.sector_programs * super::format::SECTOR as u64,
            trims: n.erases,
            ..DeviceStats::default()
        };
        let _ = page;
        let wal = self.log.stats();
        Stats {
            engine: self.options.engine,
            device,
            buffer: BufferStats {
                capacity_bytes: (self.geo.frames * self.geo.node_bytes) as u64,
                frames: self.geo.frames as u64,
                resident,
                hits,
                misses: node_reads,
                evictions: c.node_writes,
                writebacks: c.log_sector_writes,
            },
            wal,
            engine_counters,
            memory_bytes: self.memory_bytes(),
            shape: Default::default(),
        }
    }

    /// Frames (node and log sector each), the block table and the node maps.
    pub fn memory_bytes(&self) -> u64 {
        let frames = (self.geo.frames * (self.geo.node_bytes + super::format::SECTOR)) as u64;
        frames + self.table_bytes()
    }

    /// The block table and the node maps.
    pub fn table_bytes(&self) -> u64 {
        let blocks: usize = self
            .blocks
            .values()
            .map(|b| {
                48 + b
                    .members
                    .iter()
                    .map(|m| 32 + 2 * m.sectors.len())
                    .sum::<usize>()
            })
            .sum();
        blocks as u64 + 48 * (self.location.len() + self.parent.len()) as u64
    }
}

/// At least one entry of the range from `cur.next`, or the cursor marked done, reading
/// leaves with `leaf_from`: the rest of a leaf, then the next leaf from its lower fence.
fn scan_leaves(
    cur: &mut RangeCursor,
    out: &mut Vec<(u64, u64)>,
    mut leaf_from: impl FnMut(u64) -> Result<LeafRest>,
) -> Result<()> {
    let before = out.len();
    while let Some(from) = cur.next {
        let (entries, fence) = leaf_from(from)?;
        for (k, v) in entries {
            if !cur.below_hi(k) {
                cur.next = None;
                return Ok(());
            }
            out.push((k, v));
        }
        cur.next = fence.filter(|&f| cur.below_hi(f));
        if out.len() > before {
            return Ok(());
        }
    }
    Ok(())
}
