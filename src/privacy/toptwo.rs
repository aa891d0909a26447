//! Costs per cell that grow by additions over ranges of cells, with the largest (and where)
//! and the second largest at hand: the distances from one point of the history (an anchor
//! cell, or a cell no release touched) to every cell, as [`super::pairs`] bounds the cost of
//! a history beyond the classes it keeps exactly.
//!
//! A segment tree whose additions stay at the node they cover (no push-down): a node's summary
//! is its children's, combined, plus what was added to the whole node, so reads take `&self`
//! and a read can account for additions not yet made (what a release would do, before it is
//! made). Additions saturate at [`Cost::MAX`] (which then stands for "too large to hold").

use super::pairs::Cost;

/// The two largest values of a set of cells: the largest and one cell holding it, and the
/// second largest (of another cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Top {
    /// The largest value and a cell holding it, if the set is not empty.
    pub best: Option<(Cost, usize)>,
    /// The second largest value (the largest when two cells share it), if the set has two
    /// cells.
    pub second: Option<Cost>,
}

impl Top {
    fn one(value: Cost, cell: usize) -> Self {
        Self {
            best: Some((value, cell)),
            second: None,
        }
    }

    /// Every value raised by `add`.
    pub fn plus(self, add: Cost) -> Self {
        Self {
            best: self.best.map(|(v, c)| (v.saturating_add(add), c)),
            second: self.second.map(|v| v.saturating_add(add)),
        }
    }

    /// The two largest of both sets (disjoint sets of cells).
    pub fn join(self, other: Self) -> Self {
        match (self.best, other.best) {
            (None, _) => other,
            (_, None) => self,
            (Some(a), Some(b)) => {
                let (winner, its_second, loser) = if a.0 >= b.0 {
                    (a, self.second, b.0)
                } else {
                    (b, other.second, a.0)
                };
                // The second largest: the better of the winner's second and the loser's best.
                Self {
                    best: Some(winner),
                    second: Some(its_second.map_or(loser, |s| s.max(loser))),
                }
            }
        }
    }

    /// The sum of the two largest values (the largest alone for one cell, 0 for none):
    /// the most two distinct cells can cost together.
    pub fn pair_sum(self) -> Cost {
        let best = self.best.map_or(0, |b| b.0);
        best.saturating_add(self.second.unwrap_or(0))
    }
}

/// Values over cells `0..n`, with additions over ranges and the two largest of any range.
#[derive(Debug, Clone, PartialEq)]
pub struct TopTwo {
    n: usize,
    /// Each node's two largest, its own additions included (node 1 is the root; node `i`
    /// has children `2i` and `2i + 1`).
    top: Vec<Top>,
    /// What was added to the whole of each node (and so to every cell below it).
    added: Vec<Cost>,
}

impl TopTwo {
    /// `n` cells, cell `j` holding `value(j)`.
    pub fn new(n: usize, value: impl Fn(usize) -> Cost) -> Self {
        let size = 2 * n.max(1).next_power_of_two();
        let mut tree = Self {
            n,
            top: vec![Top::default(); size],
            added: vec![0; size],
        };
        if n > 0 {
            tree.build(1, 0, n, &value);
        }
        tree
    }

    fn build(&mut self, node: usize, lo: usize, hi: usize, value: &impl Fn(usize) -> Cost) {
        if hi - lo == 1 {
            self.top[node] = Top::one(value(lo), lo);
            return;
        }
        let mid = lo + (hi - lo) / 2;
        self.build(2 * node, lo, mid, value);
        self.build(2 * node + 1, mid, hi, value);
        self.top[node] = self.top[2 * node].join(self.top[2 * node + 1]);
    }

    /// Adds `add` to every cell of `from..to`.
    pub fn add(&mut self, from: usize, to: usize, add: Cost) {
        let to = to.min(self.n);
        if add == 0 || from >= to {
            return;
        }
        self.add_at(1, 0, self.n, from, to, add);
    }

    fn add_at(&mut self, node: usize, lo: usize, hi: usize, from: usize, to: usize, add: Cost) {
        if to <= lo || hi <= from {
            return;
        }
        if from <= lo && hi <= to {
            self.added[node] = self.added[node].saturating_add(add);
            self.top[node] = self.top[node].plus(add);
            return;
        }
        let mid = lo + (hi - lo) / 2;
        self.add_at(2 * node, lo, mid, from, to, add);
        self.add_at(2 * node + 1, mid, hi, from, to, add);
        self.top[node] = self.top[2 * node]
            .join(self.top[2 * node + 1])
            .plus(self.added[node]);
    }

