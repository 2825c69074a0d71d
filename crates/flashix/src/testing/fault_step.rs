//! The fault step of the conformance harness (see the harness's module doc, "Fault
//! steps"): arm an injected I/O error, run operations until one meets it, check that it
//! came back as that error and poisoned the `Db`, reopen, and check the prefix rule.

use super::{checked_read, exec, gen_mutation, Env, KeyGen, Read, ReadFailure, Report, Tracked};
use crate::io::{FailSpec, OpKind};
use crate::util::Rng;
use crate::{Db, Error};
use std::fmt::Display;

/// The kinds of operation a fault step fails, one drawn uniformly per step.
pub const FAULT_KINDS: [OpKind; 6] = [
    OpKind::DeviceRead,
    OpKind::DeviceWrite,
    OpKind::DeviceSync,
    OpKind::VfsRead,
    OpKind::VfsWrite,
    OpKind::VfsSync,
];

/// Operations a fault step runs at most before it closes the index.
const IN_FLIGHT: usize = 40;

/// Injected I/O errors of one kind of operation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FaultCount {
    /// Failures armed.
    pub armed: usize,
    /// Armed failures that an operation met and returned (an operation of the in-flight
    /// loop, the `close` after it, or the `open` after that).
    pub hit: usize,
}

impl FaultCount {
    pub(super) fn add(&mut self, other: FaultCount) {
        self.armed += other.armed;
        self.hit += other.hit;
    }
}

/// What became of an armed failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// An operation returned it.
    Hit,
    /// It fired, but no operation returned an error (the engine went on without the
    /// failed I/O; the contents are then checked exactly).
    Absorbed,
    /// No operation met it.
    NotHit,
}

/// How the in-flight operations of a fault step ended.
enum Flight {
    /// This operation returned this error.
    Failed(String, Error),
    /// The armed failure fired, but the operation succeeded.
    Absorbed,
    /// Every operation succeeded and the failure did not fire.
    Done,
}

/// A failure drawn for a fault step: a kind of [`FAULT_KINDS`], at the `n`-th next
/// operation of that kind (small `n`: syncs are few between flushes), EIO or ENOSPC, once
/// or sticky.
pub(super) fn draw(rng: &mut Rng) -> FailSpec {
    let kind = FAULT_KINDS[rng.below(FAULT_KINDS.len() as u64) as usize];
    let n = 1 + match kind {
        OpKind::DeviceSync | OpKind::VfsSync => rng.below(3),
        OpKind::VfsRead => rng.below(6),
        _ => rng.below(24),
    };
    let errno = if rng.coin() { libc::EIO } else { libc::ENOSPC };
    FailSpec {
        kind,
        n,
        errno,
        sticky: rng.coin(),
    }
}

/// Everything of a running history a fault step uses.
pub(super) struct FaultRun<'a> {
    pub(super) env: &'a mut Env,
    pub(super) db: &'a mut Option<Db>,
    pub(super) rng: &'a mut Rng,
    pub(super) keys: &'a KeyGen,
    pub(super) t: &'a mut Tracked,
    pub(super) report: &'a mut Report,
}

type Ctx<'c> = &'c dyn Fn(&str, &dyn Display) -> String;

