//! The `flashix advise` command: arguments, the ranking tables, and `--verify` (a short
//! `flashix bench` of the top engines, in process, beside the prediction).

use crate::models::advise::{
    advise, Device, Input, Mix, Prediction, Ranking, CPU_US_PER_KEY, CPU_US_PER_OP,
};
use crate::output::report::Record;
use crate::probe::{load_profile, DeviceProfile};
use crate::runner::{run_bench, BenchConfig, Scale};
use crate::units::{format_size, parse_size};
use crate::workload::Workload;
use anyhow::{bail, Context, Result};
use flashix::EngineKind;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Options of `flashix advise`.
#[derive(clap::Args, Debug, Clone)]
pub struct AdviseArgs {
    /// Device profile written by `flashix probe` (or `flashix probe --sim PROFILE --out FILE`).
    #[arg(long, default_value = "./bench-out/device-profile.json")]
    pub profile: PathBuf,
    /// Entries the index is expected to hold [default: the quick scale's 400,000].
    #[arg(long, default_value_t = 400_000)]
    pub entries: u64,
    /// Memory budget: the buffer pool and every structure taken from it (bytes, or with a
    /// unit: 2MiB, 16M) [default: the quick scale's].
    #[arg(long, default_value = "2MiB")]
    pub budget: String,
    /// Page (node) size.
    #[arg(long = "page-size", default_value = "4096")]
    pub page_size: String,
    /// Comma-separated named workloads of `flashix bench` (o-search, w-insert, range-1000,
    /// tpcc, bulk-insert-100, range-delete-100, mix-S, ...).
    #[arg(long, conflicts_with = "mix")]
    pub workload: Option<String>,
    /// An operation mix: search=S,insert=S,delete=S,update=S,range=S:LEN,bulk=S:KEYS,
    /// range-delete=S:LEN (shares are normalised).
    #[arg(long)]
    pub mix: Option<String>,
    /// A ranking for every workload of the quick suite (also the default without
    /// --workload or --mix).
    #[arg(long = "all-workloads", conflicts_with_all = ["workload", "mix"])]
    pub all_workloads: bool,
    /// Run a short `flashix bench` of the top engines of each named workload on this
    /// machine's disk and print the measurement beside the prediction.
    #[arg(long)]
    pub verify: bool,
    /// Engines --verify measures per workload.
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Measured operations per workload of --verify (the quick scale's; the bench stretches
    /// write workloads on buffered engines so their buffers turn over).
    #[arg(long = "verify-ops", default_value_t = 10_000)]
    pub verify_ops: u64,
    /// Where --verify builds its indexes.
    #[arg(long, default_value = "./bench-out/advise/data")]
    pub dir: PathBuf,
    /// Where --verify writes each workload's results.json.
    #[arg(long, default_value = "./bench-out/advise")]
    pub out: PathBuf,
}

/// One ranking asked for: a label, the named workload it came from (if any), the mix.
#[derive(Debug, Clone)]
pub struct Case {
    pub label: String,
    pub workload: Option<Workload>,
    pub mix: Mix,
}

impl AdviseArgs {
    /// The rankings asked for: the named workloads, the mix, or the quick suite.
    pub fn cases(&self) -> Result<Vec<Case>> {
        if let Some(m) = &self.mix {
            let mix = Mix::parse(m)?;
            return Ok(vec![Case {
                label: "mix".into(),
                workload: None,
                mix,
            }]);
        }
        let workloads = match &self.workload {
            Some(w) if !self.all_workloads => Workload::parse_list(w).context("--workload")?,
            _ => Workload::DEFAULT.to_vec(),
        };
        workloads
            .into_iter()
            .map(|w| {
                Ok(Case {
                    label: w.name(),
                    workload: Some(w),
                    mix: Mix::from_workload(w)?,
                })
            })
            .collect()
    }

