//! Parallel plans: where each parameter of a model lives on a mesh and how the input batch is
//! laid out. The plan is the one place parallelism is declared (cuda-convnet2's layer config);
//! the model knows nothing of it and the backend only follows placements. Parameters are named
//! by their dotted path in the module (`conv3.weight`, `fc6.bias`), so a plan works for any
//! Burn module whose layers it names.

use burn::backend::Autodiff;
use burn::module::Module;
use burn::prelude::*;
use serde::{Deserialize, Serialize};

use crate::api::distributed::Distributed;
use crate::backend::Hybrid;
use crate::parallel::params::{parameter_paths, place_parameters};
use crate::spec::placement::Placement;

/// Why a plan cannot run as asked: one line naming what was expected and what was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

impl PlanError {
    fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlanError {}

/// The built-in plans, named by the layers of a convolutional network (`conv*` and `fc*`
/// parameters, as in the AlexNet family): `--plan` in the owt tool.
///
/// ```
/// use owt_hybrid::{Placement, PlanKind};
///
/// let plan: PlanKind = "weird-trick".parse().unwrap();
/// let plan = plan.plan();
/// assert_eq!(plan.placement_of("conv3.weight"), Placement::Replicate); // data parallel
/// assert_eq!(plan.placement_of("fc6.weight"), Placement::Shard(1)); // model parallel
/// assert_eq!(plan.input, Placement::Shard(0)); // the batch split by rows
/// assert!(plan.check_mesh(4, 2).unwrap_err().to_string().contains("--batch must be at least"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanKind {
    /// Krizhevsky 2014: conv layers data-parallel (params Replicate, input Shard(0)), FC layers
    /// model-parallel (weights Shard(1) by output columns, biases Shard(0)).
    WeirdTrick,
    /// Krizhevsky et al. 2012, exactly 2 ranks on a two-tower model: each tower's filters of
    /// every conv layer on its own rank (Shard(0)), FC weights split by columns; the towers
    /// meet only at conv3 and the FC layers. Input Replicate.
    TwoTower,
    /// Pure data parallelism: every parameter Replicate, input Shard(0).
    DataParallel,
    /// Pure model parallelism: every weight split (conv filters Shard(0), FC columns Shard(1),
    /// biases Shard(0)), input Replicate.
    ModelParallel,
}

impl PlanKind {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            PlanKind::WeirdTrick => "weird-trick",
            PlanKind::TwoTower => "two-tower",
            PlanKind::DataParallel => "data-parallel",
            PlanKind::ModelParallel => "model-parallel",
        }
    }

    /// Every built-in plan.
    pub const ALL: [PlanKind; 4] =
        [PlanKind::WeirdTrick, PlanKind::TwoTower, PlanKind::DataParallel, PlanKind::ModelParallel];

    /// The plan itself.
    pub fn plan(self) -> Plan {
        use Placement::*;
        let rule = |pattern: &str, placement| PlanRule { pattern: pattern.to_string(), placement };
        let split_fc = vec![rule("fc*.weight", Shard(1)), rule("fc*.bias", Shard(0))];
        let split_all = {
            let mut rules = vec![rule("conv*.weight", Shard(0)), rule("conv*.bias", Shard(0))];
            rules.extend(split_fc.clone());
            rules
        };
        match self {
            PlanKind::WeirdTrick => Plan {
                name: self.name().into(),
                rules: split_fc,
                default: Replicate,
                input: Shard(0),
                ranks: None,
                towers: None,
                batch_stats: Default::default(),
            },
            PlanKind::TwoTower => Plan {
                name: self.name().into(),
                rules: split_all,
                default: Replicate,
                input: Replicate,
                ranks: Some(2),
                towers: Some(2),
                batch_stats: Default::default(),
            },
            PlanKind::DataParallel => Plan {
                name: self.name().into(),
                rules: Vec::new(),
                default: Replicate,
                input: Shard(0),
                ranks: None,
                towers: None,
                batch_stats: Default::default(),
            },
            PlanKind::ModelParallel => Plan {
                name: self.name().into(),
                rules: split_all,
                default: Replicate,
                input: Replicate,
                ranks: None,
                towers: None,
                batch_stats: Default::default(),
            },
        }
    }
}

impl std::str::FromStr for PlanKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlanKind::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            format!("unknown plan {s:?}: expected one of {}", PlanKind::ALL.map(PlanKind::name).join(", "))
        })
    }
}

