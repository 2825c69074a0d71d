//! Engine parameters: the [`Options`] an index is created with (cost-model tuning from the
//! device profile, the NAND the IPL and d-IPL B+-trees lay over the file) and the parameters
//! an engine reports it ran with, with the FD-tree cost model's prediction for them.

use super::aging::counter;
use super::config::BenchConfig;
use crate::output::report::ModelPrediction;
use crate::probe::DeviceProfile;
use anyhow::{Context, Result};
use flashix::cost::fdtree as fd_model;
use flashix::cost::DeviceCosts;
use flashix::{
    DeviceSpec, DiplOptions, EngineKind, FdTreeOptions, IplOptions, LsmOptions, Options,
    PioOptions, Stats, Tuning,
};

/// Longest PIO leaf (in segments) the PIO cost model considers.
pub const PIO_MAX_SEGMENTS: usize = 16;
/// Erase block of the NAND that the IPL and d-IPL B+-trees lay over the benchmark's file:
/// the d-IPL paper's 128 KiB (§6.1: 64 pages of 2 KiB), in pages of `--page-size`.
pub const IPL_ERASE_BLOCK_BYTES: u64 = 128 << 10;

/// Erase blocks of that NAND for an index of `entries` (plus aging, at most as many again):
/// 16-byte entries in nodes at least half full, over the blocks' data pages (IPL keeps
/// `log_pages` of each block for its log), twice over for the blocks that merges and
/// garbage collection need free, and at least the engines' default.
pub fn ipl_nand_blocks(entries: u64, page_size: u64, log_pages: u64) -> u32 {
    let ppb = (IPL_ERASE_BLOCK_BYTES / page_size).max(1);
    let data_per_block = (ppb.saturating_sub(log_pages)).max(1) * page_size;
    let bytes = entries
        .saturating_mul(2)
        .saturating_mul(16)
        .saturating_mul(2);
    let blocks = 2 * bytes.div_ceil(data_per_block) + 64;
    u32::try_from(blocks)
        .unwrap_or(u32::MAX)
        .max(IplOptions::default().nand_blocks)
}

impl BenchConfig {
    /// The cost models' device: the profile's ([`crate::models::fdtree::device_costs`]), its merges
    /// on a second core only where the engines run them there: deamortized, on this
    /// machine's disk (not a simulated device).
    pub fn model_device(&self, profile: &DeviceProfile) -> Result<DeviceCosts> {
        let dev = crate::models::fdtree::device_costs(profile, self.page_size)?;
        let thread = dev.merge_thread() && self.deamortize && self.device.is_none();
        Ok(dev.with_merge_thread(thread))
    }

    /// The options an index is created with: the measured memory budget, and a cost-model
    /// tuning from the device profile (the engines' own models pick what is left unset:
    /// FD-tree and LSM `k`, PIO B-tree leaf and OPQ size).
    pub fn options(&self, engine: EngineKind, profile: &DeviceProfile) -> Result<Options> {
        let tuning = Tuning {
            device: self.model_device(profile)?,
            expected_entries: self.entries,
            search_fraction: self.search_fraction,
            pio_device: Some(crate::models::pio::pio_costs(
                profile,
                self.page_size,
                PIO_MAX_SEGMENTS,
            )?),
            bulk: Some(flashix::cost::bulk::BulkTuning {
                bulk_keys: None,
                elementary_bulk_keys: None,
                device: Some(crate::models::bulk::bulk_costs(profile)?),
            }),
        };
        let fdtree = FdTreeOptions {
            k: self.k,
            deamortize: self.deamortize,
            ..FdTreeOptions::default()
        };
        let lsm = LsmOptions {
            k: self.k,
            search_before_delete: self.lsm_search_before_delete,
            deamortize: self.deamortize,
            ..LsmOptions::default()
        };
        let pio = PioOptions {
            leaf_segments: self.pio_leaf_segments,
            opq_bytes: self.pio_opq_bytes,
            ..PioOptions::default()
        };
        // The IPL and d-IPL B+-trees lay a NAND over the file: 128 KiB erase blocks of
        // `--page-size` pages (IPL's 8 KiB log area per block), sized for the entries.
        let ppb = (IPL_ERASE_BLOCK_BYTES / self.page_size as u64).max(1) as u32;
        let ipl_defaults = IplOptions::default();
        let ipl = IplOptions {
            pages_per_block: ppb,
            nand_blocks: ipl_nand_blocks(
                self.entries,
                self.page_size as u64,
                ipl_defaults.log_area_bytes / self.page_size as u64,
            ),
            ..ipl_defaults
        };
        let dipl = DiplOptions {
            pages_per_block: ppb,
            nand_blocks: ipl_nand_blocks(self.entries, self.page_size as u64, 0),
            ..DiplOptions::default()
        };
        Ok(Options::new(engine)
            .page_size(self.page_size)
            .buffer_pool_bytes(self.buffer_pool_bytes)
            .device(self.device.clone().unwrap_or(DeviceSpec::File {
                direct_io: self.direct_io,
            }))
            .tuning(tuning)
            .fdtree(fdtree)
            .lsm(lsm)
            .pio(pio)
            .ipl(ipl)
            .dipl(dipl))
    }

