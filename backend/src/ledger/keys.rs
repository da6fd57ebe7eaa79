//! What the ledger counts traffic under: a [`Phase`] of the step (a layer and a [`Stage`]) and
//! a [`CollectiveKey`] (a [`Collective`] and the mesh dimension it ran over). Typed values, so
//! nothing builds a key by formatting text and nothing parses it back; they become text only
//! where a person or a file reads them (reports, JSON, `Display`), and order by that text, so
//! every report lists entries as it always has.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The phase's text recorded when the caller set none ([`Phase::unlabelled`]).
pub const UNLABELLED: &str = "-";

/// The phase reads of a step's figures are recorded under ([`Phase::reads`]): a training
/// loop's loss and correct count read back, traffic apart from the steps'.
pub const READS: &str = "reads";

/// The kinds of collective the ledger counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Collective {
    /// [`crate::comm::collectives::all_gather`].
    AllGather,
    /// [`crate::comm::collectives::reduce_scatter`].
    ReduceScatter,
    /// [`crate::comm::collectives::all_reduce`].
    AllReduce,
    /// [`crate::comm::collectives::broadcast`].
    Broadcast,
    /// [`crate::comm::collectives::send`].
    Send,
}

impl Collective {
    /// Every collective.
    pub const ALL: [Collective; 5] = [
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllReduce,
        Collective::Broadcast,
        Collective::Send,
    ];

    /// The collective's name in reports (`all_gather`, ...: [`names`]).
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllGather => names::ALL_GATHER,
            Collective::ReduceScatter => names::REDUCE_SCATTER,
            Collective::AllReduce => names::ALL_REDUCE,
            Collective::Broadcast => names::BROADCAST,
            Collective::Send => names::SEND,
        }
    }

    /// The collective called `name`.
    pub fn named(name: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == name)
    }

    /// This collective along the mesh dimension called `axis` (the outer dimension of a 2-D
    /// mesh), as distinct from the same collective among a mesh's own ranks.
    pub fn over(self, axis: &str) -> CollectiveKey {
        CollectiveKey { collective: self, over: Some(axis.to_string()) }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A collective and the mesh dimension it ran over: `over` is `None` among a mesh's own ranks,
/// the dimension's name along the outer dimension of a 2-D mesh. Text: `all_gather`,
/// `all_reduce[node]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CollectiveKey {
    /// Which collective.
    pub collective: Collective,
    /// The mesh dimension it ran along, where it is not the mesh's own ranks.
    pub over: Option<String>,
}

impl CollectiveKey {
    /// The key's text, byte by byte (what it orders by).
    fn text_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let over =
            self.over.iter().flat_map(|axis| std::iter::once(b'[').chain(axis.bytes()).chain(std::iter::once(b']')));
        self.collective.name().bytes().chain(over)
    }

    /// The key of a report's text (`all_reduce[node]`), if it names a collective.
    pub fn parse(text: &str) -> Option<CollectiveKey> {
        match text.strip_suffix(']').and_then(|t| t.split_once('[')) {
            Some((name, axis)) => Some(Collective::named(name)?.over(axis)),
            None => Some(Collective::named(text)?.into()),
        }
    }
}

impl From<Collective> for CollectiveKey {
    fn from(collective: Collective) -> Self {
        CollectiveKey { collective, over: None }
    }
}

impl fmt::Display for CollectiveKey {
    /// The key's text, padded as the formatter asks (`{:<15}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.over {
            Some(axis) => f.pad(&format!("{}[{axis}]", self.collective.name())),
            None => f.pad(self.collective.name()),
        }
    }
}

impl Ord for CollectiveKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.text_bytes().cmp(other.text_bytes())
    }
}

impl PartialOrd for CollectiveKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq<str> for CollectiveKey {
    fn eq(&self, text: &str) -> bool {
        self.text_bytes().eq(text.bytes())
    }
}

impl PartialEq<&str> for CollectiveKey {
    fn eq(&self, text: &&str) -> bool {
        self == *text
    }
}

/// The stages of a training step, in the order a step runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// The layer's forward pass.
    Forward,
    /// The layer's backward pass.
    Backward,
    /// Its parameters' gradient sums.
    Sync,
}

impl Stage {
    /// Every stage, in the order a step runs them.
    pub const ALL: [Stage; 3] = [Stage::Forward, Stage::Backward, Stage::Sync];

