//! The analytic communication of one synchronous training step (softmax head, f32): bytes and
//! messages per layer, phase (forward, backward, gradient sync) and collective, derived from
//! the architecture, the plan, the device count, the batch and the exchange scheme alone. It
//! follows `Hybrid`'s rules (backend/README.md) and its cost model (bytes that land on another
//! rank; one message per piece sent), so a real step's ledger must equal it exactly (tested).
//!
//! Modelled: per layer, conv stages that are data-parallel (weights Replicate, batch shards) or
//! channel-split (filters Shard(0)) where each rank's filters read only its own channels
//! (grouped convs with a multiple of K groups, normalisation confined to towers) or gather
//! them (ungrouped convs); FC layers that are data-parallel or split by columns. Anything else
//! (e.g. a normalisation that spans the ranks' channel slices) is reported as not modelled.

use serde::Serialize;

use owt_hybrid::{Exchange, Placement};
use owt_models::Architecture;

use crate::error::OwtError;
use crate::parallel::plan::Plan;

/// Bytes of one float or int element (f32; Burn's default int is i32).
const ELEM: u64 = 4;

/// One entry of the plan: what one collective moves in one phase of one layer (all of the
/// layer's tensors together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerTraffic {
    /// Layer (`conv1`..`conv5`, `fc6`..`fc8`, `loss`).
    pub layer: String,
    /// `forward`, `backward` or `sync`.
    pub phase: String,
    /// Collective as the ledger names it.
    pub collective: String,
    /// Bytes received by ranks from other ranks.
    pub bytes: u64,
    /// Messages (pieces sent from one rank to another).
    pub messages: u64,
}

/// The communication of one training step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommPlan {
    /// Sum of every entry's bytes.
    pub total_bytes: u64,
    /// Sum of every entry's messages.
    pub total_messages: u64,
    /// Entries in layer order (forward order of the network, then the loss).
    pub layers: Vec<LayerTraffic>,
}

impl CommPlan {
    /// Bytes and messages of one (layer, phase, collective), 0 if absent.
    pub fn get(&self, layer: &str, phase: &str, collective: &str) -> (u64, u64) {
        self.layers
            .iter()
            .filter(|t| t.layer == layer && t.phase == phase && t.collective == collective)
            .fold((0, 0), |(b, m), t| (b + t.bytes, m + t.messages))
    }
}

/// The message and byte counts of the collectives, as `owt_hybrid::collectives` moves them.
struct Costs {
    k: u64,
}

impl Costs {
    /// all_gather of pieces totalling `elements`: every rank receives every other rank's piece.
    fn all_gather(&self, elements: u64) -> (u64, u64) {
        ((self.k - 1) * elements * ELEM, self.k * (self.k - 1))
    }

    /// all_reduce of `elements`: a ring (reduce-scatter of the flat tensor, then all_gather)
    /// when every rank gets a slice, else every summand sent whole to every other rank.
    fn all_reduce(&self, elements: u64) -> (u64, u64) {
        let k = self.k;
        if elements < k {
            return (k * (k - 1) * elements * ELEM, k * (k - 1));
        }
        (2 * (k - 1) * elements * ELEM, 2 * k * (k - 1))
    }

    /// reduce_scatter of a tensor of `elements` onto a dimension of length `len`.
    fn reduce_scatter(&self, elements: u64, len: u64) -> (u64, u64) {
        ((self.k - 1) * elements * ELEM, (self.k - 1) * len.min(self.k))
    }

    /// The exchange of an operand sharded on a dimension of length `len` (`elements` in all)
    /// by `scheme`: a = all_gather (K(K-1) messages); b and c = their non-empty pieces, each
    /// sent to the other K-1 ranks.
    fn exchange(&self, scheme: Exchange, elements: u64, len: u64) -> (&'static str, u64, u64) {
        let bytes = (self.k - 1) * elements * ELEM;
        (scheme.collective(), bytes, self.pieces(scheme, len) * (self.k - 1))
    }

    /// Pieces an exchange sends per destination, in closed form. Rank r holds n_r rows of
    /// `len` (q + 1 for the first `len mod K` ranks, q = len div K for the rest). a: one piece
    /// per rank; b: one per rank that holds rows, min(len, K); c: each rank's rows cut in K
    /// slices, of which min(n_r, K) are non-empty.
    fn pieces(&self, scheme: Exchange, len: u64) -> u64 {
        let (k, q, rem) = (self.k, len / self.k, len % self.k);
        match scheme {
            Exchange::AllGather => k,
            Exchange::Broadcast => len.min(k),
            Exchange::Slices => rem * (q + 1).min(k) + (k - rem) * q.min(k),
        }
    }
}

/// Where a step's activations are split, as the analytic walk tracks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Whole on every rank.
    Whole,
    /// Batch shards.
    Batch,
    /// Channel (or feature) slices.
    Channels,
}