    fn page(&self) -> Result<usize> {
        let p = parse_size(&self.page_size).context("--page-size")?;
        let p = usize::try_from(p).context("--page-size: too large")?;
        flashix::io::check_page_size(p)?;
        Ok(p)
    }
}

/// `flashix advise`: load the profile, print a ranking per case, and with `--verify`
/// measure the top engines.
pub fn run(a: &AdviseArgs) -> Result<()> {
    if !a.profile.exists() {
        bail!(
            "no device profile at {}: run `flashix probe` first, or pass --profile FILE",
            a.profile.display()
        );
    }
    let profile = load_profile(&a.profile)?;
    let page = a.page()?;
    let budget = parse_size(&a.budget).context("--budget")?;
    let device = Device::new(&profile, page)?;
    let cases = a.cases()?;
    print!(
        "{}",
        header(&a.profile, &profile, &device, a.entries, budget)
    );
    let mut rankings = Vec::new();
    for case in &cases {
        let input = Input {
            device: device.clone(),
            entries: a.entries,
            budget,
            mix: case.mix,
            tuned_for: None,
        };
        let r = advise(&input)?;
        print!("\n{}", render(case, &r));
        rankings.push(r);
    }
    if a.verify {
        verify(a, &cases, &rankings, &device, budget)?;
    }
    Ok(())
}

/// The inputs: the index, the device figures the models use, the CPU constants.
pub fn header(path: &Path, p: &DeviceProfile, d: &Device, entries: u64, budget: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "flashix advise: {entries} entries, budget {}, {} pages",
        format_size(budget),
        format_size(d.page as u64)
    );
    let _ = writeln!(
        o,
        "device {} ({}, measured {}): page read {:.1} us (QD1), page write {:.1} us, \
         sequential {:.2} / {:.2} us per page read / written, psync read {:.1} us per page (QD32)",
        path.display(),
        p.backend,
        p.measured_at,
        d.read_us(1.0),
        d.write_us(),
        d.costs.seq_read_page_us(),
        d.costs.seq_write_page_us(),
        d.pio.psync_read_at(f64::INFINITY)
    );
    let _ = writeln!(
        o,
        "cost per operation = device time + {CPU_US_PER_OP} us + {CPU_US_PER_KEY} us per key \
         scanned, bulk-inserted or range-deleted; model: paper = the engine's own cost model, \
         simple = I/O counts of a classic structure, rough = a small model of the paper's \
         cost shape"
    );
    o
}

/// One ranking as a table.
pub fn render(case: &Case, r: &Ranking) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "workload {}: {} (engines tuned for search fraction {:.2})",
        case.label,
        case.mix,
        case.mix.search_fraction()
    );
    let _ = writeln!(
        o,
        "  {:>4}  {:<7} {:<6} {:>10} {:>10} {:>9} {:>9}  parameters",
        "rank", "engine", "model", "us/op", "ops/s", "reads/op", "writes/op"
    );
    for (i, p) in r.ranked.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {:>4}  {:<7} {:<6} {:>10.1} {:>10.0} {:>9.3} {:>9.3}  {}",
            i + 1,
            p.engine.name(),
            p.fidelity.name(),
            p.us_per_op,
            p.ops_per_sec,
            p.cost.reads,
            p.cost.writes,
            p.params
        );
    }
    for (e, why) in &r.excluded {
        let _ = writeln!(o, "  not ranked: {e}: {why}");
    }
    o
}

/// One engine of a verified workload: the prediction and the measurement.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The advice's prediction (at `--entries`).
    pub predicted: Prediction,
    /// The model again at the live entries of the index measured (the bench's aging grows
    /// it past `--entries`, by an engine-dependent amount), with the parameters chosen for
    /// `--entries` as the engine chose them at creation; microseconds per operation.
    pub predicted_live_us: f64,
    pub measured: Record,
}

/// Whether the measured order of `v` (by ops/s, fastest first) is the predicted one.
pub fn order_held(v: &[Verified]) -> bool {
    v.windows(2)
        .all(|w| w[0].measured.ops_per_sec >= w[1].measured.ops_per_sec)
}

