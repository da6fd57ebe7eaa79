//! A plan the cost model chooses (`owt plan --auto`): for each layer whose weight can be split,
//! replicated (data-parallel) or split by output (model-parallel: an FC weight `[in, out]` by
//! columns, a conv weight `[out, in, kh, kw]` by filters, the bias alike), and the exchange
//! scheme, minimising the step the caller predicts for each candidate (a dry run priced on a
//! device profile). Exhaustive where the candidates are few ([`EXHAUSTIVE_LIMIT`]); otherwise a
//! stated heuristic: coordinate descent from the best of data parallelism and every FC layer
//! split (the weird trick) under each scheme, flipping one layer at a time (each scheme tried
//! where FC layers are split) while the prediction improves.
//!
//! Knows nothing of any model: the layers come from parameter paths and shapes
//! ([`splittable_layers`], from `crate::parameter_paths` for any module), the prediction
//! from the caller.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use crate::parallel::plan::{BatchStats, Plan, PlanRule};
use crate::spec::placement::Placement;
use crate::spec::scheme::Exchange;

/// At most this many candidates (plans times the schemes that matter for them) are tried
/// exhaustively; more take the heuristic.
pub const EXHAUSTIVE_LIMIT: usize = 128;

/// A layer whose weight the search may split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SplittableLayer {
    /// The module's path (`fc6`, `conv1`, `block1.conv2`).
    pub name: String,
    /// The weight's dimension split by output: 1 for an FC weight `[in, out]`, 0 for a conv
    /// weight `[out, in, kh, kw]`.
    pub split_dim: usize,
    /// Whether it has a bias (split with the outputs).
    pub has_bias: bool,
}

impl SplittableLayer {
    /// Whether this is an FC layer (the exchange scheme matters where one is split).
    pub fn is_fc(&self) -> bool {
        self.split_dim == 1
    }
}

/// The layers of a module from its parameters' paths and shapes: each module holding a
/// `weight` of 2 dimensions (FC) or 4 (conv), in the order given. Other parameters (batch
/// normalisation's, 1-D) stay replicated.
///
/// ```
/// use owt_hybrid::auto_plan::splittable_layers;
/// let params = [("conv1.weight", vec![64, 3, 11, 11]), ("conv1.bias", vec![64]), ("fc6.weight", vec![9216, 4096]), ("bn1.gamma", vec![64])];
/// let layers = splittable_layers(params.iter().map(|(p, d)| (p.to_string(), d.clone())));
/// assert_eq!(layers.iter().map(|l| (l.name.as_str(), l.split_dim, l.has_bias)).collect::<Vec<_>>(),
///            [("conv1", 0, true), ("fc6", 1, false)]);
/// ```
pub fn splittable_layers(params: impl IntoIterator<Item = (String, Vec<usize>)>) -> Vec<SplittableLayer> {
    let params: Vec<(String, Vec<usize>)> = params.into_iter().collect();
    let mut layers: Vec<SplittableLayer> = Vec::new();
    for (path, dims) in &params {
        let Some(module) = path.strip_suffix(".weight") else { continue };
        let split_dim = match dims.len() {
            2 => 1,
            4 => 0,
            _ => continue,
        };
        let has_bias = params.iter().any(|(p, _)| p.strip_suffix(".bias") == Some(module));
        layers.push(SplittableLayer { name: module.to_string(), split_dim, has_bias });
    }
    layers
}

/// One candidate: which layers are split, and the scheme.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Candidate {
    split: Vec<bool>,
    scheme: Exchange,
}

/// The plan that splits the layers `split` marks and replicates the rest, the batch sharded.
pub fn plan_splitting(layers: &[SplittableLayer], split: &[bool], name: &str) -> Plan {
    let mut rules = Vec::new();
    for (layer, _) in layers.iter().zip(split).filter(|(_, s)| **s) {
        rules
            .push(PlanRule { pattern: format!("{}.weight", layer.name), placement: Placement::Shard(layer.split_dim) });
        if layer.has_bias {
            rules.push(PlanRule { pattern: format!("{}.bias", layer.name), placement: Placement::Shard(0) });
        }
    }
    Plan {
        name: name.to_string(),
        rules,
        default: Placement::Replicate,
        input: Placement::Shard(0),
        ranks: None,
        towers: None,
        batch_stats: BatchStats::Sync,
    }
}

