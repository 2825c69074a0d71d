//! The experiments of the d-IPL reproduction: IPL and d-IPL on the raw NAND simulator
//! (inserts, searches before and after a global cleansing, insert:delete mixes, node sizes)
//! and BFTL over three FTLs on a simulated SSD; [`run`] runs them and writes
//! `repro-dipl.json`.

use super::paper::paper_minutes;
use super::{
    find, DiplRepro, DiplReproArgs, GhostRecord, Index, InsertRecord, MixRecord, NodeSizeRecord,
    SearchRecord, Table6Record, NAND_BLOCKS, PAGE, PAGES_PER_BLOCK,
};
use anyhow::{Context, Result};
use flashix::experiment::InPageTree;
use flashix::io::{MemDevice, MemVfs};
use flashix::sim::{FtlKind, NandConfig, SimSsd, SimSsdConfig};
use flashix::testing::Rng;
use flashix::{
    BftlOptions, Db, DeviceSpec, DiplOptions, EngineKind, IplOptions, Options, Stats, Storage,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;
use std::sync::Arc;

struct Tree(InPageTree);

impl Tree {
    fn new(index: Index, node_bytes: u64, frames: u32, ipl_log: Option<u64>) -> Result<Tree> {
        let storage = Storage {
            device: Box::new(MemDevice::new(PAGE)),
            vfs: Arc::new(MemVfs::new()),
        };
        let base = Options::new(match index {
            Index::Ipl => EngineKind::IplBTree,
            Index::Dipl => EngineKind::DiplBTree,
        })
        .page_size(PAGE)
        .device(flashix::DeviceSpec::Memory)
        // No checkpoint during a run: the paper's index has none.
        .checkpoint_wal_bytes(1 << 40);
        let opts = match index {
            Index::Ipl => base.ipl(IplOptions {
                node_bytes,
                buffer_frames: Some(frames),
                nand_blocks: NAND_BLOCKS,
                pages_per_block: PAGES_PER_BLOCK,
                log_area_bytes: ipl_log.unwrap_or(IplOptions::default().log_area_bytes),
            }),
            Index::Dipl => base.dipl(DiplOptions {
                node_bytes,
                buffer_frames: Some(frames),
                nand_blocks: NAND_BLOCKS,
                pages_per_block: PAGES_PER_BLOCK,
            }),
        };
        Ok(Tree(InPageTree::create(storage, opts)?))
    }

    fn engine(&mut self) -> &mut InPageTree {
        &mut self.0
    }

    fn reset(&mut self) {
        self.0.reset_counters();
    }

    fn global_cleansing(&mut self) -> Result<()> {
        Ok(self.0.global_cleansing()?)
    }
}

/// An engine counter; a name the engine does not report is a bug here, not a zero.
fn c(s: &Stats, name: &str) -> u64 {
    match s.engine_counters.get(name) {
        Some(&v) => v,
        None => panic!("{}: no counter {name:?}", s.engine),
    }
}

/// A random permutation of 1..=n.
fn permutation(n: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    let mut v: Vec<u64> = (1..=n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

fn bar(quiet: bool, len: u64, msg: String) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:28} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg);
    pb
}

