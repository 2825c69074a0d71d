//! `flashix load DIR --engine NAME`: standard input (a dump, [`super::dump`]) into a new
//! index of any engine. It creates the index and refuses a directory that holds anything.
//!
//! # Load
//!
//! Entries go in by `Db::bulk_insert` in batches of [`LOAD_BATCH`] while the input's keys
//! strictly ascend (as a dump's do): every engine then builds its structure from sorted
//! runs. From the first key that does not ascend the rest go in one `insert` at a time (an
//! upsert: for a key given twice the last value wins, as with `bulk_insert`). Malformed
//! input stops the load with the line number (text) or byte offset (binary), and the new
//! index is removed: a load leaves a whole index or none.

use super::dump::read_input;
use super::progress;
use crate::units::parse_size;
use anyhow::{Context, Result};
use flashix::{Db, DeviceSpec, EngineKind, FdTreeOptions, LsmOptions, Options, PioOptions};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Entries per `bulk_insert` call of a load.
pub const LOAD_BATCH: usize = 65_536;

/// The long help of `flashix load`: the input forms.
pub const LOAD_HELP: &str = "\
INPUT
  text    one `key value` line per entry, decimal u64 (what `flashix dump` writes);
          blank lines are skipped; a malformed line stops the load with its number
  binary  \"FLASHIXD\", u32 version 1, u32 0, then key,value u64 pairs, then u64 count
          and u32 crc32c of the pairs; all little-endian (`flashix dump --binary`)
  The form is detected by the magic. Input whose keys ascend (a dump's) goes in by
  bulk_insert in batches of 65,536; from the first key that does not, one insert at a
  time (the last value of a repeated key wins). On any error the new index is removed.";

/// `flashix load DIR --engine NAME`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// The new index's directory (absent or empty).
    pub dir: PathBuf,
    /// The engine: btree, lsm, fdtree, pio, bulk, bftl, latree, fbx, ipl, dipl.
    #[arg(long)]
    pub engine: String,
    /// Read the binary form; without it the form is detected by its magic.
    #[arg(long)]
    pub binary: bool,
    /// Memory budget of the index (its buffer pool), bytes or with a unit [default: the
    /// library's, 16 MiB].
    #[arg(long = "buffer-pool")]
    pub buffer_pool: Option<String>,
    /// Page (node) size in bytes [default: the engine's: 4096, 2048 for ipl and dipl].
    #[arg(long = "page-size")]
    pub page_size: Option<String>,
    /// FD-tree and LSM size ratio k [default: the cost model's].
    #[arg(long)]
    pub k: Option<u32>,
    /// Turn off the FD-tree's deamortized merges and the LSM-tree's rolling ones.
    #[arg(long = "no-deamortize")]
    pub no_deamortize: bool,
    /// PIO B-tree OPQ size [default: the cost model's].
    #[arg(long = "pio-opq")]
    pub pio_opq: Option<String>,
    /// PIO B-tree leaf size in segments [default: the cost model's].
    #[arg(long = "pio-leaf-segments")]
    pub pio_leaf_segments: Option<u32>,
    /// Use buffered I/O instead of O_DIRECT (engines on a file).
    #[arg(long = "no-direct-io")]
    pub no_direct_io: bool,
}

impl LoadArgs {
    /// The new index's options.
    pub fn options(&self) -> Result<Options> {
        let kind: EngineKind = self.engine.parse().context("--engine")?;
        let mut o = Options::new(kind);
        if !matches!(kind, EngineKind::IplBTree | EngineKind::DiplBTree) {
            o = o.device(DeviceSpec::File {
                direct_io: !self.no_direct_io,
            });
        }
        if let Some(b) = &self.buffer_pool {
            o = o.buffer_pool_bytes(parse_size(b).context("--buffer-pool")?);
        }
        if let Some(p) = &self.page_size {
            let p = parse_size(p).context("--page-size")?;
            o = o.page_size(usize::try_from(p).context("--page-size: too large")?);
        }
        Ok(o.fdtree(FdTreeOptions {
            k: self.k,
            deamortize: !self.no_deamortize,
            ..FdTreeOptions::default()
        })
        .lsm(LsmOptions {
            k: self.k,
            deamortize: !self.no_deamortize,
            ..LsmOptions::default()
        })
        .pio(PioOptions {
            leaf_segments: self.pio_leaf_segments,
            opq_bytes: self
                .pio_opq
                .as_deref()
                .map(parse_size)
                .transpose()
                .context("--pio-opq")?,
            ..PioOptions::default()
        }))
    }
}

/// Run `flashix load`: standard input into a new index.
pub fn run(a: &LoadArgs) -> Result<()> {
    let opts = a.options()?;
    let stdin = std::io::stdin();
    let n = load_from(&a.dir, opts, &mut stdin.lock(), a.binary)?;
    eprintln!("loaded {n} entries into {}", a.dir.display());
    Ok(())
}

/// Load `input` into a new index in `dir`; on any error the new index is removed. Returns
/// the number of entries read.
pub fn load_from(dir: &Path, opts: Options, input: &mut dyn BufRead, binary: bool) -> Result<u64> {
    let existed = dir.exists();
    let db = Db::create(dir, opts).with_context(|| {
        format!(
            "creating the index in {} (load makes a new index; it must be absent or empty)",
            dir.display()
        )
    })?;
    let mut loader = Loader::new(db);
    let pb = progress(0, "load", "entries");
    let r = read_input(input, binary, &mut |k, v| {
        loader.push(k, v)?;
        if loader.count % 65_536 == 0 {
            pb.set_position(loader.count);
        }
        Ok(())
    })
    .and_then(|()| loader.finish());
    pb.finish_and_clear();
    match r {
        Ok(n) => Ok(n),
        Err(e) => {
            // Remove what this load created (the directory was absent or empty).
            if existed {
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for e in entries.flatten() {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            } else {
                let _ = std::fs::remove_dir_all(dir);
            }
            Err(e.context(format!(
                "loading {} (nothing was kept: the new index was removed)",
                dir.display()
            )))
        }
    }
}

/// Batches sorted input into `bulk_insert`; inserts one by one once it is not sorted.
struct Loader {
    db: Option<Db>,
    batch: Vec<(u64, u64)>,
    last: Option<u64>,
    sorted: bool,
    count: u64,
}

impl Loader {
    fn new(db: Db) -> Loader {
        Loader {
            db: Some(db),
            batch: Vec::with_capacity(LOAD_BATCH),
            last: None,
            sorted: true,
            count: 0,
        }
    }

    fn db(&mut self) -> Result<&mut Db> {
        self.db.as_mut().context("the index was closed")
    }

    fn push(&mut self, k: u64, v: u64) -> Result<()> {
        self.count += 1;
        if self.sorted && self.last.is_some_and(|l| k <= l) {
            self.sorted = false;
            eprintln!(
                "entry {}: key {k} does not ascend; the rest is inserted one entry at a time",
                self.count
            );
            self.flush_batch()?;
        }
        self.last = Some(k);
        if self.sorted {
            self.batch.push((k, v));
            if self.batch.len() >= LOAD_BATCH {
                self.flush_batch()?;
            }
        } else {
            self.db()?.insert(k, v)?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<()> {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.db()?.bulk_insert(&batch)?;
            self.batch = batch;
            self.batch.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<u64> {
        self.flush_batch()?;
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        Ok(self.count)
    }
}