/// What the search found.
#[derive(Debug, Clone, Serialize)]
pub struct AutoPlan {
    /// The chosen plan (named `auto`), as `--plan-file` takes it.
    pub plan: Plan,
    /// The chosen exchange scheme (`--scheme`).
    pub scheme: Exchange,
    /// Its predicted step, seconds.
    pub step_s: f64,
    /// The layers split, by name.
    pub split: Vec<String>,
    /// Whether every candidate was tried.
    pub exhaustive: bool,
    /// Candidates priced.
    pub evaluated: usize,
    /// Seconds the search took.
    pub seconds: f64,
}

/// The candidate plan among splits of `layers` and `schemes` whose `predict(plan, scheme)`
/// (the predicted step in seconds, `None` where the plan cannot run) is least; ties go to
/// fewer split layers, then to the earlier scheme. `None` when no candidate runs.
pub fn search(
    layers: &[SplittableLayer],
    schemes: &[Exchange],
    mut predict: impl FnMut(&Plan, Exchange) -> Option<f64>,
) -> Option<AutoPlan> {
    let started = Instant::now();
    let schemes: Vec<Exchange> = if schemes.is_empty() { vec![Exchange::AllGather] } else { schemes.to_vec() };
    let mut seen: HashMap<Candidate, Option<f64>> = HashMap::new();
    let mut price = |c: &Candidate| -> Option<f64> {
        *seen.entry(c.clone()).or_insert_with(|| predict(&plan_splitting(layers, &c.split, "auto"), c.scheme))
    };
    // The schemes that matter for a split: all of them where an FC layer is split.
    let schemes_for = |split: &[bool]| -> Vec<Exchange> {
        if layers.iter().zip(split).any(|(l, s)| *s && l.is_fc()) {
            schemes.clone()
        } else {
            vec![schemes[0]]
        }
    };
    let n = layers.len();
    let convs = layers.iter().filter(|l| !l.is_fc()).count();
    // Splits with no FC layer split take one scheme; the others, each.
    let exhaustive = n < 20 && {
        let (all, without_fc) = (1usize << n, 1usize << convs);
        without_fc + (all - without_fc) * schemes.len() <= EXHAUSTIVE_LIMIT
    };
    let better = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => a < b * (1.0 - 1e-9),
        (Some(_), None) => true,
        _ => false,
    };
    let mut best: Option<(Candidate, f64)> = None;
    let consider =
        |c: Candidate, best: &mut Option<(Candidate, f64)>, price: &mut dyn FnMut(&Candidate) -> Option<f64>| {
            let p = price(&c);
            if better(p, best.as_ref().map(|b| b.1)) {
                *best = Some((c, p.expect("better than something is something")));
            }
        };
    if exhaustive {
        // Fewest splits first, so that a tie keeps the simpler plan.
        let mut splits: Vec<Vec<bool>> = (0..1usize << n).map(|m| (0..n).map(|i| m >> i & 1 == 1).collect()).collect();
        splits.sort_by_key(|s: &Vec<bool>| s.iter().filter(|x| **x).count());
        for split in splits {
            for scheme in schemes_for(&split) {
                consider(Candidate { split: split.clone(), scheme }, &mut best, &mut price);
            }
        }
    } else {
        let none = vec![false; n];
        let fc: Vec<bool> = layers.iter().map(|l| l.is_fc()).collect();
        consider(Candidate { split: none, scheme: schemes[0] }, &mut best, &mut price);
        for &scheme in &schemes {
            consider(Candidate { split: fc.clone(), scheme }, &mut best, &mut price);
        }
        // Coordinate descent: flip one layer at a time while the prediction improves.
        loop {
            let Some((current, _)) = best.clone() else { break };
            for scheme in schemes_for(&current.split) {
                consider(Candidate { split: current.split.clone(), scheme }, &mut best, &mut price);
            }
            for i in 0..n {
                let mut split = current.split.clone();
                split[i] = !split[i];
                for scheme in schemes_for(&split) {
                    consider(Candidate { split: split.clone(), scheme }, &mut best, &mut price);
                }
            }
            if best.as_ref().map(|b| &b.0) == Some(&current) {
                break;
            }
        }
    }
    let evaluated = seen.len();
    let (chosen, step_s) = best?;
    Some(AutoPlan {
        plan: plan_splitting(layers, &chosen.split, "auto"),
        scheme: chosen.scheme,
        step_s,
        split: layers.iter().zip(&chosen.split).filter(|(_, s)| **s).map(|(l, _)| l.name.clone()).collect(),
        exhaustive,
        evaluated,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers() -> Vec<SplittableLayer> {
        splittable_layers(
            [
                ("conv1.weight", vec![8, 3, 3, 3]),
                ("conv1.bias", vec![8]),
                ("fc1.weight", vec![32, 16]),
                ("fc2.weight", vec![16, 4]),
            ]
            .iter()
            .map(|(p, d)| (p.to_string(), d.clone())),
        )
    }

    /// A made-up price with one best candidate: exhaustive search finds it and tries each
    /// candidate once (the scheme only where an FC layer is split: 2 + 6 x 3 = 20).
    #[test]
    fn exhaustive_search_finds_the_cheapest_and_tries_each_candidate_once() {
        let layers = layers();
        let schemes = [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices];
        let mut calls = 0;
        let found = search(&layers, &schemes, |plan, scheme| {
            calls += 1;
            let split = |l: &str| plan.placement_of(&format!("{l}.weight")) != Placement::Replicate;
            let cost = 10.0 - if split("fc1") { 3.0 } else { 0.0 } + if split("conv1") { 1.0 } else { 0.0 }
                - if scheme == Exchange::Broadcast { 0.5 } else { 0.0 };
            Some(cost)
        })
        .unwrap();
        assert!(found.exhaustive);
        assert_eq!((calls, found.evaluated), (20, 20));
        assert_eq!(found.split, ["fc1"]);
        assert_eq!(found.scheme, Exchange::Broadcast);
        assert_eq!(found.step_s, 6.5);
        assert_eq!(found.plan.placement_of("fc1.weight"), Placement::Shard(1));
        assert_eq!(found.plan.placement_of("conv1.bias"), Placement::Replicate);
    }

    /// Equal prices keep data parallelism (the fewest splits); nothing that runs: none.
    #[test]
    fn ties_keep_the_simpler_plan_and_nothing_runnable_is_none() {
        let layers = layers();
        let found = search(&layers, &[Exchange::AllGather], |_, _| Some(1.0)).unwrap();
        assert!(found.split.is_empty(), "{:?}", found.split);
        assert!(search(&layers, &[Exchange::AllGather], |_, _| None).is_none());
    }

    /// Many layers take the heuristic, which still reaches a separable optimum.
    #[test]
    fn the_heuristic_descends_to_a_separable_optimum() {
        let params: Vec<(String, Vec<usize>)> = (0..12)
            .map(|i| (format!("conv{i}.weight"), vec![4, 4, 3, 3]))
            .chain((0..3).map(|i| (format!("fc{i}.weight"), vec![8, 8])))
            .collect();
        let layers = splittable_layers(params);
        let want = ["conv3", "fc0", "fc2"];
        let found = search(&layers, &[Exchange::AllGather, Exchange::Slices], |plan, scheme| {
            let mut cost = 100.0;
            for l in &layers {
                let split = plan.placement_of(&format!("{}.weight", l.name)) != Placement::Replicate;
                if split != want.contains(&l.name.as_str()) {
                    cost += 1.0;
                }
            }
            Some(cost - if scheme == Exchange::Slices { 0.25 } else { 0.0 })
        })
        .unwrap();
        assert!(!found.exhaustive);
        assert_eq!(found.split, want);
        assert_eq!(found.scheme, Exchange::Slices);
        assert!(found.evaluated < 1 << 15, "{}", found.evaluated);
    }
}
