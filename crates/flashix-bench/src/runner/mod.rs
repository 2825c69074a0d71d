//! The benchmark runner: device profile, preparation of the aged index (once per engine or
//! peer), and the measured phase of each workload on a fresh copy of that image.
//!
//! Fairness: every engine and peer gets the same memory budget, the same data
//! (the same keys bulk-loaded and the same aging inserts), the same operation stream
//! ([`OpStream`], a function of the seed), a fresh directory per engine and a fresh copy of
//! its aged image per workload, and a `sync` ([`Target::flush`]) at the end of the measured
//! phase that is counted in its time. Repeated runs go in rounds over every cell
//! ([`ROUND_RULE`]).
//!
//! [`OpStream`]: crate::workload::OpStream
//! [`Target::flush`]: crate::subjects::Target::flush
//!
//! The runner's files, one concern each:
//!
//! - `config.rs`: the suite's scale, [`BenchConfig`] and its subjects (engines, peers);
//! - `params.rs`: the options an index is created with, and the engine parameters a
//!   result reports;
//! - `profile.rs`: the device profile (loaded, or measured briefly);
//! - `ui.rs`: progress bars and messages on the terminal;
//! - `aging.rs`: preparation of the aged index (AGING_RULE);
//! - `measure.rs`: the measured phase of one cell (BUFFER_RULE, DEVICE_LIMIT_RULE);
//! - `threads.rs`: the threads of a phase, one stream each on the one index, and the
//!   merge of what they measured (THREADS_RULE);
//! - `record.rs`: the record of a cell from what its phase did;
//! - `results.rs`: the median of repeated runs, `results.json` and `report.html`;
//! - this file: [`run_bench`], the suite itself, and the public paths of all of them.

mod aging;
mod calibrate;
mod config;
mod measure;
mod params;
mod profile;
mod record;
mod results;
mod threads;
mod ui;

pub use aging::{
    level_fill, levels_half_full, lowest_merged, prepare, prepare_peer, Prepared,
    AGING_FALLBACK_SHARE, AGING_RULE, AGING_SPLIT_SHARE, PEER_AGING_BATCH, PEER_LOAD_CHUNK,
};
pub use calibrate::{
    calibration, Calibrator, CALIBRATION_BYTES, CALIBRATION_RULE, CALIBRATION_SECONDS,
};
pub use config::{BenchConfig, Scale, Subject};
pub use measure::{
    copy_dir, interval_series, phase_ops, run_workload, BUFFER_MAX_OPS_FACTOR, BUFFER_RULE,
    BUFFER_TURNOVERS, DEVICE_LIMIT_RULE, ENTRY_BYTES, PEER_CHARGED_QUEUE_DEPTH, SERIES_POINTS,
};
pub use params::{ipl_nand_blocks, IPL_ERASE_BLOCK_BYTES, PIO_MAX_SEGMENTS};
pub use profile::device_profile;
pub use record::mean_queue_depth;
pub use results::median_of;
pub use threads::{parse_threads, MAX_THREADS, THREADS_RULE};
pub use ui::Ui;

use crate::output::report::{self, Results, SubjectInfo};
use crate::probe::DeviceProfile;
use crate::units::format_size;
use anyhow::{Context, Result};
use flashix::{DeviceSpec, EngineKind};
use results::{results_of, save_results};
use ui::{say, say_plain};

/// How repeated runs are ordered (`--repeat`), printed with the other rules.
pub const ROUND_RULE: &str = "every engine and peer is prepared first; then the runs go in \
     rounds, each round running every (subject, workload) cell once, so that the R runs of a \
     cell are spread over the whole suite and a drift of the device (a virtual machine's \
     QD1 read latency can move by a good share within minutes) falls on every subject alike; a \
     cell reports its median run";

