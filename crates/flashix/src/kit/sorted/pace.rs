//! The pace of a deamortized merge (FD-tree paper §3.4, shared by the FD-tree and the
//! LSM-tree's rolling merge): "given N_merge entries to be merged, we divide these N_merge
//! entries into |L0| partitions, and progressively combine entries in a partition after
//! executing an insertion", so that the merge completes before the new head tree (C0)
//! fills. The work is an upper bound (cancellations are not foreseen), so either rule
//! below completes the merge in time.
//!
//! - [`spread`] (the LSM-tree): each mutation advances the merge by the work left over the
//!   room left, less a reserve ([`margin`]: a sixteenth of the capacity, for mutations
//!   that take more than one entry of room, a range tombstone): the work is spread evenly
//!   over nearly the whole fill, at the lowest rate that completes it in time. Under the
//!   front-loaded rule below the merge's reads and writes come at twice the average rate
//!   early in the fill, and a device serving one request in flight per stream falls
//!   behind: inserts wait for reads and writes, which the even spread avoids.
//! - [`front_loaded`] (the FD-tree): the work left over half the room left, twice the
//!   average rate at first, decaying. The FD-tree's frozen head tree stays in the buffer
//!   pool until its merge completes (the LSM-tree's frozen C0 is entries in memory), so
//!   an early completion returns its frames to the levels' pages: spread evenly, the
//!   FD-tree's mixed workloads read more pages per operation and run slower.

/// The share of a head tree's capacity [`spread`] keeps free when a merge completes: a
/// sixteenth.
pub(crate) fn margin(cap: u64) -> u64 {
    cap / 16
}

/// Input entries the next step of a deamortized merge processes: `work` (entries still to
/// process, an upper bound) spread evenly over the room a head tree of capacity `cap`
/// holding `fill` entries has left beyond `reserve` entries; at least one.
pub(crate) fn spread(work: u64, fill: u64, cap: u64, reserve: u64) -> u64 {
    let room = cap.saturating_sub(fill).saturating_sub(reserve);
    work.div_ceil(room.max(1)).max(1)
}

/// Input entries the next step processes: `work` over half the room left; at least one.
pub(crate) fn front_loaded(work: u64, fill: u64, cap: u64) -> u64 {
    let room = cap.saturating_sub(fill) / 2;
    work.div_ceil(room.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stepping by `spread` after each insertion completes any merge whose work is
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
                        let n = spread(left, fill, cap, reserve).min(left);
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

    /// Stepping by `front_loaded` completes the merge before the head tree fills, with a
    /// first step at least twice the even share.
    #[test]
    fn a_front_loaded_merge_completes_before_the_head_tree_fills() {
        for cap in [16u64, 100, 1000, 16_000] {
            for work in [1u64, cap / 3, cap, 29 * cap, 1000 * cap + 7] {
                let (mut left, mut fill, mut first) = (work, 0u64, None);
                while left > 0 {
                    assert!(
                        fill < cap,
                        "cap {cap} work {work}: the head tree filled first"
                    );
                    fill += 1;
                    let n = front_loaded(left, fill, cap).min(left);
                    first.get_or_insert(n);
                    left -= n;
                }
                let first = first.unwrap_or(0) as f64;
                let twice_even = 2.0 * work as f64 / cap as f64;
                assert!(first >= twice_even, "cap {cap} work {work}: {first}");
            }
        }
    }
}