struct Builder {
    costs: Costs,
    entries: Vec<LayerTraffic>,
}

impl Builder {
    fn add(&mut self, layer: &str, phase: &str, collective: &str, (bytes, messages): (u64, u64)) {
        if bytes == 0 && messages == 0 {
            return;
        }
        // One entry per (layer, phase, collective), as the ledger keeps them.
        if let Some(t) =
            self.entries.iter_mut().find(|t| t.layer == layer && t.phase == phase && t.collective == collective)
        {
            t.bytes += bytes;
            t.messages += messages;
            return;
        }
        self.entries.push(LayerTraffic {
            layer: layer.into(),
            phase: phase.into(),
            collective: collective.into(),
            bytes,
            messages,
        });
    }

    fn sync(&mut self, layer: &str, tensors: &[u64]) {
        for &n in tensors {
            let cost = self.costs.all_reduce(n);
            self.add(layer, "sync", "all_reduce", cost);
        }
    }
}

fn not_modelled(what: String) -> OwtError {
    OwtError::input(format!("owt plan does not model {what}"))
}

/// The communication of one synchronous step of `arch` under `plan` on `ranks` ranks with a
/// global batch of `batch` images and activity exchange `scheme`.
pub fn comm_plan(
    arch: &Architecture,
    plan: &Plan,
    ranks: usize,
    batch: usize,
    scheme: Exchange,
) -> Result<CommPlan, OwtError> {
    plan.check_run(arch, ranks, batch)?;
    let profile = arch.profile().map_err(|e| OwtError::input(e.0))?;
    let k = ranks as u64;
    let n = batch as u64;
    let mut b = Builder { costs: Costs { k }, entries: Vec::new() };
    let mut split = match plan.input {
        Placement::Replicate => Split::Whole,
        Placement::Shard(0) => Split::Batch,
        other => return Err(not_modelled(format!("an input placed {other}"))),
    };
    // The previous layer, if any: a layer after the first passes a gradient back.
    let mut previous: Option<String> = None;
    let mut in_shape: Vec<usize> = arch.input.to_vec();
    let mut in_channels = arch.input[0];
    for (i, conv) in arch.convs.iter().enumerate() {
        let name = format!("conv{}", i + 1);
        let w = plan.placement_of(&format!("{name}.weight"));
        let bias = plan.placement_of(&format!("{name}.bias"));
        let x_elems = n * in_shape.iter().product::<usize>() as u64;
        let weight_elems = (conv.filters * (in_channels / conv.groups) * conv.kernel * conv.kernel) as u64;
        match (split, w, bias) {
            (Split::Batch, Placement::Replicate, Placement::Replicate) => {
                b.sync(&name, &[weight_elems, conv.filters as u64]);
            }
            (Split::Whole, Placement::Shard(0), Placement::Shard(0)) if i == 0 => split = Split::Channels,
            (Split::Channels, Placement::Shard(0), Placement::Shard(0)) if conv.groups > 1 => {
                // Tower-local (groups a multiple of K, checked by the plan): no traffic.
            }
            (Split::Channels, Placement::Shard(0), Placement::Shard(0)) => {
                let forward = b.costs.all_gather(x_elems);
                b.add(&name, "forward", "all_gather", forward);
                b.add(&name, "backward", "all_gather", forward);
                let grad = b.costs.reduce_scatter(x_elems, in_channels as u64);
                if previous.is_some() {
                    b.add(&name, "backward", "reduce_scatter", grad);
                }
            }
            _ => {
                return Err(not_modelled(format!(
                    "{name} with its input split by {split:?}, weight {w} and bias {bias}"
                )))
            }
        }
        if split == Split::Channels && arch.lrn_after[i] && arch.towers % ranks != 0 {
            return Err(not_modelled(format!(
                "response normalisation across {ranks} ranks' channel slices ({} towers)",
                arch.towers
            )));
        }
        in_shape = profile
            .layers
            .iter()
            .take_while(|l| l.name != format!("conv{}", i + 2) && !l.name.starts_with("fc"))
            .last()
            .map(|l| l.output_shape.clone())
            .expect("the profile lists every conv stage");
        in_channels = conv.filters;
        previous = Some(name);
    }
    let features = arch.fc_input_features().map_err(|e| OwtError::input(e.0))? as u64;
    let widths = [features, arch.hidden[0] as u64, arch.hidden[1] as u64, arch.classes as u64];
    for j in 0..3 {
        let name = format!("fc{}", j + 6);
        let (fan_in, fan_out) = (widths[j], widths[j + 1]);
        let x_elems = n * fan_in;
        if arch.dropout_before_fc[j] && arch.dropout > 0.0 {
            // The mask is drawn on rank 0 and broadcast (replicas must agree).
            b.add(&name, "forward", "broadcast", ((k - 1) * x_elems * ELEM, k - 1));
        }
        let w = plan.placement_of(&format!("{name}.weight"));
        let bias = plan.placement_of(&format!("{name}.bias"));
        match (split, w, bias) {
            (Split::Batch, Placement::Replicate, Placement::Replicate) => b.sync(&name, &[fan_in * fan_out, fan_out]),
            (Split::Batch | Split::Channels, Placement::Shard(1), Placement::Shard(0)) => {
                // The operand's sharded dimension: the batch, or the features.
                let len = if split == Split::Batch { n } else { fan_in };
                let (collective, bytes, messages) = b.costs.exchange(scheme, x_elems, len);
                b.add(&name, "forward", collective, (bytes, messages));
                // The weight gradient exchanges the same operand again.
                b.add(&name, "backward", collective, (bytes, messages));
                // The input's gradient arrives as a pending sum: reduce-scattered to the
                // input's layout at the layer boundary.
                let grad = b.costs.reduce_scatter(x_elems, len);
                if previous.is_some() {
                    b.add(&name, "backward", "reduce_scatter", grad);
                }
                split = Split::Channels;
            }
            _ => {
                return Err(not_modelled(format!(
                    "{name} with its input split by {split:?}, weight {w} and bias {bias}"
                )))
            }
        }
        previous = Some(name);
    }
    loss(&mut b, split, plan.input, n);
    let order = |t: &LayerTraffic| {
        let layer = ["conv1", "conv2", "conv3", "conv4", "conv5", "fc6", "fc7", "fc8", "loss"]
            .iter()
            .position(|l| *l == t.layer)
            .unwrap_or(usize::MAX);
        let phase = ["forward", "backward", "sync"].iter().position(|p| *p == t.phase).unwrap_or(usize::MAX);
        (layer, phase)
    };
    b.entries.sort_by_key(|t| order(t));
    let total_bytes = b.entries.iter().map(|t| t.bytes).sum();
    let total_messages = b.entries.iter().map(|t| t.messages).sum();
    Ok(CommPlan { total_bytes, total_messages, layers: b.entries })
}

