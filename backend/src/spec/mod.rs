//! The plain values a distributed tensor and its exchanges are described by: placements and
//! shard sizes (`placement`), the exchange scheme of a matmul against column-split weights
//! (`scheme`), the precision pieces cross the wire in (`precision`). Pure: they import only
//! the ledger's names, so the rules, the mesh and everything above can speak them.

pub(crate) mod placement;
pub(crate) mod precision;
pub(crate) mod scheme;

pub use precision::WirePrecision;