/// Run every (engine or peer, workload, threads) cell of `cfg` `cfg.repeat` times in
/// rounds ([`ROUND_RULE`]), print the table, and write `out/results.json` and
/// `out/report.html`.
pub fn run_bench(cfg: &BenchConfig) -> Result<Results> {
    cfg.check()?;
    std::fs::create_dir_all(&cfg.out)
        .with_context(|| format!("creating the output directory {}", cfg.out.display()))?;
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("creating the data directory {}", cfg.dir.display()))?;
    if let Some(w) = cfg.scale.warning() {
        say_plain(cfg, &format!("warning: {w}"));
    }
    let profile = device_profile(cfg)?;
    let subjects: Vec<Subject> = cfg
        .engines
        .iter()
        .map(|&e| Subject::Engine(e))
        .chain(cfg.peers.iter().map(|&p| Subject::Peer(p)))
        .collect();
    if cfg.verbose {
        print_header(cfg);
    }
    // The device measured beside every cell (CALIBRATION_RULE): on this machine's disk
    // with O_DIRECT only.
    let calibrator = match cfg.device {
        None | Some(DeviceSpec::File { direct_io: true }) if cfg.direct_io => {
            Calibrator::create(&cfg.dir, cfg.seed)?
        }
        _ => None,
    };
    let cells = subjects.len() as u64
        * cfg.workloads.len() as u64
        * cfg.threads.len() as u64
        * u64::from(cfg.repeat);
    let ui = Ui::new(cfg, cells);
    let infos: Vec<SubjectInfo> = subjects
        .iter()
        .map(|&subject| {
            let info = subject.info(cfg);
            SubjectInfo {
                name: subject.name().to_string(),
                kind: match subject {
                    Subject::Engine(_) => "flashix".into(),
                    Subject::Peer(_) => "peer".into(),
                },
                memory_bound: info.memory_bound,
                page_cache_bypassed: info.page_cache_bypassed,
                commit_model: info.commit_model,
            }
        })
        .collect();
    let prepared = prepare_all(cfg, &ui, &subjects, &profile)?;
    let suite = Suite {
        cfg,
        ui: &ui,
        subjects: &subjects,
        prepared: &prepared,
        profile: &profile,
    };
    let (infos, records) = suite.run_rounds(infos, calibrator)?;
    ui.suite.finish_and_clear();

    let results = results_of(cfg, &profile, &infos, &records);
    let (path, html) = save_results(&results, cfg)?;
    if cfg.verbose {
        println!("{}", crate::output::table::format_table(&results.results));
        println!("results: {}", path.display());
        println!("report:  {}", html.display());
    }
    Ok(results)
}

/// The suite's settings and the rules it follows, on the terminal.
fn print_header(cfg: &BenchConfig) {
    println!(
        "flashix bench (scale {}): {} entries, {} ops/workload, {} keys, page {} B, \
         memory budget {}, {}, seed {}, {} run(s) per cell{}",
        cfg.scale_label(),
        cfg.entries,
        cfg.ops,
        cfg.key_dist,
        cfg.page_size,
        format_size(cfg.buffer_pool_bytes),
        if cfg.direct_io {
            "O_DIRECT"
        } else {
            "buffered I/O"
        },
        cfg.seed,
        cfg.repeat,
        if cfg.single_threaded() {
            String::new()
        } else {
            let t: Vec<String> = cfg.threads.iter().map(u32::to_string).collect();
            format!(", threads {}", t.join(","))
        },
    );
    println!(
        "preparation (PREP_POOL = {}): {AGING_RULE}",
        format_size(cfg.prep_buffer_pool_bytes)
    );
    println!("device limit: {DEVICE_LIMIT_RULE}");
    println!("device limit now: {CALIBRATION_RULE}");
    println!("write buffers: {BUFFER_RULE}");
    if cfg.repeat > 1 {
        println!("repeats: {ROUND_RULE}");
    }
    if !cfg.single_threaded() {
        println!("threads: {THREADS_RULE}");
    }
}

/// Prepare every subject's aged image, once, before any cell runs, so that the repeats
/// can be interleaved (ROUND_RULE): the B+-tree before the other engines (engines whose
/// splits lag take its aging inserts, AGING_RULE), the engines before the peers (subjects
/// lists them so). Preparation is single-threaded whatever `--threads` says.
fn prepare_all(
    cfg: &BenchConfig,
    ui: &Ui,
    subjects: &[Subject],
    profile: &DeviceProfile,
) -> Result<Vec<Prepared>> {
    let btree = Subject::Engine(EngineKind::BTree);
    let mut order: Vec<usize> = (0..subjects.len()).collect();
    order.sort_by_key(|&i| subjects[i] != btree);
    let mut prepared: Vec<Option<Prepared>> = subjects.iter().map(|_| None).collect();
    // Aging inserts of the suite's B+-tree: what engines whose splits lag get too.
    let mut btree_aging: Option<u64> = None;
    for &si in &order {
        let subject = subjects[si];
        ui.suite.set_message(format!("suite: preparing {subject}"));
        let prep = match subject {
            Subject::Engine(e) => prepare(cfg, ui, e, profile, btree_aging)
                .with_context(|| format!("preparing the {e} index"))?,
            Subject::Peer(p) => {
                // The aging inserts of the first flashix engine of the run, all prepared by
                // now (AGING_RULE).
                let first_engine = subjects
                    .iter()
                    .position(|s| matches!(s, Subject::Engine(_)))
                    .and_then(|e| prepared[e].as_ref());
                let aging = first_engine.map_or_else(
                    || (cfg.entries as f64 * AGING_FALLBACK_SHARE).round() as u64,
                    |p| p.aging_inserts,
                );
                prepare_peer(cfg, ui, p, aging)
                    .with_context(|| format!("preparing the {p} store"))?
            }
        };
        if subject == btree {
            btree_aging = Some(prep.aging_inserts);
        }
        prepared[si] = Some(prep);
    }
    // `order` is a permutation of the subjects: every one was prepared.
    prepared
        .into_iter()
        .collect::<Option<_>>()
        .context("a subject was left unprepared")
}

/// The suite's prepared subjects, ready to run their cells.
struct Suite<'a> {
    cfg: &'a BenchConfig,
    ui: &'a Ui,
    subjects: &'a [Subject],
    prepared: &'a [Prepared],
    profile: &'a DeviceProfile,
}

