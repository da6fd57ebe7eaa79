//! What moved between ranks: what traffic is recorded under, typed (`keys`: a layer's phase and
//! stage, a collective and the mesh dimension it ran over), and the counts themselves
//! (`counts`: bytes and messages per phase and collective, fallbacks per op). Plain values
//! that every layer above records into or reads, so they import nothing of the crate.

pub(crate) mod counts;
mod keys;

pub(crate) use counts::Ledger;
pub use counts::{LedgerSnapshot, Traffic};
pub use keys::{names, Collective, CollectiveKey, Phase, Stage, READS, UNLABELLED};
