//! ADAPT, "reasoning in hindsight" (Agrawal et al. 2009; Lehtonen 2014, §4.4, Table 4.1).
//!
//! At every lookup that scans a buffer, a register `(scanCost_i, emptyCost_i)` is recorded:
//! what the scan cost and what emptying the buffer would have cost at that moment. After
//! the lookup, the buffer is emptied if for some earlier register `i`
//! `(lookups since i) × scanCost_i > emptyCost_i`: had we emptied at lookup `i`, the
//! scans paid since would have paid for it.
//!
//! Register `i` first fires at lookup `i + ⌊emptyCost_i / scanCost_i⌋ + 1` (for integers,
//! `(n − i)·s > e ⇔ n − i ≥ ⌊e/s⌋ + 1`), so the registers need not be kept: the earliest of
//! these firing points decides, and a buffer's ADAPT state is two numbers.

use std::sync::atomic::{AtomicU64, Ordering};

/// `fires_at` when no register fires (a firing point saturates to it only when it lies
/// beyond any count of lookups).
const NEVER: u64 = u64::MAX;

/// A buffer's ADAPT state since it was last emptied. Atomic, so that lookups running beside
/// each other (`super`'s module doc, Thread safety) record their registers through `&self`:
/// each lookup takes its own number, and the earliest firing point only moves down, so
/// every lookup's register is counted and a buffer, once due, stays due.
#[derive(Debug)]
pub struct Adapt {
    /// Lookups that scanned the buffer.
    lookups: AtomicU64,
    /// The earliest lookup at which some register fires ([`NEVER`]: none).
    fires_at: AtomicU64,
}

impl Default for Adapt {
    fn default() -> Self {
        Adapt {
            lookups: AtomicU64::new(0),
            fires_at: AtomicU64::new(NEVER),
        }
    }
}

impl Clone for Adapt {
    fn clone(&self) -> Self {
        Adapt {
            lookups: AtomicU64::new(self.lookups.load(Ordering::Relaxed)),
            fires_at: AtomicU64::new(self.fires_at.load(Ordering::Relaxed)),
        }
    }
}

impl Adapt {
    /// (lookups, earliest firing point).
    fn state(&self) -> (u64, u64) {
        (
            self.lookups.load(Ordering::Relaxed),
            self.fires_at.load(Ordering::Relaxed),
        )
    }

    /// Record the register of a lookup that scanned the buffer, and say whether the buffer
    /// is to be emptied now.
    pub fn lookup(&self, scan_cost: u64, empty_cost: u64) -> bool {
        let i = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        let at = match empty_cost.checked_div(scan_cost) {
            Some(q) => {
                let mine = i.saturating_add(q).saturating_add(1);
                self.fires_at.fetch_min(mine, Ordering::Relaxed).min(mine)
            }
            None => self.fires_at.load(Ordering::Relaxed),
        };
        at != NEVER && i >= at
    }

    /// Some register has fired: the buffer is to be emptied (a decision a lookup on the
    /// shared path leaves to the next write).
    pub fn due(&self) -> bool {
        let (i, at) = self.state();
        at != NEVER && i >= at
    }
}

/// The rule as the thesis states it, over all registers (register `i` recorded at lookup
/// `i + 1`): empty at lookup `n` if `(n − i) × scanCost_i > emptyCost_i` for some `i < n`.
#[cfg(test)]
fn hindsight(registers: &[(u64, u64)], n: usize) -> bool {
    registers[..n]
        .iter()
        .enumerate()
        .any(|(i, &(scan, empty))| (n - 1 - i) as u64 * scan > empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lehtonen 2014, Table 4.1: registers (75,215), (90,230), (120,260), (230,370); lookups
    /// 1–3 do not empty, lookup 4 does, because 3 × 75 = 225 > 215 (and 2 × 90 = 180 < 230,
    /// 1 × 120 < 260).
    #[test]
    fn table_4_1_empties_at_lookup_4() {
        let regs = [(75, 215), (90, 230), (120, 260), (230, 370)];
        let a = Adapt::default();
        let decisions: Vec<bool> = regs.iter().map(|&(s, e)| a.lookup(s, e)).collect();
        assert_eq!(decisions, [false, false, false, true]);
        let by_rule: Vec<bool> = (1..=4).map(|n| hindsight(&regs, n)).collect();
        assert_eq!(by_rule, [false, false, false, true]);
        assert_eq!(3 * 75, 225);
    }

    /// The compressed state decides exactly as the full register list on random sequences.
    #[test]
    fn earliest_firing_point_equals_the_register_rule() {
        let mut rng = crate::util::Rng::new(3);
        for _ in 0..2_000 {
            let n = 1 + rng.below(12) as usize;
            let regs: Vec<(u64, u64)> = (0..n).map(|_| (rng.below(50), rng.below(400))).collect();
            let a = Adapt::default();
            for j in 0..n {
                let fired = a.lookup(regs[j].0, regs[j].1);
                assert_eq!(fired, hindsight(&regs, j + 1), "{regs:?} at {}", j + 1);
                if fired {
                    break;
                }
            }
        }
    }
}