impl FaultRun<'_> {
    /// One fault step (the harness's module doc). `ctx` makes an error message.
    pub(super) fn fault_step(&mut self, ctx: Ctx<'_>) -> Result<(), String> {
        let spec = draw(self.rng);
        let before = self.env.faults().fired();
        arm(self.env, spec);
        let mut outcome = Outcome::NotHit;
        let mut at_close = false;
        let mut cut = false;
        match self.in_flight(before, ctx)? {
            Flight::Failed(what, e) => {
                check_injected(&e, spec, self.env.faults().fired() > before)
                    .map_err(|why| ctx(&what, &why))?;
                outcome = Outcome::Hit;
                // The Db refuses further work, without panicking.
                if let Some(d) = self.db.as_mut() {
                    match d.insert(0, 0) {
                        Err(Error::Poisoned(_)) => {}
                        r => {
                            return Err(ctx(
                                &format!("insert after {what} failed with {e}"),
                                &format!("the Db is not poisoned: {r:?}"),
                            ))
                        }
                    }
                }
                drop(self.db.take());
            }
            Flight::Absorbed => {
                // The engine went on without the failed I/O: power is cut at once
                // (before the drop, whose flush would sync again), so a failed sync or
                // write that it took as done, and then acknowledged a flush over, shows.
                outcome = Outcome::Absorbed;
                self.cut_power(ctx)?;
                cut = true;
                drop(self.db.take());
            }
            Flight::Done => {
                if let Some(d) = self.db.take() {
                    // Nothing failed: a close checkpoints (device writes and syncs, the
                    // manifest).
                    match d.close() {
                        Ok(()) => self.t.flushed(),
                        Err(e) => {
                            check_injected(&e, spec, self.env.faults().fired() > before)
                                .map_err(|why| ctx("close", &why))?;
                            outcome = Outcome::Hit;
                            at_close = true;
                        }
                    }
                }
                if outcome == Outcome::NotHit && self.env.faults().fired() > before {
                    outcome = Outcome::Absorbed;
                }
            }
        }
        self.env.faults().clear_failures();
        if !cut && self.rng.coin() {
            // Power is cut right after the failure: nothing a flush acknowledged may
            // depend on the failed I/O.
            self.cut_power(ctx)?;
        }

        // Reopen on the same storage: no crash, so every write that completed stays. A
        // failure no operation met is armed again for the open (where the vfs reads
        // are); after one that was met, one open in four meets another failure.
        let open_fault = match outcome {
            Outcome::NotHit => Some(spec),
            _ if self.rng.below(4) == 0 => Some(draw(self.rng)),
            _ => None,
        };
        let (mut d, open_outcome) = self.reopen(open_fault, ctx)?;
        let at_open = outcome == Outcome::NotHit && open_outcome == Some(Outcome::Hit);
        if outcome == Outcome::NotHit {
            outcome = open_outcome.unwrap_or(Outcome::NotHit);
        } else if let Some(o) = open_outcome {
            self.report.open_faults.add(FaultCount {
                armed: 1,
                hit: (o == Outcome::Hit) as usize,
            });
        }
        self.report.lost_after_fault += self
            .t
            .settle(&mut d)
            .map_err(|e| ctx("reopen after the fault", &e))?;
        *self.db = Some(d);

        let count = FaultCount {
            armed: 1,
            hit: (outcome == Outcome::Hit) as usize,
        };
        self.report.faults.add(count);
        self.report
            .faults_by_kind
            .entry(format!("{:?}", spec.kind))
            .or_default()
            .add(count);
        match outcome {
            Outcome::Hit => {
                self.report.faults_at_close += at_close as usize;
                self.report.faults_at_open += at_open as usize;
            }
            Outcome::Absorbed => self.report.faults_absorbed += 1,
            Outcome::NotHit => self.report.faults_not_hit += 1,
        }
        Ok(())
    }

    /// Cut power now: the storage becomes its durable image (the crash step's, with no
    /// torn write).
    fn cut_power(&mut self, ctx: Ctx<'_>) -> Result<(), String> {
        self.env.faults().crash_now();
        if let Some(e) = self.env.faults().image_error() {
            return Err(ctx("building the crash image after the fault", &e));
        }
        self.report.crashes_after_fault += 1;
        Ok(())
    }

    /// Mutations, reads and flushes until one fails, the armed failure fires without an
    /// error, or [`IN_FLIGHT`] operations ran. A read that succeeds must give the model's
    /// answer.
    fn in_flight(&mut self, before: u64, ctx: Ctx<'_>) -> Result<Flight, String> {
        for _ in 0..IN_FLIGHT {
            let Some(d) = self.db.as_mut() else {
                break;
            };
            let roll = self.rng.below(100);
            if let Some(op) = gen_mutation(roll, self.rng, self.keys, &self.t.model) {
                self.report.batches += matches!(op, super::Op::Batch(_)) as usize;
                let r = exec(d, &op);
                let what = r.is_err().then(|| short(&format!("{op:?}")));
                self.t.applied(op);
                if let (Err(e), Some(what)) = (r, what) {
                    return Ok(Flight::Failed(what, e));
                }
            } else if roll < 85 {
                let read = match roll {
                    55..=69 => Read::Get,
                    70..=74 => Read::GetMany,
                    _ => Read::Range,
                };
                match checked_read(read, d, self.rng, self.keys, &self.t.model) {
                    Ok(()) => {}
                    Err((what, ReadFailure::Db(e))) => return Ok(Flight::Failed(what, e)),
                    Err((what, wrong)) => {
                        return Err(ctx(&format!("{what} with a failure armed"), &wrong))
                    }
                }
            } else {
                match d.flush() {
                    Ok(()) => self.t.flushed(),
                    Err(e) => return Ok(Flight::Failed("flush".to_string(), e)),
                }
            }
            if self.env.faults().fired() > before {
                return Ok(Flight::Absorbed);
            }
        }
        Ok(Flight::Done)
    }

    /// Open the index on fresh handles with `fault` armed: the open either meets it and
    /// returns it (then an open without faults must succeed), or it does not; the
    /// outcome of `fault`, if one was armed.
    fn reopen(
        &mut self,
        fault: Option<FailSpec>,
        ctx: Ctx<'_>,
    ) -> Result<(Db, Option<Outcome>), String> {
        let s = self.env.storage().map_err(|e| ctx("storage", &e))?;
        let Some(spec) = fault else {
            let d = Db::open_on(s).map_err(|e| ctx("reopen after the fault", &e))?;
            return Ok((d, None));
        };
        arm(self.env, spec);
        match Db::open_on(s) {
            Ok(d) => {
                let fired = self.env.faults().fired() > 0;
                self.env.faults().clear_failures();
                let o = if fired {
                    Outcome::Absorbed
                } else {
                    Outcome::NotHit
                };
                Ok((d, Some(o)))
            }
            Err(e) => {
                check_injected(&e, spec, self.env.faults().fired() > 0)
                    .map_err(|why| ctx(&format!("open with {spec:?} armed"), &why))?;
                let s = self.env.storage().map_err(|e| ctx("storage", &e))?;
                let d =
                    Db::open_on(s).map_err(|e| ctx("open after an open that met a failure", &e))?;
                Ok((d, Some(Outcome::Hit)))
            }
        }
    }
}

fn arm(env: &Env, spec: FailSpec) {
    env.faults()
        .fail_nth(spec.kind, spec.n, spec.errno, spec.sticky);
}

/// `e` must be the injected failure: an I/O error carrying its errno, and it must have
/// fired.
fn check_injected(e: &Error, spec: FailSpec, fired: bool) -> Result<(), String> {
    match e {
        Error::Io { source, .. } if source.raw_os_error() == Some(spec.errno) && fired => Ok(()),
        Error::Io { .. } if !fired => Err(format!(
            "{e}: an I/O error, but the armed failure {spec:?} did not fire"
        )),
        _ => Err(format!(
            "{e}: not the injected failure {spec:?} (an I/O error with errno {})",
            spec.errno
        )),
    }
}

/// `s` cut to 200 characters (a bulk insert's pairs make long names).
fn short(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}
