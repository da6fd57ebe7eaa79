//! Deciding: every op's placement rule as a pure function from its inputs' specs (global
//! shape, placement, and whether a whole copy is kept besides) to a [`Strategy`]: the
//! placement each input is brought to, the placement of the rank-local results, and how the
//! op runs. No tensors, no mesh and no collectives here; `dispatch.rs` does what a strategy
//! says. Rules are registered once per op family (one file each) and serve float, int and bool
//! alike: the kind never changes a rule, only whether an op is linear does (see
//! [`Linearity`]).
//!
//! Written after PyTorch DTensor's sharding propagation (decide from specs, then one dispatcher
//! redistributes and runs the local op) in the vocabulary of this crate's placements.

mod conv;
mod elementwise;
mod indexed;
mod matmul;
mod reduce;
mod shape;
mod strategy;
pub(crate) mod table;

pub(crate) use conv::{batch_conv, batch_conv_grad, conv, pool, pool_backward, ConvLayout, ConvPass};
pub(crate) use elementwise::{elementwise, elementwise_except, Linearity};
pub(crate) use indexed::{
    gather, scatter, select, select_add, slice_assign, slice_assign_part, slice_rows, GatherRule,
};
pub(crate) use matmul::matmul;
pub(crate) use reduce::{arg_extreme, reduce_all, reduce_dim, ArgRule, ShardedReduce};
pub(crate) use shape::{
    cat, expand, flip, localise as localise_slices, permute, reshape, slice, unfold, within_one_shard,
};
pub(crate) use strategy::{resolved, Context, Run, Spec, Strategy};