/// The verification table of one workload.
pub fn render_verified(label: &str, v: &[Verified]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "verify {label}: predicted at --entries (pred), at the measured index's entries (live), \
         measured (meas); m/p = meas / pred"
    );
    let _ = writeln!(
        o,
        "  {:<7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}  {:>15}  {:>15}",
        "engine",
        "pred us",
        "live us",
        "meas us",
        "pred op/s",
        "meas op/s",
        "m/p",
        "reads/op p|m",
        "writes/op p|m"
    );
    for x in v {
        let meas_us = 1e6 / x.measured.ops_per_sec.max(1e-9);
        let _ = writeln!(
            o,
            "  {:<7} {:>9.1} {:>9.1} {:>9.1} {:>9.0} {:>9.0} {:>6.2}  {:>7.3}|{:<7.3}  {:>7.3}|{:<7.3}",
            x.predicted.engine.name(),
            x.predicted.us_per_op,
            x.predicted_live_us,
            meas_us,
            x.predicted.ops_per_sec,
            x.measured.ops_per_sec,
            meas_us / x.predicted.us_per_op,
            x.predicted.cost.reads,
            x.measured.reads_per_op,
            x.predicted.cost.writes,
            x.measured.writes_per_op
        );
    }
    let mut measured: Vec<&Verified> = v.iter().collect();
    measured.sort_by(|a, b| b.measured.ops_per_sec.total_cmp(&a.measured.ops_per_sec));
    let order: Vec<&str> = measured.iter().map(|x| x.predicted.engine.name()).collect();
    let _ = writeln!(
        o,
        "  measured order {}: the predicted order {}",
        order.join(" > "),
        if order_held(v) {
            "held"
        } else {
            "did not hold"
        }
    );
    o
}

/// `--verify`: for each named workload, a short `flashix bench` (quick scale's preparation,
/// `--verify-ops` operations) of its top engines, tuned for the workload's search share as
/// the advice is, on the directory `--dir`'s device; then the tables and how often the
/// predicted order held.
fn verify(
    a: &AdviseArgs,
    cases: &[Case],
    rankings: &[Ranking],
    device: &Device,
    budget: u64,
) -> Result<()> {
    let mut held = 0;
    let mut best = 0;
    let mut total = 0;
    for (case, r) in cases.iter().zip(rankings) {
        let Some(w) = case.workload else {
            eprintln!(
                "--verify: {} is not a named workload; not measured",
                case.label
            );
            continue;
        };
        let top: Vec<Prediction> = r.ranked.iter().take(a.top.max(1)).cloned().collect();
        let engines: Vec<EngineKind> = top.iter().map(|p| p.engine).collect();
        eprintln!(
            "verify {}: bench of {} ({} ops)",
            case.label,
            engines
                .iter()
                .map(|e| e.name())
                .collect::<Vec<_>>()
                .join(", "),
            a.verify_ops
        );
        let cfg = BenchConfig {
            engines: engines.clone(),
            workloads: vec![w],
            scale: Scale::Quick,
            entries: a.entries,
            ops: a.verify_ops,
            buffer_pool_bytes: budget,
            page_size: device.page,
            search_fraction: case.mix.search_fraction(),
            dir: a.dir.join(&case.label),
            out: a.out.join(&case.label),
            profile: Some(a.profile.clone()),
            verbose: false,
            ..BenchConfig::new()
        };
        let results = run_bench(&cfg).with_context(|| format!("--verify {}", case.label))?;
        let mut v = Vec::new();
        for p in top {
            let rec = results
                .results
                .iter()
                .find(|rec| rec.engine == p.engine.name())
                .with_context(|| format!("--verify: no result for {}", p.engine))?;
            let live = Input {
                device: device.clone(),
                entries: rec.entries.max(1),
                budget,
                mix: case.mix,
                tuned_for: Some(a.entries),
            };
            let predicted_live_us = crate::models::advise::engines::costs(p.engine, &live)?
                .of_mix(&case.mix)
                .us();
            v.push(Verified {
                predicted: p,
                predicted_live_us,
                measured: rec.clone(),
            });
        }
        let fastest = v
            .iter()
            .max_by(|x, y| x.measured.ops_per_sec.total_cmp(&y.measured.ops_per_sec))
            .map(|x| x.predicted.engine);
        total += 1;
        held += usize::from(order_held(&v));
        best += usize::from(fastest == v.first().map(|x| x.predicted.engine));
        print!("\n{}", render_verified(&case.label, &v));
    }
    if total > 0 {
        println!(
            "\nverify summary: the predicted order of the top {} held on {held} of {total} \
             workloads; the predicted best was the measured best of them on {best} of {total}",
            a.top.max(1)
        );
    }
    Ok(())
}
