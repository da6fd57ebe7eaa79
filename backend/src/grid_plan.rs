//! Plans on a 2-D mesh: a placement per mesh dimension for every parameter and the input,
//! outer ("node") first, as PyTorch's DTensor takes one placement per `DeviceMesh` dimension.
//! Written in Rust or JSON like a 1-D [`Plan`]; the built-in plans lift to one
//! ([`GridPlan::data_parallel_across`]).
//!
//! What runs today: data parallelism across the outer dimension (every parameter
//! `Replicate` along it, the batch `Shard(0)` along it) with any 1-D plan inside each node.
//! [`GridPlan::local_plan`] says so, naming the rule, for any other outer placement.

use serde::{Deserialize, Serialize};

use crate::grid::{GridPlacement, DIM_NAMES};
use crate::placement::Placement;
use crate::plan::{pattern_matches, Plan, PlanError, PlanRule};

/// One line of a [`GridPlan`]: parameters whose path matches `pattern` (as in [`PlanRule`])
/// get `placement`, one entry per mesh dimension, outer first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridRule {
    /// Path pattern, e.g. `fc*.weight`.
    pub pattern: String,
    /// `[along the nodes, inside a node]`.
    pub placement: GridPlacement,
}

/// A parallel plan on a 2-D mesh (N nodes x L local ranks): a placement per dimension for
/// every parameter (first matching rule, else `default`) and for the input batch.
///
/// ```
/// use owt_hybrid::{GridPlan, Placement, PlanKind};
///
/// // The weird trick inside each node, data parallelism across, written as JSON.
/// let json = r#"{
///     "name": "weird-trick-2d",
///     "rules": [
///         {"pattern": "fc*.weight", "placement": ["Replicate", {"Shard": 1}]},
///         {"pattern": "fc*.bias", "placement": ["Replicate", {"Shard": 0}]}
///     ],
///     "default": ["Replicate", "Replicate"],
///     "input": [{"Shard": 0}, {"Shard": 0}]
/// }"#;
/// let plan: GridPlan = serde_json::from_str(json).unwrap();
/// assert_eq!(plan.placement_of("fc6.weight"), [Placement::Replicate, Placement::Shard(1)]);
/// let local = plan.local_plan().unwrap();
/// assert_eq!(local.placement_of("fc6.weight"), PlanKind::WeirdTrick.plan().placement_of("fc6.weight"));
///
/// // FC columns split across the nodes too is not built: refused, naming the rule.
/// let mut across = plan.clone();
/// across.rules[0].placement = [Placement::Shard(1), Placement::Shard(1)];
/// let e = across.local_plan().unwrap_err().to_string();
/// assert!(e.contains("fc*.weight") && e.contains("Shard(1) along \"node\""), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridPlan {
    /// Name shown in logs and metrics.
    pub name: String,
    /// Placement rules, first match wins.
    pub rules: Vec<GridRule>,
    /// Placement of parameters no rule matches.
    pub default: GridPlacement,
    /// Placement of the input images and labels.
    pub input: GridPlacement,
    /// The local ranks each node's plan needs, if any (as [`Plan::ranks`]; two-tower: 2).
    #[serde(default)]
    pub ranks: Option<usize>,
    /// The number of towers the model must have, if any (as [`Plan::towers`]).
    #[serde(default)]
    pub towers: Option<usize>,
}

impl GridPlan {
    /// `plan` inside every node and data parallelism across the nodes: each rule's placement
    /// as `[Replicate, placement]`, the batch `[Shard(0), plan.input]`. What `--mesh N,L`
    /// runs with a built-in `--plan`.
    pub fn data_parallel_across(plan: &Plan) -> Self {
        GridPlan {
            name: plan.name.clone(),
            rules: plan
                .rules
                .iter()
                .map(|r| GridRule { pattern: r.pattern.clone(), placement: [Placement::Replicate, r.placement] })
                .collect(),
            default: [Placement::Replicate, plan.default],
            input: [Placement::Shard(0), plan.input],
            ranks: plan.ranks,
            towers: plan.towers,
        }
    }

    /// Where the parameter at `path` lives, per dimension.
    pub fn placement_of(&self, path: &str) -> GridPlacement {
        self.rules.iter().find(|r| pattern_matches(&r.pattern, path)).map(|r| r.placement).unwrap_or(self.default)
    }

    /// The 1-D plan each node runs on its local ranks. Refused, naming the rule and the
    /// placement, where the plan asks for more than data parallelism across the nodes: a
    /// parameter placed other than `Replicate` along them, or an input other than `Shard(0)`.
    pub fn local_plan(&self) -> Result<Plan, PlanError> {
        let outer = DIM_NAMES[0];
        let refuse = |what: &str, p: Placement, want: &str| {
            PlanError(format!(
                "plan {}: {what} asks for {p} along {outer:?}; across the nodes a 2-D mesh runs data parallelism only ({want} along {outer:?}), any placement inside a node",
                self.name
            ))
        };
        for r in &self.rules {
            if r.placement[0] != Placement::Replicate {
                return Err(refuse(&format!("rule {:?}", r.pattern), r.placement[0], "parameters Replicate"));
            }
        }
        if self.default[0] != Placement::Replicate {
            return Err(refuse("the default", self.default[0], "parameters Replicate"));
        }
        if self.input[0] != Placement::Shard(0) {
            return Err(refuse("the input", self.input[0], "the batch Shard(0)"));
        }
        Ok(Plan {
            name: self.name.clone(),
            rules: self
                .rules
                .iter()
                .map(|r| PlanRule { pattern: r.pattern.clone(), placement: r.placement[1] })
                .collect(),
            default: self.default[1],
            input: self.input[1],
            ranks: self.ranks,
            towers: self.towers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanKind;

    #[test]
    fn built_in_plans_lift_and_come_back_unchanged() {
        for kind in PlanKind::ALL {
            let plan = kind.plan();
            let grid = GridPlan::data_parallel_across(&plan);
            let back = grid.local_plan().unwrap();
            assert_eq!(back, plan, "{}", kind.name());
            for path in ["conv1.weight", "fc6.weight", "fc8.bias"] {
                assert_eq!(grid.placement_of(path), [Placement::Replicate, plan.placement_of(path)], "{path}");
            }
            let json = serde_json::to_string(&grid).unwrap();
            assert_eq!(serde_json::from_str::<GridPlan>(&json).unwrap(), grid);
        }
    }

    #[test]
    fn what_is_not_data_parallel_across_the_nodes_is_named() {
        let mut plan = GridPlan::data_parallel_across(&PlanKind::DataParallel.plan());
        plan.input = [Placement::Replicate, Placement::Shard(0)];
        let e = plan.local_plan().unwrap_err().to_string();
        assert!(e.contains("the input asks for Replicate") && e.contains("Shard(0)"), "{e}");
        plan.input = [Placement::Shard(0), Placement::Shard(0)];
        plan.default = [Placement::Shard(0), Placement::Replicate];
        let e = plan.local_plan().unwrap_err().to_string();
        assert!(e.contains("the default asks for Shard(0)"), "{e}");
    }
}
