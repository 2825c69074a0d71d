//! `flashix fdtree-model`: its arguments, the workload they describe, and the run that
//! prints the FD-tree cost model's choice ([`crate::models::fdtree`]) for a device profile.

use crate::models::fdtree::{device_costs, render};
use crate::probe::load_profile;
use crate::units::parse_size;
use anyhow::{bail, Context, Result};
use flashix::cost::fdtree::FdTreeWorkload;
use std::path::PathBuf;

/// Options of `flashix fdtree-model`.
#[derive(clap::Args, Debug, Clone)]
pub struct FdTreeModelArgs {
    /// Entries in the index (n).
    #[arg(long, default_value_t = 10_000_000)]
    pub entries: u64,
    /// Share of searches in the workload (p_s); insertions are the rest (p_i = 1 - p_s).
    #[arg(long = "search-fraction", default_value_t = 0.5)]
    pub search_fraction: f64,
    /// Page size B: bytes, or with a unit (4096, 4KiB).
    #[arg(long = "page-size", default_value = "4096")]
    pub page_size: String,
    /// Head tree size |L0| (the paper's 512KB locality area).
    #[arg(long = "head-tree", default_value = "512KiB")]
    pub head_tree: String,
    /// Buffer pool size M.
    #[arg(long = "buffer-pool", default_value = "16MiB")]
    pub buffer_pool: String,
    /// Device profile written by `flashix probe`.
    #[arg(long, default_value = "./bench-out/device-profile.json")]
    pub profile: PathBuf,
}

impl FdTreeModelArgs {
    /// The workload these options describe.
    pub fn workload(&self) -> Result<FdTreeWorkload> {
        let ps = self.search_fraction;
        if !(0.0..=1.0).contains(&ps) {
            bail!("--search-fraction must be between 0 and 1, not {ps}");
        }
        if self.entries == 0 {
            bail!("--entries must be at least 1");
        }
        let page_size = parse_size(&self.page_size).context("--page-size")?;
        let page_size = usize::try_from(page_size).context("--page-size: too large")?;
        let mut w = FdTreeWorkload::new(
            self.entries,
            ps,
            page_size,
            flashix::FdTreeOptions::entries_per_page(page_size),
        );
        w.head_tree_bytes = parse_size(&self.head_tree).context("--head-tree")?;
        w.buffer_bytes = parse_size(&self.buffer_pool).context("--buffer-pool")?;
        Ok(w)
    }
}

/// `flashix fdtree-model`: load the profile, run the model, print the answer.
pub fn run(args: &FdTreeModelArgs) -> Result<()> {
    let w = args.workload()?;
    if !args.profile.exists() {
        bail!(
            "no device profile at {}: run `flashix probe` first (it writes ./bench-out/device-profile.json), or pass --profile FILE",
            args.profile.display()
        );
    }
    let profile = load_profile(&args.profile)?;
    let dev = device_costs(&profile, w.page_size)?;
    let source = format!(
        "{} ({}, measured {})",
        args.profile.display(),
        profile.backend,
        profile.measured_at
    );
    print!("{}", render(&source, &dev, &w)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::example_profile as profile;
    use flashix::cost::fdtree;

    fn args(profile: PathBuf) -> FdTreeModelArgs {
        FdTreeModelArgs {
            entries: 10_000_000,
            search_fraction: 0.5,
            page_size: "4096".into(),
            head_tree: "512KiB".into(),
            buffer_pool: "16MiB".into(),
            profile,
        }
    }

    #[test]
    fn options_become_the_workload() {
        let a = args(PathBuf::from("x.json"));
        let w = a.workload().unwrap();
        assert_eq!(w.entries, 10_000_000);
        assert_eq!(w.page_size, 4096);
        assert_eq!(w.entries_per_page, 250);
        assert_eq!(w.head_tree_bytes, 512 << 10);
        assert_eq!(w.buffer_bytes, 16 << 20);
        assert_eq!(w.insert_fraction, 0.5);
        let bad = FdTreeModelArgs {
            search_fraction: 1.5,
            ..a.clone()
        };
        assert!(bad.workload().is_err());
        let bad = FdTreeModelArgs {
            head_tree: "lots".into(),
            ..a
        };
        assert!(bad.workload().is_err());
    }

    #[test]
    fn missing_profile_says_run_probe() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(&args(dir.path().join("none.json")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("flashix probe"), "{e}");
        assert!(e.contains("none.json"), "{e}");
    }

    #[test]
    fn report_shows_the_choice_and_the_table() {
        let p = profile();
        let w = args(PathBuf::new()).workload().unwrap();
        let dev = device_costs(&p, 4096).unwrap();
        let best = fdtree::choose(&dev, &w).unwrap();
        let text = render("test profile", &dev, &w).unwrap();
        assert!(
            text.contains(&format!(
                "chosen   k = {}, l = {} levels",
                best.k, best.levels
            )),
            "{text}"
        );
        let chosen_rows: Vec<&str> = text.lines().filter(|l| l.ends_with("<- chosen")).collect();
        // Once among the best per level count, once in the table by k.
        assert_eq!(chosen_rows.len(), 2, "{text}");
        for row in chosen_rows {
            assert!(row.trim_start().starts_with(&best.k.to_string()), "{row}");
        }
        let table = text.split("cost by k").nth(1).unwrap();
        let rows = table
            .lines()
            .filter(|l| l.starts_with("  ") && !l.contains("search us"));
        assert!(rows.count() >= 2, "{text}");
    }
}
