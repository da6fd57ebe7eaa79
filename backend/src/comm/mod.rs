//! Communication: every collective over any mesh dimension ([`collectives`], and along the
//! nodes of a 2-D mesh `over_nodes`), the ranks one runs over (`axis`) and the format of
//! what crosses processes (`wire`).

mod axis;
pub mod collectives;
pub(crate) mod over_nodes;
mod wire;

pub(crate) use axis::Columns;
