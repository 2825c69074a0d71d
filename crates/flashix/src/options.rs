//! [`Options`]: the builder every index is created with. The options are saved in the
//! manifest, so [`crate::Db::open`] needs only the directory.

use crate::cost::DeviceCosts;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The index structures flashix provides (DESIGN.md, Public API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EngineKind {
    /// Classic B+-tree updated in place through an LRU buffer pool (Comer 1979).
    BTree,
    /// LSM-tree of stepped B+-tree components (FD-tree paper, App. D).
    Lsm,
    /// FD-tree (Li et al., VLDB 2010).
    FdTree,
    /// PIO B-tree (Roh et al., VLDB 2011).
    PioBTree,
    /// Bulk index (Lehtonen 2014).
    BulkIndex,
    /// BFTL (Wu, Kuo, Chang).
    Bftl,
    /// LA-tree (Agrawal et al.).
    LaTree,
    /// IPL B+-tree (Lee and Moon).
    IplBTree,
    /// d-IPL B+-tree (Na, Lee, Moon, TKDE 2011).
    DiplBTree,
}

impl EngineKind {
    /// Every kind, in DESIGN.md's order.
    pub const ALL: [EngineKind; 9] = [
        EngineKind::BTree,
        EngineKind::Lsm,
        EngineKind::FdTree,
        EngineKind::PioBTree,
        EngineKind::BulkIndex,
        EngineKind::Bftl,
        EngineKind::LaTree,
        EngineKind::IplBTree,
        EngineKind::DiplBTree,
    ];

    /// Short name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::BTree => "btree",
            EngineKind::Lsm => "lsm",
            EngineKind::FdTree => "fdtree",
            EngineKind::PioBTree => "pio",
            EngineKind::BulkIndex => "bulk",
            EngineKind::Bftl => "bftl",
            EngineKind::LaTree => "latree",
            EngineKind::IplBTree => "ipl",
            EngineKind::DiplBTree => "dipl",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s) || format!("{k:?}").eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<_> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown engine {s:?}; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// Where an index's pages live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum DeviceSpec {
    /// One file `data` in the index directory; `direct_io` asks for `O_DIRECT` (the
    /// default, so the page cache does not help; Contract 5).
    File { direct_io: bool },
    /// Pages in memory (tests). Such an index cannot be reopened by [`crate::Db::open`].
    Memory,
    /// A simulated SSD ([`crate::sim::SimSsd`]: an FTL over simulated NAND) whose flash
    /// lives in the file `nand` of the index directory. The page size must be a multiple
    /// of the NAND page.
    SimulatedSsd(crate::sim::SimSsdConfig),
    /// Raw simulated NAND flash in the file `nand` of the index directory (IPL and d-IPL
    /// B+-trees build their [`crate::sim::Nand`] on it; the device's page is the NAND page).
    RawNand(crate::sim::NandConfig),
}

/// B+-tree sub-options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BTreeOptions {
    /// Fill factor of bulk loading (FD-tree paper, App. D: 0.7).
    pub bulk_fill: f64,
}

impl Default for BTreeOptions {
    fn default() -> Self {
        BTreeOptions { bulk_fill: 0.7 }
    }
}

/// FD-tree sub-options (FD-tree paper §3.2, §3.4, App. D).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdTreeOptions {
    /// Logarithmic size ratio between adjacent levels, |L(i+1)| = k·|L(i)| (§3.2). Must
    /// satisfy `2 <= k < f - 1`, f the entries of a page (§3.2: "obtaining k < f - 1").
    /// `None` (the default): the cost model's answer (§4, App. C.3,
    /// [`crate::cost::fdtree::choose`]) for the index's page size, head tree and buffer
    /// pool and the [`Options::tuning`] (device, expected entries, search share), chosen
    /// when the index is created and saved in its manifest.
    pub k: Option<u32>,
    /// Maximum size of the head tree L0 in bytes: the flash "locality area" (§3.1 P2;
    /// App. D: 512 KiB). At least two pages.
    pub head_tree_bytes: u64,
    /// Deamortized merge with two head trees (§3.4).
    pub deamortize: bool,
    /// Size of one multi-page I/O request of merges and range scans (App. D: 512 KiB);
    /// a whole number of pages.
    pub io_unit_bytes: u64,
}

