//! Plans on a 2-D mesh: a placement per mesh dimension for every parameter and the input,
//! outer ("node") first, as PyTorch's DTensor takes one placement per `DeviceMesh` dimension.
//! Written in Rust or JSON like a 1-D [`Plan`]; the built-in plans lift to one
//! ([`GridPlan::data_parallel_across`]).
//!
//! Along the nodes a parameter is `Replicate` (data parallelism) or `Shard(d)` (each node
//! stores its slice, gathered over the nodes for every step, FSDP-style: see
//! [`crate::GridLayout`]); the batch is `Shard(0)` (each node its rows) or `Replicate` (every
//! node the whole batch). Inside each node, any 1-D plan. [`GridPlan::local_plan`] names what
//! has no meaning along the nodes (a parameter `Partial`).

use serde::{Deserialize, Serialize};

use crate::mesh::grid::{GridPlacement, DIM_NAMES};
use crate::parallel::plan::{pattern_matches, Plan, PlanError, PlanRule};
use crate::spec::placement::Placement;

/// One line of a [`GridPlan`]: parameters whose path matches `pattern` (as in [`PlanRule`])
/// get `placement`, one entry per mesh dimension, outer first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// A plan file's misspelt key (`"rank": 3`) is refused naming it and the known ones.
#[serde(deny_unknown_fields)]
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
/// // FC weights stored by rows across the nodes too (each node 1/N of them, FSDP-style).
/// let mut across = plan.clone();
/// across.rules[0].placement = [Placement::Shard(0), Placement::Shard(1)];
/// assert_eq!(across.local_plan().unwrap(), local);
/// assert_eq!(across.across(), "data-parallel across with parameters sharded over the nodes (FSDP-style)");
/// assert_eq!(plan.across(), "data-parallel across");
///
/// // A parameter as a pending sum along the nodes means nothing: refused, naming the rule.
/// across.rules[0].placement = [Placement::Partial(owt_hybrid::ReduceOp::Sum), Placement::Shard(1)];
/// let e = across.local_plan().unwrap_err().to_string();
/// assert!(e.contains("fc*.weight") && e.contains("along \"node\""), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// A plan file's misspelt key (`"rank": 3`) is refused naming it and the known ones.
#[serde(deny_unknown_fields)]
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

    /// A plan named `name` from `(pattern, placement per dimension)` rules, first match wins;
    /// no rank or tower requirement (set `ranks`/`towers` after for plans that have one).
    pub fn of(name: &str, rules: &[(&str, GridPlacement)], default: GridPlacement, input: GridPlacement) -> Self {
        GridPlan {
            name: name.to_string(),
            rules: rules
                .iter()
                .map(|(pattern, placement)| GridRule { pattern: pattern.to_string(), placement: *placement })
                .collect(),
            default,
            input,
            ranks: None,
            towers: None,
        }
    }

    /// Where the parameter at `path` lives, per dimension.
    pub fn placement_of(&self, path: &str) -> GridPlacement {
        self.rules.iter().find(|r| pattern_matches(&r.pattern, path)).map(|r| r.placement).unwrap_or(self.default)
    }

    /// Where the parameter at `path` lives along the nodes.
    pub fn outer_of(&self, path: &str) -> Placement {
        self.placement_of(path)[0]
    }

    /// What the plan does along the nodes, in words (logs, `owt plan`).
    pub fn across(&self) -> &'static str {
        let mut outer = self.rules.iter().map(|r| r.placement[0]).chain([self.default[0]]);
        let sharded = outer.any(|p| matches!(p, Placement::Shard(_)));
        match (sharded, self.input[0] == Placement::Replicate) {
            (false, false) => "data-parallel across",
            (true, false) => "data-parallel across with parameters sharded over the nodes (FSDP-style)",
            (false, true) => "every node the whole batch",
            (true, true) => "every node the whole batch, parameters sharded over the nodes",
        }
    }

    /// The 1-D plan each node runs on its local ranks (every rule's inner placement).
    /// Refused, naming the rule and the placement, where a placement along the nodes has no
    /// meaning: a parameter `Partial` along them (a parameter is a value, not a pending sum),
    /// or an input other than `Shard(0)` (each node its block of the batch) or `Replicate`
    /// (every node the whole batch).
    ///
    /// Along the nodes a parameter may be `Replicate` (data parallelism: each node a copy,
    /// gradients all-reduced over the nodes) or `Shard(d)` (FSDP-style: each node stores its
    /// slice along dim d, the nodes all-gather it for each step and reduce-scatter its
    /// gradient, so each node updates only its slice).
    pub fn local_plan(&self) -> Result<Plan, PlanError> {
        let outer = DIM_NAMES[0];
        let refuse = |what: &str, p: Placement, want: &str| {
            PlanError(format!("plan {}: {what} asks for {p} along {outer:?}; {want}", self.name))
        };
        let parameters = "a parameter along the nodes is Replicate (data parallel) or Shard(d) (each node stores its slice, FSDP-style), not a pending sum";
        for r in &self.rules {
            if let Placement::Partial(_) = r.placement[0] {
                return Err(refuse(&format!("rule {:?}", r.pattern), r.placement[0], parameters));
            }
        }
        if let Placement::Partial(_) = self.default[0] {
            return Err(refuse("the default", self.default[0], parameters));
        }
        if !matches!(self.input[0], Placement::Shard(0) | Placement::Replicate) {
            return Err(refuse(
                "the input",
                self.input[0],
                "the batch along the nodes is Shard(0) (each node its block of rows) or Replicate (every node the whole batch)",
            ));
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
            batch_stats: Default::default(),
        })
    }

    /// Checks the plan along the nodes against a module's parameters (path, shape) on
    /// `nodes` nodes: no rule an earlier one shadows (as [`Plan::check_params`]), and every dimension a parameter is sharded on along them must exist and
    /// have at least one entry per node. Returns the parameters as a node stores them (its
    /// slices; the smallest node's where slices differ), for the local plan's own checks.
    pub fn check_outer(
        &self,
        params: &[(String, Vec<usize>)],
        nodes: usize,
    ) -> Result<Vec<(String, Vec<usize>)>, PlanError> {
        self.local_plan()?;
        let placed = |p: &GridPlacement| format!("[{}, {}]", p[0], p[1]);
        crate::parallel::plan::dead_rule(
            &self.name,
            self.rules.iter().map(|r| (r.pattern.as_str(), placed(&r.placement))),
            params,
        )?;
        let mut stored = Vec::with_capacity(params.len());
        for (path, shape) in params {
            let mut shape = shape.clone();
            if let Placement::Shard(d) = self.outer_of(path) {
                match shape.get(d) {
                    None => {
                        return Err(PlanError(format!(
                            "plan {} shards {path} on dim {d} along \"node\", but it has only {} dims ({shape:?})",
                            self.name,
                            shape.len()
                        )))
                    }
                    Some(&len) if len < nodes => {
                        return Err(PlanError(format!(
                            "plan {} shards {path} on dim {d} over {nodes} nodes, but that dim has only {len} entries",
                            self.name
                        )))
                    }
                    Some(&len) => shape[d] = len / nodes,
                }
            }
            stored.push((path.clone(), shape));
        }
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::plan::PlanKind;

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
    fn placements_along_the_nodes_without_meaning_are_named() {
        let mut plan = GridPlan::data_parallel_across(&PlanKind::DataParallel.plan());
        plan.input = [Placement::Shard(1), Placement::Shard(0)];
        let e = plan.local_plan().unwrap_err().to_string();
        assert!(e.contains("the input asks for Shard(1)") && e.contains("Replicate (every node"), "{e}");
        plan.input = [Placement::Replicate, Placement::Shard(0)];
        assert!(plan.local_plan().is_ok());
        plan.default = [Placement::Partial(crate::spec::placement::ReduceOp::Sum), Placement::Replicate];
        let e = plan.local_plan().unwrap_err().to_string();
        assert!(e.contains("the default asks for Partial") && e.contains("not a pending sum"), "{e}");
    }

    #[test]
    fn dims_sharded_along_the_nodes_are_checked_and_cut() {
        let mut plan = GridPlan::data_parallel_across(&PlanKind::WeirdTrick.plan());
        plan.rules[0].placement = [Placement::Shard(0), Placement::Shard(1)];
        let params = vec![("fc8.weight".to_string(), vec![10, 4]), ("fc8.bias".to_string(), vec![4])];
        let stored = plan.check_outer(&params, 3).unwrap();
        assert_eq!(stored, vec![("fc8.weight".to_string(), vec![3, 4]), ("fc8.bias".to_string(), vec![4])]);
        let e = plan.check_outer(&params, 11).unwrap_err().to_string();
        assert!(e.contains("fc8.weight") && e.contains("11 nodes") && e.contains("10 entries"), "{e}");
        plan.rules[0].placement = [Placement::Shard(2), Placement::Shard(1)];
        let e = plan.check_outer(&params, 2).unwrap_err().to_string();
        assert!(e.contains("dim 2") && e.contains("only 2 dims"), "{e}");
    }
}