fn insert_all(t: &mut Tree, keys: &[u64], pb: &ProgressBar) -> Result<()> {
    for (i, &k) in keys.iter().enumerate() {
        t.engine().insert(k, k)?;
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    Ok(())
}

fn insert_record(index: Index, frames: u32, s: &Stats, seconds: f64, inserts: u64) -> InsertRecord {
    let cleansings = match index {
        Index::Ipl => c(s, "block_merges"),
        Index::Dipl => c(s, "block_cleansings"),
    };
    InsertRecord {
        index,
        buffer_frames: frames,
        reads: c(s, "nand_page_reads"),
        writes: c(s, "nand_page_programs"),
        erases: c(s, "nand_erases") + c(s, "blocks_pending_erase"),
        node_splits: c(s, "node_splits"),
        block_splits: c(s, "block_splits"),
        block_cleansings: cleansings,
        write_amplification: c(s, "write_amplification_milli") as f64 / 1000.0,
        write_amplification_per_insert: c(s, "nand_page_programs") as f64 * PAGE as f64
            / (inserts.max(1) as f64 * 8192.0),
        node_reads: c(s, "node_reads"),
        node_writes: c(s, "node_writes"),
        blocks_in_use: c(s, "blocks_in_use"),
        height: c(s, "height"),
        sim_time_us: c(s, "nand_time_us"),
        seconds,
    }
}

fn searches(t: &mut Tree, keys: &[u64], quiet: bool, msg: String) -> Result<u64> {
    t.reset();
    let pb = bar(quiet, keys.len() as u64, msg);
    for (i, &k) in keys.iter().enumerate() {
        if t.engine().get(k)?.is_none() {
            anyhow::bail!("key {k} not found");
        }
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    Ok(c(&t.engine().stats(), "nand_page_reads"))
}

type InsertOutcome = (InsertRecord, Option<GhostRecord>, Option<SearchRecord>);

/// One index at one buffer size: the inserts, then the searches before and after a
/// global cleansing.
fn insert_and_search(
    a: &DiplReproArgs,
    index: Index,
    frames: u32,
    keys: &[u64],
    search_keys: &[u64],
) -> Result<InsertOutcome> {
    let n = keys.len() as u64;
    let t0 = std::time::Instant::now();
    let mut t = Tree::new(index, 8192, frames, a.ipl_log_area)?;
    t.reset();
    let pb = bar(
        a.quiet,
        n,
        format!("insert {} {frames} frames", index.name()),
    );
    insert_all(&mut t, keys, &pb)?;
    let s = t.engine().stats();
    let rec = insert_record(index, frames, &s, t0.elapsed().as_secs_f64(), n);
    let ghosts = (index == Index::Dipl).then(|| {
        let blocks = c(&s, "blocks_in_use").max(1);
        GhostRecord {
            buffer_frames: frames,
            average_ghosts_per_block: c(&s, "ghost_nodes") as f64 / blocks as f64,
            max_ghosts_per_block: c(&s, "max_ghosts_per_block"),
            ghosts_split_again: c(&s, "ghosts_split_again"),
            ghosts_created: c(&s, "ghost_nodes_created"),
        }
    });
    if search_keys.is_empty() {
        return Ok((rec, ghosts, None));
    }
    let reads = searches(
        &mut t,
        search_keys,
        a.quiet,
        format!("search {} {frames}", index.name()),
    )?;
    t.reset();
    t.global_cleansing()?;
    let g = t.engine().stats();
    let after = searches(
        &mut t,
        search_keys,
        a.quiet,
        format!("search {} {frames} (R)", index.name()),
    )?;
    let search = SearchRecord {
        index,
        buffer_frames: frames,
        reads,
        reads_after_global_cleansing: after,
        cleansing_reads: c(&g, "nand_page_reads"),
        cleansing_writes: c(&g, "nand_page_programs"),
        cleansing_erases: c(&g, "nand_erases") + c(&g, "blocks_pending_erase"),
    };
    Ok((rec, ghosts, Some(search)))
}

/// Table 3: a million inserts with `n * del / ins` deletions of inserted keys, each step
/// a deletion with probability (deletions left) / (steps left).
fn mix(
    a: &DiplReproArgs,
    index: Index,
    ratio: &str,
    ins: u64,
    del: u64,
    keys: &[u64],
) -> Result<MixRecord> {
    let n = keys.len() as u64;
    let deletes = n * del / ins;
    let mut t = Tree::new(index, 8192, 500, a.ipl_log_area)?;
    t.reset();
    let mut rng = Rng::new(a.seed ^ ins);
    let mut live: Vec<u64> = Vec::new();
    let (mut next, mut left_del) = (0usize, deletes);
    let total = n + deletes;
    let pb = bar(a.quiet, total, format!("mix {ratio} {}", index.name()));
    for step in 0..total {
        let left = total - step;
        let delete =
            left_del > 0 && !live.is_empty() && (next == keys.len() || rng.below(left) < left_del);
        if delete {
            let i = rng.below(live.len() as u64) as usize;
            let k = live.swap_remove(i);
            t.engine().delete(k)?;
            left_del -= 1;
        } else if next < keys.len() {
            t.engine().insert(keys[next], keys[next])?;
            live.push(keys[next]);
            next += 1;
        }
        if step % 4096 == 0 {
            pb.set_position(step);
        }
    }
    pb.finish_and_clear();
    let s = t.engine().stats();
    Ok(MixRecord {
        index,
        ratio: ratio.to_string(),
        inserts: n,
        deletes,
        reads: c(&s, "nand_page_reads"),
        writes: c(&s, "nand_page_programs"),
        erases: c(&s, "nand_erases") + c(&s, "blocks_pending_erase"),
        blocks: c(&s, "blocks_in_use"),
    })
}

/// Run every experiment and write `OUT/repro-dipl.json`.
pub fn run(a: &DiplReproArgs) -> Result<DiplRepro> {
    let start = std::time::Instant::now();
    let a = &a.resolved();
    let n = a.keys;
    let keys = permutation(n, a.seed);
    let search_keys: Vec<u64> = {
        let mut rng = Rng::new(a.seed ^ 0x5EA5C4);
        (0..a.searches).map(|_| 1 + rng.below(n)).collect()
    };
    let mut out = DiplRepro {
        keys: n,
        searches: a.searches,
        insert: Vec::new(),
        search: Vec::new(),
        mix: Vec::new(),
        ghosts: None,
        node_size: Vec::new(),
        table6: Vec::new(),
        quick: a.quick,
        seconds: 0.0,
        claims: Vec::new(),
    };
    if a.only_table6 {
        out.table6 = table6(a, &keys, None)?;
        return finish(out, a, start);
    }
    // Fig. 12, Tables 1, 2, 4; Fig. 13 on the same indexes. IPL and d-IPL run side by
    // side on two threads (independent simulated devices).
    let big = a.frames.iter().copied().max().unwrap_or(500);
    for &frames in &a.frames {
        let (ri, rd) = std::thread::scope(|sc| {
            let h = sc.spawn(|| insert_and_search(a, Index::Ipl, frames, &keys, &search_keys));
            let d = insert_and_search(a, Index::Dipl, frames, &keys, &search_keys);
            let i = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the IPL run panicked")));
            (i, d)
        });
        for (ins, ghosts, search) in [ri?, rd?] {
            out.insert.push(ins);
            if frames == big && ghosts.is_some() {
                out.ghosts = ghosts;
            }
            out.search.extend(search);
        }
    }
    if a.only_insert {
        return finish(out, a, start);
    }
    // Table 3: insert:delete mixes at 500 frames, IPL and d-IPL side by side.
    for (ratio, ins, del) in [("5:5", 5u64, 5u64), ("7:3", 7, 3), ("9:1", 9, 1)] {
        let (ri, rd) = std::thread::scope(|sc| {
            let h = sc.spawn(|| mix(a, Index::Ipl, ratio, ins, del, &keys));
            let d = mix(a, Index::Dipl, ratio, ins, del, &keys);
            let i = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the IPL run panicked")));
            (i, d)
        });
        out.mix.push(ri?);
        out.mix.push(rd?);
    }
    // Table 5: node sizes, 800 KB of buffer for the paper's million keys (scaled with
    // the keys), half the keys.
    let half = permutation(n / 2, a.seed ^ 5);
    let buffer = (800 * 1024 * n / 1_000_000).max(8 * 8192);
    for node in [2048u64, 4096, 8192] {
        let frames = (buffer / node) as u32;
        let mut t = Tree::new(Index::Dipl, node, frames, None)?;
        t.reset();
        let pb = bar(
            a.quiet,
            half.len() as u64,
            format!("d-IPL {} KiB nodes", node / 1024),
        );
        insert_all(&mut t, &half, &pb)?;
        let s = t.engine().stats();
        out.node_size.push(NodeSizeRecord {
            node_bytes: node,
            buffer_frames: frames,
            fanout_internal: (node - 32) / 12,
            fanout_leaf: (node - 32) / 16,
            height: c(&s, "height"),
            nodes_read: c(&s, "node_reads"),
            nodes_written: c(&s, "node_writes"),
            node_splits: c(&s, "node_splits"),
            pages_read: c(&s, "nand_page_reads"),
            pages_written: c(&s, "nand_page_programs"),
            block_splits: c(&s, "block_splits"),
            block_cleansings: c(&s, "block_cleansings"),
            blocks_erased: c(&s, "nand_erases") + c(&s, "blocks_pending_erase"),
            blocks_in_use: c(&s, "blocks_in_use"),
        });
    }
    // The paper's d-IPL row is at 100 frames, its smallest buffer.
    let smallest = a.frames.iter().copied().min().unwrap_or(100);
    let dipl100 = find(&out, Index::Dipl, smallest).cloned();
    out.table6 = table6(a, &keys, dipl100)?;
    finish(out, a, start)
}

/// Time the run, check the paper's claims and write `OUT/repro-dipl.json`.
fn finish(mut out: DiplRepro, a: &DiplReproArgs, start: std::time::Instant) -> Result<DiplRepro> {
    out.seconds = start.elapsed().as_secs_f64();
    out.claims = super::paper::check(&out);
    save(&out, &a.out)?;
    Ok(out)
}

/// Table 6: BFTL over FMAX, FAST and the page-level FTL (two at a time on two threads), and
/// d-IPL at 100 frames (`dipl100` when the insert runs made it).
fn table6(
    a: &DiplReproArgs,
    keys: &[u64],
    dipl100: Option<InsertRecord>,
) -> Result<Vec<Table6Record>> {
    let (fmax, fast) = std::thread::scope(|sc| {
        let h = sc.spawn(|| bftl_run(a, FtlKind::Block, keys));
        let f = bftl_run(a, FtlKind::Fast, keys);
        let b = h
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the BFTL run over FMAX panicked")));
        (b, f)
    });
    let (page, dipl) = std::thread::scope(|sc| {
        let h = sc.spawn(|| bftl_run(a, FtlKind::Page, keys));
        let d = match dipl100 {
            Some(r) => Ok(r),
            None => {
                let smallest = a.frames.iter().copied().min().unwrap_or(100);
                insert_and_search(a, Index::Dipl, smallest, keys, &[]).map(|x| x.0)
            }
        };
        let p = h
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the BFTL run over the page FTL panicked")));
        (p, d)
    });
    let d = dipl?;
    let dipl = Table6Record {
        index: "dipl".into(),
        ftl: "raw NAND".into(),
        reads: d.reads,
        writes: d.writes,
        erases: d.erases,
        elapsed_minutes: paper_minutes(d.reads, d.writes, d.erases),
        sim_time_minutes: d.sim_time_us as f64 / 60e6,
        space_blocks: d.blocks_in_use,
        host_reads: 0,
        host_writes: 0,
        gc_page_copies: 0,
        merges: 0,
        compactions: 0,
        commits: 0,
        node_splits: d.node_splits,
        live_pages: 0,
        pages_high_water: 0,
        c: 0,
        seconds: d.seconds,
    };
    Ok(vec![fmax?, fast?, page?, dipl])
}

/// One BFTL run of Table 6 over `ftl`.
fn bftl_run(a: &DiplReproArgs, ftl: FtlKind, keys: &[u64]) -> Result<Table6Record> {
    let t0 = std::time::Instant::now();
    let cfg = SimSsdConfig {
        nand: NandConfig {
            page_bytes: PAGE,
            pages_per_block: PAGES_PER_BLOCK,
            blocks: a.bftl_blocks,
            ..NandConfig::default()
        },
        ftl,
        over_provisioning: 0.3,
        ..SimSsdConfig::default()
    };
    let ssd = SimSsd::create(Box::new(MemDevice::new(PAGE)), &cfg, PAGE)?;
    let storage = Storage {
        device: Box::new(ssd),
        vfs: Arc::new(MemVfs::new()),
    };
    let opts = Options::new(EngineKind::Bftl)
        .page_size(PAGE)
        .buffer_pool_bytes(a.bftl_pool_pages * PAGE as u64)
        .device(DeviceSpec::SimulatedSsd(cfg))
        // No checkpoint during the run: the paper's BFTL has none.
        .checkpoint_wal_bytes(1 << 40)
        .bftl(BftlOptions {
            node_bytes: 8192,
            reservation_units: None,
            c: a.bftl_c,
        });
    let db = Db::create_on(storage, opts)?;
    let base = db.stats().device.flash;
    let pb = bar(a.quiet, keys.len() as u64, format!("BFTL over {ftl}"));
    for (i, &k) in keys.iter().enumerate() {
        db.insert(k, k)?;
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
    }
    pb.finish_and_clear();
    let s = db.stats();
    let f = |name: &str| {
        s.device.flash.get(name).copied().unwrap_or(0) - base.get(name).copied().unwrap_or(0)
    };
    let (reads, writes, erases) = (f("flash_reads"), f("flash_programs"), f("erases"));
    let live = c(&s, "live_pages");
    Ok(Table6Record {
        index: "bftl".into(),
        ftl: match ftl {
            FtlKind::Block => "block (FMAX)".into(),
            k => k.name().into(),
        },
        reads,
        writes,
        erases,
        elapsed_minutes: paper_minutes(reads, writes, erases),
        sim_time_minutes: f("sim_time_us") as f64 / 60e6,
        space_blocks: live.div_ceil(PAGES_PER_BLOCK as u64),
        host_reads: f("host_reads"),
        host_writes: f("host_writes"),
        gc_page_copies: f("gc_page_copies"),
        merges: f("merges"),
        compactions: c(&s, "compactions"),
        commits: c(&s, "commits"),
        node_splits: c(&s, "node_splits"),
        live_pages: live,
        pages_high_water: c(&s, "pages_high_water"),
        c: c(&s, "c"),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

fn save(r: &DiplRepro, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = dir.join("repro-dipl.json");
    let json = serde_json::to_string_pretty(r)?;
    std::fs::write(&p, json).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repro::dipl::{print, BFTL_POOL_PAGES};

    #[test]
    fn a_small_run_writes_every_table_to_the_json() {
        let dir = tempfile::tempdir().unwrap();
        let a = DiplReproArgs {
            out: dir.path().to_path_buf(),
            keys: 3000,
            searches: 500,
            frames: vec![8, 16],
            seed: 1,
            quick: false,
            paper: false,
            quiet: true,
            ipl_log_area: None,
            only_insert: false,
            only_table6: false,
            bftl_blocks: 64,
            bftl_c: None,
            bftl_pool_pages: BFTL_POOL_PAGES,
        };
        let r = run(&a).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("repro-dipl.json")).unwrap())
                .unwrap();
        let insert = v["insert"].as_array().unwrap();
        assert_eq!(insert.len(), 4);
        for rec in insert {
            for f in [
                "index",
                "buffer_frames",
                "reads",
                "writes",
                "erases",
                "node_splits",
                "block_splits",
                "block_cleansings",
                "write_amplification",
            ] {
                assert!(rec.get(f).is_some(), "{f} missing");
            }
        }
        // d-IPL writes less than IPL and never splits blocks in IPL.
        let ipl = find(&r, Index::Ipl, 8).unwrap();
        let dipl = find(&r, Index::Dipl, 8).unwrap();
        assert!(
            dipl.writes < ipl.writes,
            "{} vs {}",
            dipl.writes,
            ipl.writes
        );
        assert_eq!(ipl.block_splits, 0);
        assert!(ipl.node_splits > 0 && dipl.node_splits > 0);
        assert_eq!(r.search.len(), 4);
        assert_eq!(r.mix.len(), 6);
        assert_eq!(r.node_size.len(), 3);
        assert!(r.ghosts.is_some());
        for s in &r.search {
            assert!(s.reads_after_global_cleansing <= s.reads, "{s:?}");
        }
        // Table 6: BFTL over three FTLs and d-IPL (run at 100 frames, not among 8, 16).
        let t6 = v["table6"].as_array().unwrap();
        assert_eq!(t6.len(), 4);
        for (rec, (index, ftl)) in t6.iter().zip([
            ("bftl", "block (FMAX)"),
            ("bftl", "fast"),
            ("bftl", "page"),
            ("dipl", "raw NAND"),
        ]) {
            assert_eq!(rec["index"], index);
            assert_eq!(rec["ftl"], ftl);
            assert!(rec["reads"].as_u64().unwrap() > 0, "{rec}");
            assert!(rec["writes"].as_u64().unwrap() > 0, "{rec}");
        }
        for x in r.table6.iter().filter(|x| x.index == "bftl") {
            // Every host write is a flash program; the FTL may add copies.
            assert!(x.writes >= x.host_writes && x.host_writes > 0, "{x:?}");
            assert!(x.compactions > 0 && x.node_splits > 0, "{x:?}");
        }
        print(&r);
    }
}
