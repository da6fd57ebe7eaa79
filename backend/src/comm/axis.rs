//! The ranks one collective runs over, seen from one process: a mesh's own ranks (its one
//! dimension), or one column of a 2-D mesh (the ranks of the same local index on every
//! node). [`super::collectives::route`] moves pieces along either, with one wire format and
//! one way of counting what moved, and the collectives over pieces (`gather_pieces`,
//! `reduce_scatter_pieces`, `all_reduce_pieces`) take the axis, so a collective is written
//! once for every dimension.

use std::ops::Range;
use std::sync::Arc;

use burn::tensor::backend::DeviceOps;

use crate::mesh::MeshDevice;
use crate::spec::WirePrecision;
use crate::transport::process_group::ProcessGroup;
use crate::transport::Transport;

/// Ranks of one collective: which this process holds, which process holds each, and how a
/// piece reaches a rank of this process. Ranks are numbered over the whole axis's mesh, so a
/// piece's destination means the same on every process.
pub(crate) trait Axis<D> {
    /// The ranks this process holds, as indices into its pieces (`[r - start]`).
    fn local_ranks(&self) -> Range<usize>;
    /// The process holding `rank` (its index in [`Axis::group`]).
    fn process_of(&self, rank: usize) -> usize;
    /// The processes the axis spans.
    fn group(&self) -> &Arc<dyn ProcessGroup>;
    /// The inner device of `rank`, one of this process's.
    fn rank_device(&self, rank: usize) -> &D;
    /// How a piece moves between two of this process's ranks.
    fn transport(&self) -> Transport;
    /// Called after a device-to-device transfer from `source` (the mesh's send fence).
    fn after_send(&self, source: &D);
    /// What a failed exchange names: the group and the axis.
    fn describe(&self) -> String;
    /// The ranks one collective joins `rank` with, itself included, in the order their pieces
    /// are concatenated and reduced: all the mesh's ranks, or the column of `rank`.
    fn peers(&self, rank: usize) -> Vec<usize>;
    /// Where `rank` stands among its [`Axis::peers`].
    fn position(&self, rank: usize) -> usize;
    /// The precision float pieces cross in.
    fn wire(&self) -> WirePrecision;

    /// Whether `rank` is one of this process's.
    fn is_local(&self, rank: usize) -> bool {
        self.local_ranks().contains(&rank)
    }
}

impl<D: DeviceOps> Axis<D> for MeshDevice<D> {
    fn local_ranks(&self) -> Range<usize> {
        MeshDevice::local_ranks(self)
    }
    fn process_of(&self, rank: usize) -> usize {
        MeshDevice::process_of(self, rank)
    }
    fn group(&self) -> &Arc<dyn ProcessGroup> {
        MeshDevice::group(self)
    }
    fn rank_device(&self, rank: usize) -> &D {
        MeshDevice::rank_device(self, rank)
    }
    fn transport(&self) -> Transport {
        MeshDevice::transport(self)
    }
    fn after_send(&self, source: &D) {
        MeshDevice::after_send(self, source)
    }
    fn describe(&self) -> String {
        format!("{}, mesh of {} ranks", self.group().describe(), self.size())
    }
    fn peers(&self, _rank: usize) -> Vec<usize> {
        (0..self.size()).collect()
    }
    fn position(&self, rank: usize) -> usize {
        rank
    }
    fn wire(&self) -> WirePrecision {
        MeshDevice::wire(self)
    }
}

/// One column of an N x L mesh seen from node `node`: global rank `n * L + l` is node n's
/// local rank l, held by process (node) n; this node holds `node * L..(node + 1) * L`. The
/// collectives over the nodes send only between ranks of one local index.
pub(crate) struct Columns<'a, D> {
    /// The group of the nodes (one process, or a thread standing in for one, each).
    pub nodes: &'a Arc<dyn ProcessGroup>,
    /// This node's local mesh (its L ranks' devices).
    pub local: &'a MeshDevice<D>,
    /// The name of the dimension, for messages.
    pub name: &'a str,
}

impl<D: DeviceOps> Columns<'_, D> {
    /// The global rank of node `node`'s local rank `l`.
    pub fn rank_at(&self, node: usize, l: usize) -> usize {
        node * self.local.size() + l
    }
}

impl<D: DeviceOps> Axis<D> for Columns<'_, D> {
    fn local_ranks(&self) -> Range<usize> {
        let l = self.local.size();
        self.nodes.rank() * l..(self.nodes.rank() + 1) * l
    }
    fn process_of(&self, rank: usize) -> usize {
        rank / self.local.size()
    }
    fn group(&self) -> &Arc<dyn ProcessGroup> {
        self.nodes
    }
    fn rank_device(&self, rank: usize) -> &D {
        self.local.rank_device(rank % self.local.size())
    }
    fn transport(&self) -> Transport {
        self.local.transport()
    }
    fn after_send(&self, source: &D) {
        self.local.after_send(source)
    }
    fn describe(&self) -> String {
        format!("{}, over the {} dimension", self.nodes.describe(), self.name)
    }
    fn peers(&self, rank: usize) -> Vec<usize> {
        let l = rank % self.local.size();
        (0..self.nodes.size()).map(|n| self.rank_at(n, l)).collect()
    }
    fn position(&self, rank: usize) -> usize {
        rank / self.local.size()
    }
    fn wire(&self) -> WirePrecision {
        self.local.wire()
    }
}