/// The softmax cross-entropy and the accuracy count on logits split as `split`, with labels
/// placed as `labels`. The step leaves the loss value and the correct count on the device as
/// pending sums; the training loop reads them every few steps (two all-reduces of one number
/// each per read), which is not part of a step's traffic.
fn loss(b: &mut Builder, split: Split, labels: Placement, n: u64) {
    let k = b.costs.k;
    match split {
        Split::Batch | Split::Whole => {
            if labels != Placement::Replicate {
                // The gather's backward scatters into a whole tensor: the labels are gathered.
                let labels = b.costs.all_gather(n);
                b.add("loss", "backward", "all_gather", labels);
            }
        }
        Split::Channels => {
            // Class-split logits: the row max and the sum of exponentials are all-reduced,
            // each rank picks the target logits in its columns (a pending sum), the predicted
            // class comes from every rank's best value and index (K candidates per image).
            let mut gathered = (2 * k * (k - 1) * n * ELEM, 2 * k * (k - 1));
            let vector = b.costs.all_reduce(n);
            if labels != Placement::Replicate {
                let labels = b.costs.all_gather(n);
                gathered = (gathered.0 + labels.0, gathered.1 + labels.1);
                b.add("loss", "backward", "all_gather", labels);
            }
            b.add("loss", "forward", "all_gather", gathered);
            b.add("loss", "forward", "all_reduce", (2 * vector.0, 2 * vector.1));
            b.add("loss", "backward", "all_reduce", vector);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_pieces_follow_the_schemes_by_hand() {
        // 10 rows on 4 ranks: 3, 3, 2, 2 rows. a and b send one piece per rank; c cuts each
        // rank's rows in 4 slices: 3 + 3 + 2 + 2 non-empty.
        let c = Costs { k: 4 };
        assert_eq!(c.pieces(Exchange::AllGather, 10), 4);
        assert_eq!(c.pieces(Exchange::Broadcast, 10), 4);
        assert_eq!(c.pieces(Exchange::Slices, 10), 10);
        // 64 rows on 4 ranks: 16 each, every slice non-empty: 16 pieces.
        assert_eq!(c.pieces(Exchange::Slices, 64), 16);
        // 3 ranks, 10 rows: 4, 3, 3 -> slices 3 + 3 + 3.
        assert_eq!(Costs { k: 3 }.pieces(Exchange::Slices, 10), 9);
        // 2 ranks, 3 rows: 2, 1 -> 2 + 1.
        assert_eq!(Costs { k: 2 }.pieces(Exchange::Slices, 3), 3);
        assert_eq!(Costs { k: 2 }.all_reduce(1), (8, 2));
        assert_eq!(Costs { k: 4 }.all_reduce(8), (2 * 3 * 8 * 4, 24));
    }
}