impl Default for FdTreeOptions {
    fn default() -> Self {
        FdTreeOptions {
            k: None,
            head_tree_bytes: 512 << 10,
            deamortize: true,
            io_unit_bytes: 512 << 10,
        }
    }
}

/// LSM-tree sub-options (FD-tree paper, App. D: "the size ratio between two tree components
/// the same as the k value in FD-tree", "the smallest tree the locality area size").
/// Defaults equal [`FdTreeOptions`]' so that the two engines compare like for like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LsmOptions {
    /// Size ratio between adjacent components, |C(i+1)| = k·|C(i)|. At least 2. `None`
    /// (the default): the FD-tree's k for the same index (App. D), from the cost model.
    pub k: Option<u32>,
    /// Maximum size of C0, the in-pool B+-tree, in bytes (the locality area, 512 KiB). At
    /// least two pages.
    pub c0_bytes: u64,
    /// Size of one multi-page I/O request of merges and range scans (512 KiB); a whole
    /// number of pages.
    pub io_unit_bytes: u64,
    /// A delete searches first and writes a tombstone only for a present key, as the
    /// FD-tree paper's baselines delete ("a deletion is implemented by a search followed
    /// by an insertion", §4). Off by default: a blind tombstone, no read.
    #[serde(default)]
    pub search_before_delete: bool,
}

impl Default for LsmOptions {
    fn default() -> Self {
        let f = FdTreeOptions::default();
        LsmOptions {
            k: f.k,
            c0_bytes: f.head_tree_bytes,
            io_unit_bytes: f.io_unit_bytes,
            search_before_delete: false,
        }
    }
}

/// What the cost models tune an index for when its sub-options leave a parameter to them
/// (DESIGN.md: sub-options default "to the cost model's answer for the device profile").
/// `flashix bench` fills it from the `flashix probe` profile and the benchmark's size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// The device's per-page costs, for the index's page size.
    pub device: DeviceCosts,
    /// Entries the index is expected to hold.
    pub expected_entries: u64,
    /// Share of operations that are searches (the rest are updates), 0..=1.
    pub search_fraction: f64,
    /// The PIO B-tree model's device inputs (latency by request size, psync throughput);
    /// `None`: derived from `device` with the reference SSD's queue-depth-32 throughput
    /// ([`crate::cost::pio::PioDeviceCosts::derived`]).
    #[serde(default)]
    pub pio_device: Option<crate::cost::pio::PioDeviceCosts>,
}

impl Tuning {
    /// [`DeviceCosts::reference`], 10 million entries, half searches.
    pub fn reference(page_size: usize) -> Tuning {
        Tuning {
            device: DeviceCosts::reference(page_size),
            expected_entries: 10_000_000,
            search_fraction: 0.5,
            pio_device: None,
        }
    }
}

/// PIO B-tree sub-options (Roh et al., VLDB 2011). Defaults: the paper's experimental
/// settings for `pio_max`, `speriod` and `bcnt` (§4.1: "PioMax, speriod, and bcnt were
/// fixed at 64, 5000, and 5000"), and the cost model's choice (§3.6, Eq. 10;
/// [`crate::cost::pio::resolve`]) for `leaf_segments` and `opq_bytes` left `None`, made
/// when the index is created for the [`Options::tuning`] and saved in its manifest.
///
/// **Memory.** As in the paper (§4.1.3: "after allocating the main memory to OPQ and
/// LSMap, the rest of main memory space was allocated to the buffer pool"), the PIO
/// B-tree's [`Options::buffer_pool_bytes`] is its memory budget `M`: the OPQ takes
/// `opq_bytes` of it and the buffer pool gets the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PioOptions {
    /// Leaf node size L in leaf segments (pages), §3.2.2, 1..=64. Internal nodes are one
    /// page. `None`: the cost model's choice.
    pub leaf_segments: Option<u32>,
    /// Memory of the operation queue (OPQ, §3.1.3) in bytes, taken from the memory
    /// budget; an OPQ entry takes [`PIO_OPQ_ENTRY_BYTES`]. At least two entries.
    /// `None`: the cost model's choice.
    pub opq_bytes: Option<u64>,
    /// Largest number of requests in one psync I/O call (`PioMax`, §3.1.1). Default 64.
    /// 1..=4096.
    pub pio_max: u32,
    /// Sort period: the OPQ's appended region is sorted and merged into its sorted region
    /// every `speriod` appends (§3.1.3). Default 5000. At least 1.
    pub speriod: u32,
    /// Batch count: entries one batch update (`bupdate`) takes from a full OPQ
    /// (§3.1.3). Default 5000. At least 1.
    pub bcnt: u32,
}

