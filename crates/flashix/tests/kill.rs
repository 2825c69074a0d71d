//! Process kills for every engine (`flashix::testing::kill`): each
//! engine runs in a child process (this test binary, re-executed to run only `kill_child`)
//! on an index directory, is killed with SIGKILL at a random moment, and the reopened
//! index must hold every operation acknowledged by a flush plus a prefix of the rest.
//!
//! The default run kills each engine a few times; `FLASHIX_CONFORMANCE_LONG=1` many times
//! (`FLASHIX_KILL_ROUNDS=N` sets the number). `FLASHIX_CONFORMANCE_ENGINES=lsm,pio` picks
//! engines, as in the conformance tests. `mobject::` kills the moving-object index over the
//! B+-tree and over the FBX engine the same way.

use flashix::testing::kill::{child_main, KillReport, KillTest};
use flashix::testing::{engine_selected, long_mode};
use flashix::EngineKind;
use std::time::Instant;

/// The child's entry point: does nothing unless the kill test started this process (then
/// it runs the child's script until it is killed). Ignored, so that a plain `cargo test`
/// does not list it as a passing test; the parent runs it with `--ignored`.
#[test]
#[ignore = "the child process of the kill tests, which run it"]
fn kill_child() {
    if let Err(e) = child_main() {
        eprintln!("{e}");
        std::process::exit(2);
    }
}

macro_rules! engines {
    ($run:path; $($name:ident => $engine:ident, $seed:expr;)*) => {
        $(
            #[test]
            fn $name() {
                super::kills($run, super::EngineKind::$engine, $seed);
            }
        )*
    };
}

mod kill {
    engines! {
        flashix::testing::kill::kill_rounds;
        btree => BTree, 1;
        lsm => Lsm, 2;
        fdtree => FdTree, 3;
        pio => PioBTree, 4;
        bulk => BulkIndex, 5;
        bftl => Bftl, 6;
        latree => LaTree, 7;
        fbx => Fbx, 8;
        ipl => IplBTree, 9;
        dipl => DiplBTree, 10;
    }
}

/// The moving-object index over the B+-tree (the Bx-tree) and over the FBX engine (the
/// FBX-tree).
mod mobject {
    engines! {
        flashix::testing::kill::mobject::kill_rounds;
        btree => BTree, 11;
        fbx => Fbx, 12;
    }
}

/// Kill `engine` `rounds` times on one index (more in the long mode, on several indexes).
fn kills(run: fn(&KillTest) -> Result<KillReport, String>, engine: EngineKind, seed: u64) {
    if !engine_selected(engine) {
        return;
    }
    let rounds: usize = match std::env::var("FLASHIX_KILL_ROUNDS") {
        Ok(n) => n.parse().expect("FLASHIX_KILL_ROUNDS: a number"),
        Err(_) if long_mode() => 200,
        Err(_) => 6,
    };
    // Long mode: several indexes of 50 rounds each, so that options vary by seed too.
    let per_index = rounds.clamp(1, 50);
    let started = Instant::now();
    let mut total = KillReport::default();
    let mut index = 0;
    while total.kills < rounds {
        // Under the target directory: /tmp may be tmpfs, which refuses O_DIRECT.
        let base = tempfile::Builder::new()
            .prefix(&format!("kill-{engine}-"))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("tempdir");
        let t = KillTest {
            engine,
            seed: seed * 1_000 + index,
            rounds: per_index.min(rounds - total.kills),
            dir: base.path().join("index"),
            exe: std::env::current_exe().expect("the test binary"),
            child_args: [
                "--exact",
                "kill_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ]
            .map(String::from)
            .to_vec(),
        };
        let r = run(&t).unwrap_or_else(|e| panic!("{e}"));
        add(&mut total, &r);
        index += 1;
    }
    eprintln!(
        "{}: {index} indexes, {total:?}, {:.1} s",
        std::thread::current().name().unwrap_or("kills"),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(total.lost_after_flush, 0);
    assert!(total.ops_recovered >= total.ops_acked);
    if rounds >= 4 {
        // The schedule must have reached operations, not only startup.
        assert!(
            total.ops_recovered > 0,
            "{engine}: no operation ran: {total:?}"
        );
    }
}

fn add(total: &mut KillReport, r: &KillReport) {
    total.kills += r.kills;
    total.kills_before_ready += r.kills_before_ready;
    total.kills_in_long_ops += r.kills_in_long_ops;
    total.heavy_rounds += r.heavy_rounds;
    total.read_only_checks += r.read_only_checks;
    total.flushes_acked += r.flushes_acked;
    total.ops_acked += r.ops_acked;
    total.ops_recovered += r.ops_recovered;
    total.lost_after_flush += r.lost_after_flush;
    total.final_entries += r.final_entries;
}