/// One line of a plan: parameters whose dotted path matches `pattern` (`*` matches any run of
/// characters, e.g. `fc*.weight`; see [`pattern_matches`]) get `placement`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// A plan file's misspelt key (`"rank": 3`) is refused naming it and the known ones.
#[serde(deny_unknown_fields)]
pub struct PlanRule {
    /// Path pattern, e.g. `conv3.weight` or `fc*.bias`.
    pub pattern: String,
    /// Where matching parameters live.
    pub placement: Placement,
}

/// A parallel plan: a placement per parameter (first matching rule, else `default`), the
/// input batch's placement and what the plan requires of the mesh and the model. Write your
/// own by filling the fields; [`PlanKind::plan`] gives the built-in ones.
///
/// ```
/// use owt_hybrid::{Placement, Plan, PlanRule};
/// // Data-parallel convs, only fc6 model-parallel.
/// let plan = Plan {
///     name: "fc6-split".into(),
///     rules: vec![
///         PlanRule { pattern: "fc6.weight".into(), placement: Placement::Shard(1) },
///         PlanRule { pattern: "fc6.bias".into(), placement: Placement::Shard(0) },
///     ],
///     default: Placement::Replicate,
///     input: Placement::Shard(0),
///     ranks: None,
///     towers: None,
///     batch_stats: Default::default(),
/// };
/// assert_eq!(plan.placement_of("fc6.weight"), Placement::Shard(1));
/// assert_eq!(plan.placement_of("conv1.weight"), Placement::Replicate);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// A plan file's misspelt key (`"rank": 3`) is refused naming it and the known ones.
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Name shown in logs and metrics.
    pub name: String,
    /// Placement rules, first match wins. A rule that matches no parameter is an error.
    pub rules: Vec<PlanRule>,
    /// Placement of parameters no rule matches.
    pub default: Placement,
    /// Placement of the input images and labels (Shard(0): batch shards; Replicate: every
    /// rank sees the whole batch).
    pub input: Placement,
    /// The exact number of ranks the plan needs, if any (two-tower: 2).
    pub ranks: Option<usize>,
    /// The number of towers the model must have, if any (two-tower: 2). The plan cannot see a
    /// module's towers in its parameters: whoever builds the model checks it (owt checks the
    /// AlexNet family's architecture).
    pub towers: Option<usize>,
    /// Whose statistics batch normalisation takes on batch-sharded inputs: the whole batch's
    /// (the default) or each rank's own. Absent from a plan file: the whole batch's.
    #[serde(default, skip_serializing_if = "BatchStats::is_sync")]
    pub batch_stats: BatchStats,
}

/// Whose statistics batch normalisation takes where a plan shards the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchStats {
    /// The whole batch's (as PyTorch's `SyncBatchNorm`): each layer's statistics summed over
    /// the ranks, 2 x channels values each way per layer, and the step equal to one device's.
    #[default]
    Sync,
    /// Each rank's batch shard's own (as DDP's default `BatchNorm2d`): no traffic for the
    /// statistics but the running ones' mean (detached), and a step that depends on the rank
    /// count. The running statistics are the mean over the ranks, equal on every rank.
    Local,
}

impl BatchStats {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            BatchStats::Sync => "sync",
            BatchStats::Local => "local",
        }
    }

    /// Whether this is the default, [`BatchStats::Sync`].
    pub fn is_sync(&self) -> bool {
        *self == BatchStats::Sync
    }
}

impl std::str::FromStr for BatchStats {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [BatchStats::Sync, BatchStats::Local]
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown batch statistics {s:?}: expected sync or local"))
    }
}

/// Whether `path` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, path: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == path,
        Some((head, tail)) => {
            let Some(rest) = path.strip_prefix(head) else { return false };
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))
        }
    }
}

/// Whether `pattern` names the parameter at `path`: the whole path, or its end from a segment
/// boundary on, so a plan written for a model also places that model inside a wrapper
/// (`fc*.weight` names `fc6.weight` and `net.fc6.weight`, not `net.myfc6.weight`).
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    glob(pattern, path) || path.match_indices('.').any(|(i, _)| glob(pattern, &path[i + 1..]))
}