/// Bytes of one OPQ entry in memory: key, value and operation flag (§3.1.3, Figure 7).
pub const PIO_OPQ_ENTRY_BYTES: u64 = 24;

impl Default for PioOptions {
    fn default() -> Self {
        PioOptions {
            leaf_segments: None,
            opq_bytes: None,
            pio_max: 64,
            speriod: 5000,
            bcnt: 5000,
        }
    }
}

/// IPL B+-tree sub-options (d-IPL paper §2.2: in-page logging with a fixed log area per
/// erase block, Lee and Moon, SIGMOD 2007). The NAND page is the index's `page_size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IplOptions {
    /// Node size in bytes, a whole number of NAND pages (§6.1: 8 KiB).
    pub node_bytes: u64,
    /// Buffer frames (one node each). `None`: `buffer_pool_bytes / node_bytes`. At least 8.
    pub buffer_frames: Option<u32>,
    /// The fixed log area at the end of every erase block, in bytes: whole pages (IPL's
    /// 8 KiB of 16 log sectors per 128 KiB block).
    pub log_area_bytes: u64,
    /// Erase blocks of the simulated NAND when the device is not `RawNand` (whose config
    /// gives the geometry), e.g. `Db::create_on` with `DeviceSpec::Memory`.
    pub nand_blocks: u32,
    /// Pages per erase block in that case (§6.1: 64 pages of 2 KiB = 128 KiB).
    pub pages_per_block: u32,
}

impl Default for IplOptions {
    fn default() -> Self {
        IplOptions {
            node_bytes: 8192,
            buffer_frames: None,
            log_area_bytes: 8192,
            nand_blocks: 1024,
            pages_per_block: 64,
        }
    }
}

/// d-IPL B+-tree sub-options (Na, Lee, Moon, TKDE 2011, §3-§5). The NAND page is the
/// index's `page_size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiplOptions {
    /// Node size in bytes, a whole number of NAND pages (§6.1: 8 KiB).
    pub node_bytes: u64,
    /// Buffer frames (one node each). `None`: `buffer_pool_bytes / node_bytes`. At least 8.
    pub buffer_frames: Option<u32>,
    /// Erase blocks of the simulated NAND when the device is not `RawNand` (whose config
    /// gives the geometry).
    pub nand_blocks: u32,
    /// Pages per erase block in that case (§6.1: 64).
    pub pages_per_block: u32,
}

impl Default for DiplOptions {
    fn default() -> Self {
        DiplOptions {
            node_bytes: 8192,
            buffer_frames: None,
            nand_blocks: 1024,
            pages_per_block: 64,
        }
    }
}

/// BFTL sub-options (Wu, Kuo, Chang, "An efficient B-tree layer for flash-memory storage
/// systems", RTCSA 2003 / ACM TECS 2007; the d-IPL paper's §2.1.1 and §6.3). Nodes are
/// logical: made of index units scattered over pages, so `node_bytes` only sets the fanout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BftlOptions {
    /// Logical node size in bytes; the fanout is `(node_bytes - 32) / 16` entries (the
    /// d-IPL paper's §6.1: 8 KiB nodes, leaf fanout 510). At least 96 (4 entries).
    pub node_bytes: u64,
    /// Index units the reservation buffer holds before it is committed to flash. `None`:
    /// one node's worth (the fanout), the d-IPL paper's §2.1.1 reading of BFTL ("flushed
    /// ... when a node-sized buffer slot becomes full").
    pub reservation_units: Option<u32>,
    /// Compaction threshold `c`: a node whose node translation table list holds more than
    /// `c` pages is compacted. `None`: BFTL's bound of 4 list entries (Wu et al.'s
    /// experiments, where a compacted node fits one page) plus the extra pages a full
    /// compacted node needs here, so that a node has room for 4 pages of scattered units
    /// beyond its compacted form (8 for 8 KiB nodes on 2 KiB pages). At least one more
    /// than the pages of a full compacted node.
    pub c: Option<u32>,
}

