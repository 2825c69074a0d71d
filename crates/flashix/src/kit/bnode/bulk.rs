//! The grouping of a bottom-up bulk load: how many items go into each node of a level.

/// Cut `n` items into groups of `per` (at least `min` each, at most `cap`), as a bulk load
/// does: full groups, with a short last group merged into or balanced with the one before.
pub(crate) fn group_sizes(n: usize, per: usize, min: usize, cap: usize) -> Vec<usize> {
    let mut sizes = vec![per; n / per];
    let rest = n % per;
    if rest > 0 {
        sizes.push(rest);
    }
    if sizes.len() >= 2 && rest > 0 && rest < min {
        let combined = sizes[sizes.len() - 2] + rest;
        sizes.truncate(sizes.len() - 2);
        if combined <= cap {
            sizes.push(combined);
        } else {
            sizes.push(combined / 2);
            sizes.push(combined - combined / 2);
        }
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::group_sizes;

    #[test]
    fn groups_respect_min_and_cap() {
        for n in 1..2000 {
            let s = group_sizes(n, 21, 15, 30);
            assert_eq!(s.iter().sum::<usize>(), n);
            if s.len() > 1 {
                assert!(s.iter().all(|&x| (15..=30).contains(&x)), "n={n} {s:?}");
            }
        }
    }
}
