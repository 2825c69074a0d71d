//! The pace of a deamortized merge (FD-tree paper §3.4, shared by the FD-tree and the
//! LSM-tree's rolling merge): "given N_merge entries to be merged, we divide these N_merge
//! entries into |L0| partitions, and progressively combine entries in a partition after
//! executing an insertion", so that the merge completes as the new head tree (C0) fills.
//!
//! Each mutation advances the merge by the work left over the mutations the new head tree
//! still has room for, less a reserve: [`MARGIN`], a sixteenth of its capacity, for
//! mutations that take more than one entry of room (a range tombstone), and what the
//! completion itself adds to the head tree (the FD-tree's new head takes the external
//! fences of the new L1). The work is an upper bound (cancellations are not foreseen), so
//! the merge completes before the head tree fills. Spread over (nearly) the whole fill, the merge's
//! sequential I/O runs at the lowest rate that completes it in time: over half the fill,
//! as flashix first did, the merge's reads and writes came at twice the rate during that
//! half and the device, at one request in flight per stream, fell behind (inserts waited
//! for reads and writes; issue 17).

/// The share of a head tree's capacity kept free when a merge completes: a sixteenth.
pub(crate) fn margin(cap: u64) -> u64 {
    cap / 16
}

/// Input entries the next step of a deamortized merge processes: `work` (entries still to
/// process, an upper bound) spread over the room a head tree of capacity `cap` holding
/// `fill` entries has left beyond `reserve` entries; at least one.
pub(crate) fn step_units(work: u64, fill: u64, cap: u64, reserve: u64) -> u64 {
    let room = cap.saturating_sub(fill).saturating_sub(reserve);
    work.div_ceil(room.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stepping by `step_units` after each insertion completes any merge whose work is
    /// at most its estimate while the head tree still has its reserve free, and spreads
    /// it over the room beyond the reserve: no step does more than its share plus one.
    #[test]
    fn a_merge_paced_by_the_room_completes_before_the_reserve_is_taken() {
        for cap in [16u64, 100, 1000, 16_000] {
            for reserve in [margin(cap), margin(cap) + cap / 8] {
                for work in [0u64, 1, cap / 3, cap, 29 * cap, 1000 * cap + 7] {
                    let (mut left, mut fill, mut largest) = (work, 0u64, 0u64);
                    while left > 0 {
                        assert!(fill + reserve < cap, "cap {cap} work {work}: no room left");
                        fill += 1;
                        let n = step_units(left, fill, cap, reserve).min(left);
                        largest = largest.max(n);
                        left -= n;
                    }
                    // The steps: one per insertion while room is left beyond the reserve.
                    let share = work.div_ceil(cap - reserve - 1);
                    assert!(
                        largest <= share + 1,
                        "cap {cap} work {work}: step of {largest}"
                    );
                }
            }
        }
    }
}
