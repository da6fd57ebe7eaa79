//! What every rule decides from and into: an input's [`Spec`], the [`Context`] along one mesh
//! dimension, and the [`Strategy`] a rule returns (with how the op runs: [`Run`]).

use burn::tensor::Shape;

use crate::spec::placement::Placement;
use crate::spec::scheme::Exchange;

/// What a rule sees of one input: its global shape, its placement, and whether every rank
/// keeps a whole copy of it besides (a matmul gathered it before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The global shape.
    pub shape: Shape,
    /// How it is laid out over the ranks.
    pub placement: Placement,
    /// Every rank keeps the whole tensor too, so bringing it to any placement moves nothing.
    pub kept_whole: bool,
}

impl Spec {
    /// A spec from a shape and a placement (no kept copy).
    pub fn new(shape: impl Into<Shape>, placement: Placement) -> Self {
        Self { shape: shape.into(), placement, kept_whole: false }
    }

    /// The same spec with a whole copy kept on every rank.
    pub fn kept(self) -> Self {
        Self { kept_whole: true, ..self }
    }
}

/// What a rule may know besides its inputs: the size of the mesh dimension it decides for,
/// whether that dimension runs between processes (the nodes of a mesh of nodes: each
/// collective there a round trip over the network), and the options the caller chose for the
/// ops that follow (Burn's op signatures have no room for them, so the caller sets them on
/// the mesh and the dispatcher hands them to the rule as an argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// Number of ranks (K) along the dimension.
    pub ranks: usize,
    /// The dimension is an outer one, between processes.
    pub between_processes: bool,
    /// How batch-sharded activities meet column-split weights.
    pub exchange: Exchange,
}

#[cfg(test)]
impl Context {
    /// A context of `ranks` ranks of one dimension inside a process, with the default options.
    pub fn new(ranks: usize) -> Self {
        Self { ranks, between_processes: false, exchange: Exchange::default() }
    }
}

/// How the inner op runs once the inputs are in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Every rank runs the inner op on its own pieces.
    Local,
    /// A matmul whose left operand's `dim` is exchanged in rounds by `scheme` (b or c of the
    /// 2014 paper) against column-split weights.
    Exchange {
        /// The scheme.
        scheme: Exchange,
        /// The exchanged dimension of the left operand (rows or contraction).
        dim: usize,
    },
    /// Only `rank` runs the inner op (its shard holds everything the op reads); the result is
    /// broadcast to every rank.
    OnOwner {
        /// The rank that runs it.
        rank: usize,
    },
}

/// What an op does, decided from its inputs' specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    /// The placement each input is brought to (by `collectives::redistribute`) before the op.
    pub inputs: Vec<Placement>,
    /// The placement of the rank-local results.
    pub output: Placement,
    /// How the inner op runs.
    pub run: Run,
    /// A placement the output is brought to right away (per-rank maxima made whole), if any.
    pub then: Option<Placement>,
    /// The op has no rule for these placements and runs on gathered inputs; the ledger counts
    /// a fallback under its name when gathering moved data.
    pub fallback: bool,
}

impl Strategy {
    /// Inputs brought to `inputs`, run rank by rank, results in `output`.
    pub fn local(inputs: Vec<Placement>, output: Placement) -> Self {
        Self { inputs, output, run: Run::Local, then: None, fallback: false }
    }

    /// No rule: all `n` inputs gathered whole, run everywhere, `Replicate` out.
    pub fn gathered(n: usize) -> Self {
        Self {
            inputs: vec![Placement::Replicate; n],
            output: Placement::Replicate,
            run: Run::Local,
            then: None,
            fallback: true,
        }
    }
}

/// `p` with any pending reduction made whole (what an op that is not linear needs).
pub(crate) fn resolved(p: Placement) -> Placement {
    if p.is_partial() {
        Placement::Replicate
    } else {
        p
    }
}