impl Default for BftlOptions {
    fn default() -> Self {
        BftlOptions {
            node_bytes: 8192,
            reservation_units: None,
            c: None,
        }
    }
}

/// Options of an index: a builder, e.g.
/// `Options::new(EngineKind::BTree).page_size(4096).buffer_pool_bytes(16 << 20)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub(crate) engine: EngineKind,
    pub(crate) page_size: usize,
    pub(crate) buffer_pool_bytes: u64,
    pub(crate) device: DeviceSpec,
    pub(crate) checkpoint_wal_bytes: u64,
    pub(crate) btree: BTreeOptions,
    #[serde(default)]
    pub(crate) fdtree: FdTreeOptions,
    #[serde(default)]
    pub(crate) lsm: LsmOptions,
    /// `None`: [`Tuning::reference`] for the page size.
    #[serde(default)]
    pub(crate) tuning: Option<Tuning>,
    #[serde(default)]
    pub(crate) pio: PioOptions,
    #[serde(default)]
    pub(crate) ipl: IplOptions,
    #[serde(default)]
    pub(crate) dipl: DiplOptions,
    #[serde(default)]
    pub(crate) bftl: BftlOptions,
}

/// Default page size: the SSD's 4 KiB page.
pub const DEFAULT_PAGE_SIZE: usize = 4096;

impl Options {
    /// Defaults for `engine`: 4 KiB pages, 16 MiB buffer pool, a file with `O_DIRECT`;
    /// for `IplBTree` and `DiplBTree`, raw NAND ([`DeviceSpec::RawNand`]) of the default
    /// geometry with the sub-options' 1024 blocks of 64 pages, and 2 KiB pages (the NAND
    /// page; the d-IPL paper's §6.1).
    pub fn new(engine: EngineKind) -> Self {
        let (page_size, device) = match engine {
            EngineKind::IplBTree | EngineKind::DiplBTree => {
                let d = DiplOptions::default();
                let cfg = crate::sim::NandConfig {
                    blocks: d.nand_blocks,
                    pages_per_block: d.pages_per_block,
                    ..crate::sim::NandConfig::default()
                };
                (cfg.page_bytes, DeviceSpec::RawNand(cfg))
            }
            _ => (DEFAULT_PAGE_SIZE, DeviceSpec::File { direct_io: true }),
        };
        Options {
            engine,
            page_size,
            buffer_pool_bytes: 16 << 20,
            device,
            checkpoint_wal_bytes: 128 << 20,
            btree: BTreeOptions::default(),
            fdtree: FdTreeOptions::default(),
            lsm: LsmOptions::default(),
            tuning: None,
            pio: PioOptions::default(),
            ipl: IplOptions::default(),
            dipl: DiplOptions::default(),
            bftl: BftlOptions::default(),
        }
    }