    /// The memory budget of the measured phase. Every engine gets the same: an engine that
    /// keeps a structure outside its pool takes it from this budget (the PIO B-tree's OPQ).
    pub fn measured_pool(&self, _engine: EngineKind, _profile: &DeviceProfile) -> Result<u64> {
        Ok(self.buffer_pool_bytes)
    }
}

/// The engine's parameters in effect (from its counters) and, for the FD-tree, the cost
/// model's prediction for them: Eq. 10 search and App. C.3 insertion cost for the k and
/// levels in use, the lowest level's entries (else the live entries) and the measured pool.
pub(super) fn engine_params(
    cfg: &BenchConfig,
    engine: EngineKind,
    s: &Stats,
    live: u64,
    profile: &DeviceProfile,
) -> Result<(String, Option<ModelPrediction>)> {
    if engine == EngineKind::PioBTree {
        let c = |n: &str| counter(s, n).unwrap_or(0);
        return Ok((
            format!(
                "leaf_segments={} opq_capacity={} height={}",
                c("leaf_segments"),
                c("opq_capacity"),
                c("height")
            ),
            None,
        ));
    }
    let (Some(k), Some(levels)) = (
        counter(s, "k"),
        counter(s, "levels").or(counter(s, "components").map(|c| c + 1)),
    ) else {
        return Ok((String::new(), None));
    };
    let mut params = format!("k={k} levels={levels}");
    if engine == EngineKind::Lsm && cfg.lsm_search_before_delete {
        params.push_str(" search_before_delete=on");
    }
    // Both run their merges a step per insert unless `--no-deamortize`.
    if matches!(engine, EngineKind::FdTree | EngineKind::Lsm) {
        params.push_str(if cfg.deamortize {
            " deamortize=on"
        } else {
            " deamortize=off"
        });
    }
    if engine != EngineKind::FdTree {
        return Ok((params, None));
    }
    let opts = cfg.options(engine, profile)?;
    let mut w = opts.fdtree_model_workload(
        opts.fdtree_options().head_tree_bytes,
        FdTreeOptions::entries_per_page(opts.page_size),
    );
    // Algorithm 5's n is the lowest level's entries (its start state: L(l-1) holds n and
    // the levels above only fences); `live` also counts the head tree's, which the lowest
    // level's capacity need not hold yet.
    let lowest = levels
        .checked_sub(1)
        .and_then(|l| counter(s, &format!("level_{l}_entries")));
    w.entries = lowest.unwrap_or(live).max(1);
    let dev = cfg.model_device(profile)?;
    let levels = u32::try_from(levels).context("levels")?;
    // The index may have fewer levels than the model needs for its entries (the lowest
    // level's capacity must hold them): then the model has no prediction for it.
    let model = fd_model::evaluate(&dev, &w, k, levels)
        .ok()
        .map(|c| ModelPrediction {
            search_us: c.search_cost_us,
            insert_us: c.insert_cost_us,
            k,
            levels,
        });
    Ok((params, model))
}
