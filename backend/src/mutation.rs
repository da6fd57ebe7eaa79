//! Deliberate bugs that tests switch on to prove they would catch them: a test that passes
//! with a mutation active cannot tell the right rule from the wrong one. Active only on the
//! calling thread and only inside [`with`]; never on in normal use.

use std::cell::Cell;

/// A wrong placement rule a test can switch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Non-linear elementwise ops (relu, exp, ...) run on each rank's summand of a `Partial`
    /// input instead of on their sum.
    NonlinearOnSummands,
    /// A product of two `Partial` operands is taken summand by summand (as if it were linear
    /// in both at once).
    ProductOfSummands,
    /// A pending sum is declared whole without its all-reduce (rank 0's summand is read).
    MissingAllReduce,
}

impl Mutation {
    /// Every mutation.
    pub const ALL: [Mutation; 3] =
        [Mutation::NonlinearOnSummands, Mutation::ProductOfSummands, Mutation::MissingAllReduce];

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

thread_local! {
    static ACTIVE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with `mutation` active on this thread.
pub fn with<R>(mutation: Mutation, f: impl FnOnce() -> R) -> R {
    struct Reset(u32);
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(ACTIVE.with(|a| a.replace(a.get() | mutation.bit())));
    f()
}

/// Whether `mutation` is active on this thread.
pub(crate) fn active(mutation: Mutation) -> bool {
    ACTIVE.with(|a| a.get() & mutation.bit() != 0)
}