/// Refuses the first rule of `rules` (pattern, placement in words), in a plan named `plan`,
/// that is the first match of none of `params`: every parameter it matches is matched first by
/// an earlier rule, so it can never apply. Names both rules and the parameters each matches.
pub(crate) fn dead_rule<'a>(
    plan: &str,
    rules: impl Iterator<Item = (&'a str, String)>,
    params: &[(String, Vec<usize>)],
) -> Result<(), PlanError> {
    let rules: Vec<(&str, String)> = rules.collect();
    let matching = |pattern: &str| -> Vec<&str> {
        params.iter().map(|(p, _)| p.as_str()).filter(|p| pattern_matches(pattern, p)).collect()
    };
    let listed = |paths: &[&str]| -> String {
        const SHOWN: usize = 6;
        let mut text = paths.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
        if paths.len() > SHOWN {
            text.push_str(&format!(" and {} more", paths.len() - SHOWN));
        }
        text
    };
    for (j, (pattern, placement)) in rules.iter().enumerate() {
        let matched = matching(pattern);
        let earlier = &rules[..j];
        if matched.is_empty() || matched.iter().any(|p| earlier.iter().all(|(e, _)| !pattern_matches(e, p))) {
            continue;
        }
        let shadows: Vec<String> = earlier
            .iter()
            .enumerate()
            .filter(|(_, (e, _))| matched.iter().any(|p| pattern_matches(e, p)))
            .map(|(i, (e, placed))| format!("rule {} {e:?} ({placed}, matching {})", i + 1, listed(&matching(e))))
            .collect();
        let why = match earlier.iter().position(|(e, _)| e == pattern) {
            Some(i) => format!("it repeats the pattern of rule {}", i + 1),
            None => "an earlier rule matches each of its parameters".to_string(),
        };
        return Err(PlanError::new(format!(
            "plan {plan}'s rule {} {pattern:?} ({placement}, matching {}) can never apply: {why}, and the first matching rule wins: {}; put the narrower rule first or remove one",
            j + 1,
            listed(&matched),
            shadows.join(", ")
        )));
    }
    Ok(())
}

impl Plan {
    /// Into how many groups of rows batch normalisation takes its statistics on `ranks` ranks:
    /// 1 unless the plan keeps each rank's own ([`BatchStats::Local`]) on a batch it shards.
    pub fn batch_stat_groups(&self, ranks: usize) -> usize {
        match (self.batch_stats, self.input) {
            (BatchStats::Local, Placement::Shard(0)) => ranks.max(1),
            _ => 1,
        }
    }

    /// Where the parameter at `path` lives under this plan.
    pub fn placement_of(&self, path: &str) -> Placement {
        self.rules.iter().find(|r| pattern_matches(&r.pattern, path)).map(|r| r.placement).unwrap_or(self.default)
    }

    /// Checks the plan against a module's parameters (path, shape) for `ranks` ranks and a
    /// global batch of `batch` images: [`Plan::check_mesh`] and [`Plan::check_params`].
    pub fn check(&self, params: &[(String, Vec<usize>)], ranks: usize, batch: usize) -> Result<(), PlanError> {
        self.check_mesh(ranks, batch)?;
        self.check_params(params, ranks)
    }

    /// Checks what the plan needs of the mesh and the batch alone: at least one rank, the
    /// plan's rank count if it has one, an input either replicated or split along the batch,
    /// and at least one image per rank when the batch is sharded.
    pub fn check_mesh(&self, ranks: usize, batch: usize) -> Result<(), PlanError> {
        if ranks == 0 {
            return Err(PlanError::new("--devices must be at least 1, got 0"));
        }
        if let Some(needed) = self.ranks {
            if needed != ranks {
                return Err(PlanError::new(format!(
                    "plan {} needs exactly {needed} devices, got --devices {ranks}",
                    self.name
                )));
            }
        }
        if !matches!(self.input, Placement::Replicate | Placement::Shard(0)) {
            return Err(PlanError::new(format!(
                "plan {} places the input {}: expected Replicate (every rank the whole batch) or Shard(0) (the batch split over the ranks); the images' other dims and the labels, which have only the batch dim, cannot be split",
                self.name, self.input
            )));
        }
        if matches!(self.input, Placement::Shard(0)) && batch < ranks {
            return Err(PlanError::new(format!(
                "plan {} splits the batch over the devices: --batch must be at least --devices ({ranks}), got {batch}",
                self.name
            )));
        }
        Ok(())
    }

