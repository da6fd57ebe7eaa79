//! Batch normalisation in groups (what DDP's `BatchNorm2d` computes on each rank) against its
//! formula in f64, group by group: equal groups, unequal ones (a short batch on a mesh it does
//! not divide), groups left empty, one value a group, and the running statistics they move.

use burn::backend::{Autodiff, Flex};
use burn::module::{Param, RunningState};
use burn::nn::BatchNormConfig;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_models::batch_norm_in_groups;

type A = Autodiff<Flex>;

/// One group's statistics by the formula: the mean and the biased variance of each channel
/// over the group's rows and positions, the rows `rows` of `x` (`[n, c, hw]` flattened).
fn group_statistics(x: &[f32], rows: std::ops::Range<usize>, c: usize, hw: usize) -> (Vec<f64>, Vec<f64>) {
    let values = |ch: usize| rows.clone().flat_map(move |b| (0..hw).map(move |p| x[(b * c + ch) * hw + p] as f64));
    let count = (rows.len() * hw) as f64;
    let means: Vec<f64> = (0..c).map(|ch| values(ch).sum::<f64>() / count).collect();
    let vars = (0..c).map(|ch| values(ch).map(|v| (v - means[ch]).powi(2)).sum::<f64>() / count).collect();
    (means, vars)
}

/// `n` rows in `groups` groups at `c` channels of `h` x `w`, the module's running statistics
/// and momentum set to values of their own: the training pass and the running statistics
/// against the formula (the groups' sizes as a mesh splits a batch: the first `n % groups` a
/// row larger, empty ones left out; the running variance the mean of the groups' unbiased
/// ones).
fn check(n: usize, groups: usize, [c, h, w]: [usize; 3], sizes: &[usize]) {
    let device = Default::default();
    let mut bn = BatchNormConfig::new(c).with_momentum(0.3).init::<A>(&device);
    bn.gamma = Param::from_tensor(Tensor::random([c], Distribution::Uniform(0.5, 2.0), &device));
    bn.beta = Param::from_tensor(Tensor::random([c], Distribution::Uniform(-1.0, 1.0), &device));
    let old_mean = Tensor::<A, 1>::random([c], Distribution::Uniform(-1.0, 1.0), &device);
    let old_var = Tensor::<A, 1>::random([c], Distribution::Uniform(0.5, 3.0), &device);
    bn.running_mean = RunningState::new(old_mean.clone());
    bn.running_var = RunningState::new(old_var.clone());
    let x = Tensor::<A, 4>::random([n, c, h, w], Distribution::Uniform(-3.0, 5.0), &device);
    let f32s = |t: Tensor<A, 1>| t.into_data().to_vec::<f32>().unwrap();
    let (xs, gamma, beta) = (x.clone().into_data().to_vec::<f32>().unwrap(), f32s(bn.gamma.val()), f32s(bn.beta.val()));
    let (old_mean, old_var) = (f32s(old_mean), f32s(old_var));

    let got = batch_norm_in_groups(&bn, x, groups).into_data().to_vec::<f32>().unwrap();
    let hw = h * w;
    let (mut mean_sum, mut var_sum) = (vec![0.0; c], vec![0.0; c]);
    let mut start = 0;
    for &rows in sizes {
        let (means, vars) = group_statistics(&xs, start..start + rows, c, hw);
        for b in start..start + rows {
            for ch in 0..c {
                for p in 0..hw {
                    let i = (b * c + ch) * hw + p;
                    let want =
                        (xs[i] as f64 - means[ch]) / (vars[ch] + 1e-5).sqrt() * gamma[ch] as f64 + beta[ch] as f64;
                    assert!(
                        (got[i] as f64 - want).abs() < 1e-4,
                        "n {n}, groups {groups}: row {b} channel {ch}: {} vs {want}",
                        got[i]
                    );
                }
            }
        }
        let count = rows * hw;
        let unbiased = if count > 1 { count as f64 / (count - 1) as f64 } else { 1.0 };
        for ch in 0..c {
            mean_sum[ch] += means[ch];
            var_sum[ch] += vars[ch] * unbiased;
        }
        start += rows;
    }
    assert_eq!(start, n, "the sizes cover the batch");
    let groups_used = sizes.len() as f64;
    let running_mean = bn.running_mean.value_sync().into_data().to_vec::<f32>().unwrap();
    let running_var = bn.running_var.value_sync().into_data().to_vec::<f32>().unwrap();
    for ch in 0..c {
        let mean = 0.7 * old_mean[ch] as f64 + 0.3 * mean_sum[ch] / groups_used;
        let var = 0.7 * old_var[ch] as f64 + 0.3 * var_sum[ch] / groups_used;
        assert!(
            (running_mean[ch] as f64 - mean).abs() < 1e-5,
            "n {n}, groups {groups}: running mean {} vs {mean}",
            running_mean[ch]
        );
        assert!(
            (running_var[ch] as f64 - var).abs() < 1e-5,
            "n {n}, groups {groups}: running var {} vs {var}",
            running_var[ch]
        );
    }
}

#[test]
fn each_group_is_normalised_by_its_own_statistics_and_the_running_ones_move_by_their_mean() {
    // The whole batch (no groups, or one).
    check(4, 0, [3, 2, 3], &[4]);
    check(4, 1, [3, 2, 3], &[4]);
    // Equal groups: one pass over [groups, rows, ..].
    check(6, 3, [2, 3, 2], &[2, 2, 2]);
    // Unequal: 7 rows on 3 ranks are 3 + 2 + 2; 5 on 2 are 3 + 2.
    check(7, 3, [2, 2, 2], &[3, 2, 2]);
    check(5, 2, [3, 1, 2], &[3, 2]);
    // More groups than rows: the empty ones left out, each row a group of its own.
    check(3, 4, [2, 2, 1], &[1, 1, 1]);
    // One value a group: its variance is 0 and left as it is (no division by 0 rows).
    check(3, 3, [2, 1, 1], &[1, 1, 1]);
    check(5, 4, [2, 1, 1], &[2, 1, 1, 1]);
}
