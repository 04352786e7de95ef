//! Which nodes have rolled-up figures of their own, and their index among
//! them: a bitmap and a count per 64 nodes (under 0.2 bytes a node, where
//! an index per node would take 4).

/// The set of nodes with a slot; a node's slot is its rank in the set.
#[derive(Debug, Default)]
pub(super) struct Ranks {
    bits: Vec<u64>,
    /// Members before each word of `bits`.
    before: Vec<u32>,
}

impl Ranks {
    /// The nodes `0..n` for which `member` holds.
    pub(crate) fn new(n: usize, member: impl Fn(usize) -> bool) -> Ranks {
        let words = n.div_ceil(64);
        let mut r = Ranks {
            bits: vec![0; words],
            before: Vec::with_capacity(words),
        };
        for i in 0..n {
            if member(i) {
                r.bits[i / 64] |= 1 << (i % 64);
            }
        }
        let mut count = 0u32;
        for w in &r.bits {
            r.before.push(count);
            count += w.count_ones();
        }
        r
    }

    /// Node `i`'s slot, if it has one.
    pub(crate) fn get(&self, i: usize) -> Option<u32> {
        let w = self.bits[i / 64];
        let b = i % 64;
        (w >> b & 1 == 1).then(|| self.before[i / 64] + (w & ((1u64 << b) - 1)).count_ones())
    }

    /// The heap bytes held.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bits.capacity() * 8 + self.before.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_count_the_members_before() {
        let member = |i: usize| i % 3 == 0 || i == 64 || i == 127;
        let r = Ranks::new(200, member);
        let mut next = 0;
        for i in 0..200 {
            if member(i) {
                assert_eq!(r.get(i), Some(next), "{i}");
                next += 1;
            } else {
                assert_eq!(r.get(i), None, "{i}");
            }
        }
    }
}