impl Suite<'_> {
    /// Run every cell `cfg.repeat` times in rounds (ROUND_RULE); after the last round of a
    /// subject, its cells' median runs are kept, its directory removed and the results so
    /// far saved. Returns the subjects' infos (how memory was bounded is known once a phase
    /// ran) and the records.
    fn run_rounds(
        &self,
        mut infos: Vec<SubjectInfo>,
        mut calibrator: Option<Calibrator>,
    ) -> Result<(Vec<SubjectInfo>, Vec<report::Record>)> {
        let cfg = self.cfg;
        let mut records = Vec::new();
        // runs[subject][workload][threads]: the cell's runs so far.
        let mut runs: Vec<Vec<Vec<Vec<report::Record>>>> = self
            .subjects
            .iter()
            .map(|_| {
                cfg.workloads
                    .iter()
                    .map(|_| cfg.threads.iter().map(|_| Vec::new()).collect())
                    .collect()
            })
            .collect();
        for round in 0..cfg.repeat {
            let last_round = round + 1 == cfg.repeat;
            for (si, &subject) in self.subjects.iter().enumerate() {
                self.ui.suite.set_message(if cfg.repeat > 1 {
                    format!("suite: {subject}, round {} of {}", round + 1, cfg.repeat)
                } else {
                    format!("suite: {subject}")
                });
                for (wi, &w) in cfg.workloads.iter().enumerate() {
                    for (ti, &threads) in cfg.threads.iter().enumerate() {
                        let rec = run_workload(
                            cfg,
                            self.ui,
                            subject,
                            &self.prepared[si],
                            w,
                            threads,
                            self.profile,
                            calibrator.as_mut(),
                        )
                        .with_context(|| match threads {
                            1 => format!("running {w} on {subject}"),
                            t => format!("running {w} on {subject} with {t} threads"),
                        });
                        self.ui.suite.inc(1);
                        let rec = match rec {
                            Ok(rec) => rec,
                            Err(e) if refused_budget(&e) => {
                                // An engine that cannot honour the budget says so at open
                                // and the cell is left out; the other cells run.
                                say(cfg, self.ui, &format!("not run: {e:#}"));
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        runs[si][wi][ti].push(rec);
                        if !last_round {
                            continue;
                        }
                        let rec = median_of(std::mem::take(&mut runs[si][wi][ti]));
                        say(cfg, self.ui, &summary_line(&rec));
                        infos[si].memory_bound.clone_from(&rec.memory_bound);
                        records.push(rec);
                    }
                }
                if last_round {
                    let subject_dir = cfg.dir.join(subject.name());
                    std::fs::remove_dir_all(&subject_dir)
                        .with_context(|| format!("removing {}", subject_dir.display()))?;
                    // Save what is done so far, so that a failure or an interrupt later in
                    // a long run keeps the finished subjects' results.
                    save_results(&results_of(cfg, self.profile, &infos[..=si], &records), cfg)?;
                }
            }
        }
        Ok((infos, records))
    }
}

/// Whether `e` is an engine's refusal to open within the measured budget
/// (`flashix::Error::InvalidArgument` at open, naming the least budget it needs).
fn refused_budget(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(c.downcast_ref::<flashix::Error>(),
            Some(flashix::Error::InvalidArgument(m)) if m.contains("budget"))
    })
}

/// A cell's summary on the terminal, once its median run is known: the subject, the
/// workload (and the threads, when several ran), throughput, latencies, I/O per
/// operation and the share of the device's limit.
fn summary_line(rec: &report::Record) -> String {
    let threads = match rec.threads {
        1 => String::new(),
        t => format!(", {t} threads"),
    };
    format!(
        "{} {}{threads}: {:.0} ops/s, p50 {:.1} us, p99 {:.1} us, \
         {:.3} reads/op, {:.3} writes/op{}",
        rec.engine,
        rec.workload,
        rec.ops_per_sec,
        rec.latency_us.p50,
        rec.latency_us.p99,
        rec.reads_per_op,
        rec.writes_per_op,
        rec.device_limit
            .as_ref()
            .map(|d| format!(", {:.0}% of the device limit", d.share * 100.0))
            .unwrap_or_default()
            + &rec
                .share_now()
                .map(|s| format!(" ({:.0}% of it now)", s * 100.0))
                .unwrap_or_default()
            + &merge_thread_line(rec)
    )
}

/// The merge thread's use beside a cell's summary, in shares of the phase: busy, of which
/// on the CPU and waiting for its requests.
fn merge_thread_line(rec: &report::Record) -> String {
    let Some(m) = rec.merge_thread else {
        return String::new();
    };
    let phase_us = 1e6 / rec.ops_per_sec.max(1e-9);
    let share = |us: f64| us / phase_us * 100.0;
    format!(
        "; merge thread busy {:.0}% of the phase (CPU {:.0}%, I/O waits {:.0}%)",
        share(m.wall_us_per_op),
        share(m.cpu_us_per_op),
        share(m.io_wait_us_per_op)
    )
}
