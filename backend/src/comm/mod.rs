//! The collectives: every collective over any mesh dimension, written once over an axis
//! ([`collectives`]; `along` lays a tensor out along an outer dimension, the nodes of a 2-D
//! mesh, with the same collectives) and the ranks one runs over (`axis`). Every transfer of a
//! tensor's pieces goes through `collectives::route`, which moves them over the mesh's
//! transport (`crate::transport`) and records them in its ledger (`crate::ledger`).

pub(crate) mod along;
mod axis;
pub mod collectives;