    /// The stage's name in reports (`forward`, `backward`, `sync`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Forward => "forward",
            Stage::Backward => "backward",
            Stage::Sync => "sync",
        }
    }

    /// The stage called `name`.
    pub fn named(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Where in a step traffic happened: a layer (whatever the caller names: `conv3`, `net.fc6`,
/// `loss`) and, in a training step, its [`Stage`]. A label of the caller's own has no stage.
/// Text: `fc6:forward`, or the layer alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Phase {
    /// The layer (or the caller's own label).
    pub layer: String,
    /// The stage of the step, where the phase is one.
    pub stage: Option<Stage>,
}

impl Phase {
    /// `layer` in `stage`.
    pub fn of(layer: &str, stage: Stage) -> Phase {
        Phase { layer: layer.to_string(), stage: Some(stage) }
    }

    /// A label of the caller's own, without a stage.
    pub fn label(label: &str) -> Phase {
        Phase { layer: label.to_string(), stage: None }
    }

    /// What traffic is recorded under when no phase is set ([`crate::UNLABELLED`]).
    pub fn unlabelled() -> Phase {
        Phase::label(UNLABELLED)
    }

    /// What reads of a step's figures are recorded under ([`READS`]; see
    /// [`crate::StepMesh::reading`]).
    pub fn reads() -> Phase {
        Phase::label(READS)
    }

    /// Whether this is [`Phase::reads`].
    pub fn is_reads(&self) -> bool {
        self.stage.is_none() && self.layer == READS
    }

    /// The phase a report's text names: `layer:stage` where the part after the last `:` is a
    /// stage, otherwise a label of the caller's own (the inverse of `Display`).
    pub fn parse(text: &str) -> Phase {
        match text.rsplit_once(':').and_then(|(layer, stage)| Some((layer, Stage::named(stage)?))) {
            Some((layer, stage)) => Phase::of(layer, stage),
            None => Phase::label(text),
        }
    }

    /// The phase's text, byte by byte (what it orders by).
    fn text_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let stage = self.stage.iter().flat_map(|s| std::iter::once(b':').chain(s.name().bytes()));
        self.layer.bytes().chain(stage)
    }
}

impl From<&str> for Phase {
    fn from(text: &str) -> Self {
        Phase::parse(text)
    }
}

impl From<String> for Phase {
    fn from(text: String) -> Self {
        Phase::parse(&text)
    }
}

impl From<&String> for Phase {
    fn from(text: &String) -> Self {
        Phase::parse(text)
    }
}

impl fmt::Display for Phase {
    /// The phase's text, padded as the formatter asks (`{:>6}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stage {
            Some(stage) => f.pad(&format!("{}:{}", self.layer, stage.name())),
            None => f.pad(&self.layer),
        }
    }
}

impl Ord for Phase {
    fn cmp(&self, other: &Self) -> Ordering {
        self.text_bytes().cmp(other.text_bytes())
    }
}

impl PartialOrd for Phase {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq<str> for Phase {
    fn eq(&self, text: &str) -> bool {
        self.text_bytes().eq(text.bytes())
    }
}

impl PartialEq<&str> for Phase {
    fn eq(&self, text: &&str) -> bool {
        self == *text
    }
}

/// Collective names as they appear in the ledger.
pub mod names {
    /// [`crate::comm::collectives::all_gather`].
    pub const ALL_GATHER: &str = "all_gather";
    /// [`crate::comm::collectives::reduce_scatter`].
    pub const REDUCE_SCATTER: &str = "reduce_scatter";
    /// [`crate::comm::collectives::all_reduce`].
    pub const ALL_REDUCE: &str = "all_reduce";
    /// [`crate::comm::collectives::broadcast`].
    pub const BROADCAST: &str = "broadcast";
    /// [`crate::comm::collectives::send`].
    pub const SEND: &str = "send";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn text_round_trips_and_orders_as_text() {
        let phases =
            ["fc6:forward", "fc6.1:sync", "fc6", "conv3:backward", "-", "a:b", "x:forward:sync", "loss:backward"];
        for text in phases {
            let phase = Phase::parse(text);
            assert_eq!(phase.to_string(), text);
            assert!(phase == text, "{text}");
        }
        assert_eq!(Phase::parse("fc6:forward"), Phase::of("fc6", Stage::Forward));
        assert_eq!(Phase::parse("a:b"), Phase::label("a:b"));
        let typed: Vec<String> =
            phases.iter().map(|t| Phase::parse(t)).collect::<BTreeSet<_>>().iter().map(|p| p.to_string()).collect();
        let text: Vec<String> = phases.iter().map(|t| t.to_string()).collect::<BTreeSet<_>>().into_iter().collect();
        assert_eq!(typed, text, "phases order as their text");

        let keys = ["all_reduce[node]", "all_reduce", "all_gather[node]", "send", "broadcast", "reduce_scatter[x]"];
        for text in keys {
            let key = CollectiveKey::parse(text).unwrap();
            assert_eq!(key.to_string(), text);
            assert!(key == text, "{text}");
        }
        assert_eq!(CollectiveKey::parse("all_reduce[node]"), Some(Collective::AllReduce.over("node")));
        assert_eq!(CollectiveKey::parse("gossip"), None);
        let typed: Vec<String> = keys
            .iter()
            .map(|t| CollectiveKey::parse(t).unwrap())
            .collect::<BTreeSet<_>>()
            .iter()
            .map(|k| k.to_string())
            .collect();
        let text: Vec<String> = keys.iter().map(|t| t.to_string()).collect::<BTreeSet<_>>().into_iter().collect();
        assert_eq!(typed, text, "collectives order as their text");
    }
}
