//! Deliberate bugs that tests switch on to prove they would catch them: a test that passes
//! with a mutation active cannot tell the right rule from the wrong one. Active only on the
//! calling thread and only inside `with`. Compiled in only with the test-only `mutation`
//! feature (owt-hybrid's own tests turn it on); without it every switch is a constant `false`.

#[cfg(feature = "mutation")]
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
    #[cfg(feature = "mutation")]
    pub const ALL: [Mutation; 3] =
        [Mutation::NonlinearOnSummands, Mutation::ProductOfSummands, Mutation::MissingAllReduce];

    #[cfg(feature = "mutation")]
    fn bit(self) -> u32 {
        1 << self as u32
    }
}

#[cfg(feature = "mutation")]
thread_local! {
    static ACTIVE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with `mutation` active on this thread.
#[cfg(feature = "mutation")]
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
#[cfg(feature = "mutation")]
pub(crate) fn active(mutation: Mutation) -> bool {
    ACTIVE.with(|a| a.get() & mutation.bit() != 0)
}

/// Without the `mutation` feature nothing is ever active.
#[cfg(not(feature = "mutation"))]
#[inline(always)]
pub(crate) fn active(_mutation: Mutation) -> bool {
    false
}