    /// The two largest over every cell.
    pub fn top(&self) -> Top {
        self.top.get(1).copied().unwrap_or_default()
    }

    /// The two largest over the cells `from..to`.
    pub fn top_in(&self, from: usize, to: usize) -> Top {
        let to = to.min(self.n);
        if from >= to {
            return Top::default();
        }
        self.top_at(1, 0, self.n, from, to)
    }

    fn top_at(&self, node: usize, lo: usize, hi: usize, from: usize, to: usize) -> Top {
        if to <= lo || hi <= from {
            return Top::default();
        }
        if from <= lo && hi <= to {
            return self.top[node];
        }
        let mid = lo + (hi - lo) / 2;
        self.top_at(2 * node, lo, mid, from, to)
            .join(self.top_at(2 * node + 1, mid, hi, from, to))
            .plus(self.added[node])
    }

    /// The two largest over every cell after adding to ranges (`(from, to, add)`, disjoint,
    /// covering every cell at most once), without adding.
    pub fn top_after(&self, ranges: impl Iterator<Item = (usize, usize, Cost)>) -> Top {
        let mut covered = 0;
        let mut top = Top::default();
        let mut last = 0;
        for (from, to, add) in ranges {
            // The cells no range covers keep their values.
            if from > last {
                top = top.join(self.top_in(last, from));
            }
            top = top.join(self.top_in(from, to).plus(add));
            covered += to.saturating_sub(from);
            last = to;
        }
        if covered < self.n {
            top = top.join(self.top_in(last, self.n));
        }
        top
    }

    /// Every cell's value, in order.
    pub fn values(&self) -> Vec<Cost> {
        let mut out = vec![0; self.n];
        if self.n > 0 {
            self.values_at(1, 0, self.n, 0, &mut out);
        }
        out
    }

    fn values_at(&self, node: usize, lo: usize, hi: usize, above: Cost, out: &mut [Cost]) {
        if hi - lo == 1 {
            out[lo] = self.top[node].best.map_or(0, |b| b.0).saturating_add(above);
            return;
        }
        let above = above.saturating_add(self.added[node]);
        let mid = lo + (hi - lo) / 2;
        self.values_at(2 * node, lo, mid, above, out);
        self.values_at(2 * node + 1, mid, hi, above, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The two largest of a slice by brute force: (largest, second largest).
    fn brute(v: &[Cost]) -> (Option<Cost>, Option<Cost>) {
        let mut s = v.to_vec();
        s.sort_unstable_by(|a, b| b.cmp(a));
        (s.first().copied(), s.get(1).copied())
    }

    #[test]
    fn additions_and_reads_agree_with_a_plain_array() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in [1usize, 2, 3, 7, 16, 33] {
            let mut plain: Vec<Cost> = (0..n).map(|_| rng.random_range(0..50)).collect();
            let mut tree = TopTwo::new(n, |j| plain[j]);
            for _ in 0..200 {
                let a = rng.random_range(0..n);
                let b = rng.random_range(a..=n);
                let add: Cost = rng.random_range(0..20);
                // A read of what an addition would do, before it is made.
                let ranges = vec![(a, b, add)];
                let predicted = tree.top_after(ranges.into_iter());
                tree.add(a, b, add);
                for v in &mut plain[a..b] {
                    *v += add;
                }
                assert_eq!(predicted, tree.top(), "n {n}");
                let top = tree.top();
                let (best, second) = brute(&plain);
                assert_eq!(top.best.map(|b| b.0), best);
                assert_eq!(top.second, second);
                let (value, cell) = top.best.expect("cells");
                assert_eq!(plain[cell], value, "the cell named holds the largest");
                let (x, y) = (rng.random_range(0..n), rng.random_range(0..=n));
                let (x, y) = (x.min(y), x.max(y));
                let part = tree.top_in(x, y);
                let (best, second) = brute(&plain[x..y]);
                assert_eq!((part.best.map(|b| b.0), part.second), (best, second));
                assert_eq!(tree.values(), plain);
            }
        }
    }
}
