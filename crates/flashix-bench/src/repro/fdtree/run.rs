//! The experiments of `flashix repro fdtree` (module doc of [`super`]): one suite of the
//! bench runner per lens and index size, and the deamortization pair.

use super::{
    nand_bytes, paper, Cell, CellId, FdtreeRepro, FdtreeReproArgs, Lens, LensInfo, Measured, Sizes,
};
use crate::output::report::Record;
use crate::repro::common::Frame;
use crate::runner::{run_bench, BenchConfig};
use crate::workload::Workload;
use anyhow::{Context, Result};
use flashix::sim::SsdProfile;
use flashix::{DeviceSpec, EngineKind};

/// The engines of §5 (App. D), the FD-tree first.
const ENGINES: [EngineKind; 4] = [
    EngineKind::FdTree,
    EngineKind::BTree,
    EngineKind::Lsm,
    EngineKind::Bftl,
];

/// Fig. 12's workloads: the paper's O- and W- mixes, the suite's fixed-mix workloads.
const FIG12: [Workload; 7] = Workload::ALL;

/// What a run shares.
struct Ctx<'a> {
    a: &'a FdtreeReproArgs,
    z: Sizes,
    f: Frame,
}

impl Ctx<'_> {
    /// The suite of one lens: `engines` on `workloads` at `entries`.
    #[allow(clippy::too_many_arguments)]
    fn suite(
        &self,
        lens: Lens,
        profile: &std::path::Path,
        name: &str,
        engines: &[EngineKind],
        workloads: Vec<Workload>,
        entries: u64,
        ops: u64,
        deamortize: bool,
    ) -> Result<Vec<Record>> {
        let dir = self.f.data.join(lens.key()).join(name);
        let cfg = BenchConfig {
            engines: engines.to_vec(),
            workloads,
            entries,
            ops,
            buffer_pool_bytes: self.z.budget,
            prep_buffer_pool_bytes: 64 << 20,
            deamortize,
            // The FD-tree paper's LSM baseline searches before a delete (App. D).
            lsm_search_before_delete: true,
            seed: self.a.base.seed,
            dir: dir.join("data"),
            out: dir.clone(),
            profile: Some(profile.to_path_buf()),
            device: match lens {
                Lens::Disk => None,
                Lens::Sim(p) => Some(DeviceSpec::SimulatedSsd(
                    p.config_sized(nand_bytes(entries)),
                )),
            },
            verbose: false,
            ..BenchConfig::new()
        };
        let r = run_bench(&cfg).with_context(|| format!("{} {name}", lens.label()))?;
        std::fs::remove_dir_all(dir.join("data")).ok();
        Ok(r.results)
    }
}

/// A cell of `experiment` from a runner record on `lens`.
fn cell(experiment: &str, lens: Lens, variant: &str, size: u64, r: &Record) -> Cell {
    Cell {
        size,
        id: CellId::new(experiment, lens, &r.engine, variant, &r.workload),
        m: Measured::of(r),
        engine_params: r.engine_params.clone(),
        model: r.model.clone(),
    }
}

/// The lenses of `--lenses` (default: this disk, the Mtron, the Intel X25-M; with
/// `--quick`, a smoke test, this disk and the Mtron).
fn lenses(a: &FdtreeReproArgs) -> Result<Vec<Lens>> {
    let mut all = vec![Lens::Disk, Lens::Sim(SsdProfile::Mtron)];
    if !a.base.quick {
        all.push(Lens::Sim(SsdProfile::IntelX25m));
    }
    Lens::parse_all(&a.sizes.lenses, all)
}

/// Run the reproduction.
pub fn run(a: &FdtreeReproArgs) -> Result<FdtreeRepro> {
    let z = Sizes::new(a)?;
    let f = a.base.frame("fdtree")?;
    let cx = Ctx { a, z, f };
    let mut cells = Vec::new();
    let mut infos = Vec::new();
    let n = cx.z.entries;
    for lens in lenses(a)? {
        let (path, profile) = cx.f.profile(lens)?;
        infos.push(LensInfo::of(lens, &path, &profile));
        // The largest index: Fig. 10's last size, Fig. 11, Fig. 12 and the model's cells.
        let mut main: Vec<Workload> = Vec::new();
        if a.base.runs("fig10") {
            main.push(Workload::Mix(50));
        }
        if a.base.runs("fig11") {
            main.extend(cx.z.ranges.iter().map(|&r| Workload::Range(r)));
        }
        if a.base.runs("fig12") {
            main.extend(FIG12);
        } else if a.base.runs("model") {
            main.extend([Workload::OSearch, Workload::OInsert]);
        }
        if !main.is_empty() {
            cx.f.say(format!(
                "{}: {} workloads on {} engines at {n} entries",
                lens.label(),
                main.len(),
                ENGINES.len()
            ));
            for r in cx.suite(lens, &path, "main", &ENGINES, main, n, cx.z.ops, true)? {
                let e = match r.workload.as_str() {
                    "mix-50" => "fig10",
                    w if w.starts_with("range-") => "fig11",
                    _ => "fig12",
                };
                cells.push(cell(e, lens, "", n, &r));
            }
        }
        if a.base.runs("fig10") {
            let small = n / 4;
            cx.f.say(format!("{}: Fig. 10 at {small} entries", lens.label()));
            let w = vec![Workload::Mix(50)];
            for r in cx.suite(
                lens,
                &path,
                "fig10-small",
                &ENGINES,
                w,
                small,
                cx.z.ops,
                true,
            )? {
                cells.push(cell("fig10", lens, "", small, &r));
            }
        }
        if a.base.runs("deamort") {
            for on in [true, false] {
                let variant = if on {
                    "deamortize on"
                } else {
                    "deamortize off"
                };
                cx.f.say(format!(
                    "{}: {} mix-50 operations on the FD-tree, {variant}",
                    lens.label(),
                    cx.z.deamort_ops
                ));
                let w = vec![Workload::Mix(50)];
                let name = if on { "deamort-on" } else { "deamort-off" };
                let fd = [EngineKind::FdTree];
                for r in cx.suite(lens, &path, name, &fd, w, n, cx.z.deamort_ops, on)? {
                    cells.push(cell("deamort", lens, variant, n, &r));
                }
            }
        }
    }
    std::fs::remove_dir_all(&cx.f.data).ok();
    let mut r = FdtreeRepro {
        entries: n,
        ops: cx.z.ops,
        deamort_ops: cx.z.deamort_ops,
        budget_bytes: cx.z.budget,
        page_size: BenchConfig::new().page_size,
        lenses: infos,
        quick: a.base.quick,
        wall_seconds: cx.f.seconds(),
        cells,
        claims: Vec::new(),
    };
    r.claims = paper::check(&r);
    cx.f.save(&r)?;
    Ok(r)
}