    /// Checks the plan against a module's parameters (path, shape) on `ranks` ranks: every
    /// rule must match a parameter and be the first match of at least one (a rule that an
    /// earlier one shadows, or that repeats an earlier pattern, could never apply), and every
    /// sharded dimension must exist and have at least one entry per rank.
    pub fn check_params(&self, params: &[(String, Vec<usize>)], ranks: usize) -> Result<(), PlanError> {
        for rule in &self.rules {
            if !params.iter().any(|(path, _)| pattern_matches(&rule.pattern, path)) {
                let names: Vec<&str> = params.iter().map(|(p, _)| p.as_str()).collect();
                return Err(PlanError::new(format!(
                    "plan {} places {:?}, which matches no parameter of the model (its parameters: {})",
                    self.name,
                    rule.pattern,
                    names.join(", ")
                )));
            }
        }
        dead_rule(&self.name, self.rules.iter().map(|r| (r.pattern.as_str(), r.placement.to_string())), params)?;
        for (path, shape) in params {
            if let Placement::Shard(d) = self.placement_of(path) {
                match shape.get(d) {
                    None => {
                        return Err(PlanError::new(format!(
                            "plan {} shards {path} on dim {d}, but it has only {} dims ({shape:?})",
                            self.name,
                            shape.len()
                        )))
                    }
                    Some(&len) if len < ranks => {
                        return Err(PlanError::new(format!(
                        "plan {} shards {path} on dim {d} over {ranks} devices, but that dim has only {len} entries",
                        self.name
                    )))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// `module`'s parameters moved to their placements (it must live on the target mesh).
    pub fn apply<IB: Backend, M: Module<Autodiff<Hybrid<IB>>>>(&self, module: M) -> M {
        place_parameters(module, |path, _| self.placement_of(path))
    }

    /// Checks the plan against `module`'s parameters (see [`Plan::check_params`]) and
    /// applies it on its mesh of `ranks` ranks.
    pub fn try_apply<IB: Backend, M: Module<Autodiff<Hybrid<IB>>>>(
        &self,
        module: M,
        ranks: usize,
    ) -> Result<M, PlanError> {
        self.check_params(&parameter_paths(&module), ranks)?;
        Ok(self.apply(module))
    }

    /// A batch of images and labels laid out as the plan's input.
    pub fn place_batch<IB: Backend>(
        &self,
        images: Tensor<Autodiff<Hybrid<IB>>, 4>,
        labels: Tensor<Autodiff<Hybrid<IB>>, 1, Int>,
    ) -> (Tensor<Autodiff<Hybrid<IB>>, 4>, Tensor<Autodiff<Hybrid<IB>>, 1, Int>) {
        (images.distribute(self.input), labels.distribute(self.input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alexnet_like() -> Vec<(String, Vec<usize>)> {
        ["conv1.weight", "conv1.bias", "fc6.weight", "fc6.bias", "fc7.weight", "fc7.bias", "fc8.weight", "fc8.bias"]
            .iter()
            .map(|p| (p.to_string(), vec![8, 8]))
            .collect()
    }

    fn plan_of(rules: &[(&str, Placement)]) -> Plan {
        Plan {
            name: "mine".into(),
            rules: rules.iter().map(|(p, pl)| PlanRule { pattern: p.to_string(), placement: *pl }).collect(),
            ..PlanKind::DataParallel.plan()
        }
    }

    #[test]
    fn a_rule_that_can_never_apply_is_refused_naming_both_rules_and_their_parameters() {
        let params = alexnet_like();
        // Shadowed: the wide glob first takes every parameter the narrow rule names.
        let e = plan_of(&[("fc*.weight", Placement::Shard(1)), ("fc6.weight", Placement::Replicate)])
            .check_params(&params, 2)
            .unwrap_err()
            .to_string();
        for said in [
            "rule 2 \"fc6.weight\" (Replicate, matching fc6.weight)",
            "rule 1 \"fc*.weight\" (Shard(1), matching fc6.weight, fc7.weight, fc8.weight)",
            "first matching rule wins",
            "can never apply",
        ] {
            assert!(e.contains(said), "{said:?} not in {e}");
        }
        // A pattern repeated with another placement.
        let e = plan_of(&[("fc6.bias", Placement::Shard(0)), ("fc6.bias", Placement::Replicate)])
            .check_params(&params, 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("repeats the pattern of rule 1") && e.contains("rule 2 \"fc6.bias\" (Replicate"), "{e}");
        // Shadowed by two earlier rules together, neither alone.
        let e = plan_of(&[
            ("fc6.*", Placement::Replicate),
            ("*.weight", Placement::Shard(1)),
            ("fc6.weight", Placement::Shard(0)),
        ])
        .check_params(&params, 2)
        .unwrap_err()
        .to_string();
        assert!(e.contains("rule 3") && e.contains("rule 1 \"fc6.*\"") && e.contains("rule 2 \"*.weight\""), "{e}");
        // The narrow rule first: each rule is the first match of something; accepted.
        plan_of(&[("fc6.weight", Placement::Replicate), ("fc*.weight", Placement::Shard(1))])
            .check_params(&params, 2)
            .unwrap();
        // Overlapping but each with a parameter of its own: accepted.
        plan_of(&[("fc6.*", Placement::Replicate), ("*.bias", Placement::Shard(0))]).check_params(&params, 2).unwrap();
        // Every built-in plan has only live rules.
        for kind in PlanKind::ALL {
            let plan = kind.plan();
            dead_rule(&plan.name, plan.rules.iter().map(|r| (r.pattern.as_str(), r.placement.to_string())), &params)
                .unwrap();
        }
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob("fc*.weight", "fc6.weight"));
        assert!(!glob("fc*.weight", "fc6.bias"));
        assert!(glob("*", "conv1.weight"));
        assert!(glob("conv3.weight", "conv3.weight"));
        assert!(!glob("conv3.weight", "conv3.weights"));
        assert!(glob("*.bias", "fc8.bias"));
    }

    #[test]
    fn patterns_name_whole_paths_or_their_ends_at_a_segment_boundary() {
        assert!(pattern_matches("fc*.weight", "fc6.weight"));
        assert!(pattern_matches("fc*.weight", "net.fc6.weight"));
        assert!(pattern_matches("fc6.weight", "model.head.fc6.weight"));
        assert!(!pattern_matches("fc*.weight", "net.myfc6.weight"));
        assert!(!pattern_matches("fc6.weight", "fc6.weight.extra"));
        let plan = PlanKind::WeirdTrick.plan();
        assert_eq!(plan.placement_of("net.fc7.weight"), Placement::Shard(1));
        assert_eq!(plan.placement_of("net.conv1.weight"), Placement::Replicate);
    }

    #[test]
    fn built_in_plans_place_as_the_papers_say() {
        let wt = PlanKind::WeirdTrick.plan();
        assert_eq!(wt.placement_of("conv2.weight"), Placement::Replicate);
        assert_eq!(wt.placement_of("fc7.weight"), Placement::Shard(1));
        assert_eq!(wt.placement_of("fc8.bias"), Placement::Shard(0));
        assert_eq!(wt.input, Placement::Shard(0));
        let tt = PlanKind::TwoTower.plan();
        assert_eq!(tt.placement_of("conv3.weight"), Placement::Shard(0));
        assert_eq!(tt.input, Placement::Replicate);
        assert_eq!(PlanKind::DataParallel.plan().placement_of("fc6.weight"), Placement::Replicate);
        assert_eq!("two-tower".parse::<PlanKind>(), Ok(PlanKind::TwoTower));
        assert!("three-tower".parse::<PlanKind>().unwrap_err().contains("weird-trick"));
    }

    #[test]
    fn a_plan_naming_a_missing_parameter_or_too_few_entries_is_an_error() {
        let params = vec![("fc8.weight".to_string(), vec![256, 10]), ("fc8.bias".to_string(), vec![10])];
        let mut plan = PlanKind::WeirdTrick.plan();
        plan.rules.push(PlanRule { pattern: "fc9.weight".into(), placement: Placement::Shard(1) });
        let e = plan.check(&params, 2, 8).unwrap_err().to_string();
        assert!(e.contains("fc9.weight") && e.contains("fc8.bias"), "{e}");
        let e = PlanKind::WeirdTrick.plan().check(&params, 16, 32).unwrap_err().to_string();
        assert!(e.contains("fc8.weight") && e.contains("16 devices") && e.contains("10 entries"), "{e}");
        let e = PlanKind::WeirdTrick.plan().check(&params, 4, 3).unwrap_err().to_string();
        assert!(e.contains("--batch") && e.contains("got 3"), "{e}");
        assert!(PlanKind::WeirdTrick.plan().check(&params, 4, 8).is_ok());
    }
}