    /// Page (node) size in bytes: a power of two, at least 512.
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.page_size = bytes;
        self
    }

    /// Buffer pool budget in bytes.
    pub fn buffer_pool_bytes(mut self, bytes: u64) -> Self {
        self.buffer_pool_bytes = bytes;
        self
    }

    /// Where the pages live.
    pub fn device(mut self, device: DeviceSpec) -> Self {
        self.device = device;
        self
    }

    /// WAL size (bytes) after which the index takes a checkpoint, bounding recovery time.
    pub fn checkpoint_wal_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_wal_bytes = bytes;
        self
    }

    /// B+-tree sub-options.
    pub fn btree(mut self, btree: BTreeOptions) -> Self {
        self.btree = btree;
        self
    }

    /// FD-tree sub-options.
    pub fn fdtree(mut self, fdtree: FdTreeOptions) -> Self {
        self.fdtree = fdtree;
        self
    }

    /// LSM-tree sub-options.
    pub fn lsm(mut self, lsm: LsmOptions) -> Self {
        self.lsm = lsm;
        self
    }

    /// What the cost models tune parameters left unset for (FD-tree and LSM `k`, PIO
    /// B-tree leaf and OPQ size).
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    /// The tuning in effect: the one given, else [`Tuning::reference`].
    pub fn get_tuning(&self) -> Tuning {
        self.tuning
            .clone()
            .unwrap_or_else(|| Tuning::reference(self.page_size))
    }

    /// PIO B-tree sub-options.
    pub fn pio(mut self, pio: PioOptions) -> Self {
        self.pio = pio;
        self
    }

    /// IPL B+-tree sub-options.
    pub fn ipl(mut self, ipl: IplOptions) -> Self {
        self.ipl = ipl;
        self
    }

    /// d-IPL B+-tree sub-options.
    pub fn dipl(mut self, dipl: DiplOptions) -> Self {
        self.dipl = dipl;
        self
    }

    /// BFTL sub-options.
    pub fn bftl(mut self, bftl: BftlOptions) -> Self {
        self.bftl = bftl;
        self
    }

    /// BFTL sub-options.
    pub fn get_bftl(&self) -> &BftlOptions {
        &self.bftl
    }

    /// IPL B+-tree sub-options.
    pub fn get_ipl(&self) -> &IplOptions {
        &self.ipl
    }

    /// d-IPL B+-tree sub-options.
    pub fn get_dipl(&self) -> &DiplOptions {
        &self.dipl
    }

    /// The engine kind.
    pub fn engine(&self) -> EngineKind {
        self.engine
    }
    /// The page size.
    pub fn get_page_size(&self) -> usize {
        self.page_size
    }
    /// The buffer pool budget.
    pub fn get_buffer_pool_bytes(&self) -> u64 {
        self.buffer_pool_bytes
    }
    /// Bytes of the buffer pool itself: the budget less what an engine takes from it for
    /// its own structures (the PIO B-tree's OPQ; see [`PioOptions`]).
    pub(crate) fn pool_bytes(&self) -> u64 {
        match self.engine {
            EngineKind::PioBTree => self
                .buffer_pool_bytes
                .saturating_sub(self.pio.opq_bytes.unwrap_or(0)),
            _ => self.buffer_pool_bytes,
        }
    }
    /// The device.
    pub fn get_device(&self) -> &DeviceSpec {
        &self.device
    }
    /// B+-tree sub-options.
    pub fn get_btree(&self) -> &BTreeOptions {
        &self.btree
    }

    /// FD-tree sub-options.
    pub fn get_fdtree(&self) -> &FdTreeOptions {
        &self.fdtree
    }

    /// LSM-tree sub-options.
    pub fn get_lsm(&self) -> &LsmOptions {
        &self.lsm
    }

    /// PIO B-tree sub-options.
    pub fn get_pio(&self) -> &PioOptions {
        &self.pio
    }

    /// Check what does not depend on the engine, and the options of the chosen engine.
    pub(crate) fn validate(&self) -> Result<()> {
        crate::io::check_page_size(self.page_size)?;
        if self.checkpoint_wal_bytes < self.page_size as u64 * 4 {
            return Err(Error::InvalidOptions(format!(
                "checkpoint_wal_bytes {} is below four pages",
                self.checkpoint_wal_bytes
            )));
        }
        // Below one half, bulk-loaded nodes would break the B+-tree's occupancy invariant.
        if !(0.5..=1.0).contains(&self.btree.bulk_fill) {
            return Err(Error::InvalidOptions(format!(
                "btree bulk_fill {} must be within 0.5..=1.0",
                self.btree.bulk_fill
            )));
        }
        match &self.device {
            DeviceSpec::SimulatedSsd(cfg) => cfg.validate(self.page_size)?,
            DeviceSpec::RawNand(cfg) => {
                cfg.validate()?;
                if !matches!(self.engine, EngineKind::IplBTree | EngineKind::DiplBTree) {
                    return Err(Error::InvalidOptions(format!(
                        "device RawNand is for the IPL and d-IPL B+-trees, not {} (use \
                         SimulatedSsd for an FTL over simulated NAND)",
                        self.engine.name()
                    )));
                }
            }
            _ => {}
        }
        if self.engine == EngineKind::FdTree {
            crate::engine::fdtree::validate(self)?;
        }
        if self.engine == EngineKind::Lsm {
            crate::engine::lsm::validate(self)?;
        }
        if self.engine == EngineKind::PioBTree {
            crate::engine::pio::validate(self)?;
        }
        if self.engine == EngineKind::Bftl {
            crate::engine::bftl::validate(self)?;
        }
        if matches!(self.engine, EngineKind::IplBTree | EngineKind::DiplBTree) {
            crate::engine::ipl::validate(self)?;
        }
        Ok(())
    }
}
