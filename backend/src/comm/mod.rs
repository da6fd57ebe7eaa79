//! Communication: every collective over any mesh dimension, written once over an axis
//! ([`collectives`]; `along` lays a tensor out along an outer dimension, the nodes of a 2-D
//! mesh, with the same collectives), the ranks one runs over (`axis`), how pieces travel
//! (`transport`, the processes' [`process_group`], the format of what crosses them: `wire`)
//! and what moved (`ledger`); NCCL on CUDA devices ([`nccl`]).

pub(crate) mod along;
mod axis;
pub mod collectives;
pub(crate) mod ledger;
mod ledger_key;
pub mod nccl;
mod precision;
pub mod process_group;
pub(crate) mod transport;
mod wire;

pub use ledger_key::{Collective, CollectiveKey, Phase, Stage};
pub use precision::WirePrecision;
