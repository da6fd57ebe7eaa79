//! Response normalisation (against a direct loop, and tower-local) and the two loss heads
//! (against losses computed by hand).

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_models::{Head, TowerLrnConfig};

type B = Flex;

fn to_vec<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

/// The paper's formula evaluated element by element.
fn lrn_reference(x: &[f32], [n, c, h, w]: [usize; 4], towers: usize) -> Vec<f32> {
    let per = c / towers;
    let (k, alpha, beta, size) = (2.0f64, 1e-4f64, 0.75f64, 5i64);
    let at = |b: usize, ch: usize, p: usize| x[(b * c + ch) * h * w + p] as f64;
    let mut out = vec![0.0; x.len()];
    for b in 0..n {
        for ch in 0..c {
            let tower = ch / per;
            let lo = (tower * per) as i64;
            let hi = (tower * per + per) as i64 - 1;
            for p in 0..h * w {
                let mut sum = 0.0;
                for j in (ch as i64 - (size - 1) / 2)..=(ch as i64 + size / 2) {
                    if j >= lo && j <= hi {
                        sum += at(b, j as usize, p).powi(2);
                    }
                }
                out[(b * c + ch) * h * w + p] = (at(b, ch, p) / (k + alpha * sum).powf(beta)) as f32;
            }
        }
    }
    out
}

#[test]
fn lrn_matches_the_paper_formula() {
    let dims = [2, 8, 3, 3];
    // Large activations so the normaliser is far from k^beta and errors would show.
    let x = Tensor::<B, 4>::random(dims, Distribution::Uniform(-60.0, 60.0), &Default::default());
    let xs = to_vec(x.clone());
    for towers in [1, 2] {
        let got = to_vec(TowerLrnConfig::new().with_towers(towers).init().forward(x.clone()));
        let want = lrn_reference(&xs, dims, towers);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "towers {towers}: {g} vs {w}");
        }
    }
}

/// The gradient of `sum(g * lrn(x))` by hand, in f64: `g_i d_i^-beta - 2 alpha beta x_i
/// sum_{j: i in window(j)} g_j x_j d_j^(-beta-1)` (the window is symmetric within a tower).
fn lrn_gradient_reference(x: &[f32], g: &[f32], [n, c, h, w]: [usize; 4], towers: usize, beta: f64) -> Vec<f64> {
    let per = c / towers;
    let (k, alpha, reach) = (2.0f64, 1e-4f64, 2usize);
    let idx = |b: usize, ch: usize, p: usize| (b * c + ch) * h * w + p;
    let window = |ch: usize| {
        let lo = (ch / per) * per;
        ch.saturating_sub(reach).max(lo)..=(ch + reach).min(lo + per - 1)
    };
    let d =
        |b: usize, ch: usize, p: usize| k + alpha * window(ch).map(|j| (x[idx(b, j, p)] as f64).powi(2)).sum::<f64>();
    let mut out = vec![0.0; x.len()];
    for b in 0..n {
        for ch in 0..c {
            for p in 0..h * w {
                let i = idx(b, ch, p);
                let cross: f64 = window(ch)
                    .map(|j| g[idx(b, j, p)] as f64 * x[idx(b, j, p)] as f64 * d(b, j, p).powf(-beta - 1.0))
                    .sum();
                out[i] = g[i] as f64 * d(b, ch, p).powf(-beta) - 2.0 * alpha * beta * x[i] as f64 * cross;
            }
        }
    }
    out
}

#[test]
fn lrn_gradient_matches_the_hand_derived_one() {
    type A = burn::backend::Autodiff<Flex>;
    let dims = [2, 8, 3, 3];
    let device = Default::default();
    // Large activations: the cross term (through the window's other channels) is then of the
    // same order as the direct one, so a wrong or missing term shows.
    let x = Tensor::<A, 4>::random(dims, Distribution::Uniform(-60.0, 60.0), &device);
    let g = Tensor::<A, 4>::random(dims, Distribution::Uniform(-1.0, 1.0), &device);
    let (xs, gs) = (x.clone().into_data().to_vec::<f32>().unwrap(), g.clone().into_data().to_vec::<f32>().unwrap());
    // beta = 0.75 takes the square-root path, 0.5 the general power.
    for (towers, beta) in [(1, 0.75), (2, 0.75), (2, 0.5)] {
        let lrn = TowerLrnConfig::new().with_towers(towers).with_beta(beta).init();
        let leaf = x.clone().detach().require_grad();
        let grads = (lrn.forward(leaf.clone()) * g.clone()).sum().backward();
        let got = leaf.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        let want = lrn_gradient_reference(&xs, &gs, dims, towers, beta);
        assert_eq!(got.len(), want.len());
        let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        // f32 arithmetic against f64: measured at most 1.5e-7 of the scale; 1e-5 is far below
        // any wrong term (the cross term is ~10% of the scale here).
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((*a as f64 - b).abs() <= 1e-5 * scale, "towers {towers} beta {beta} element {i}: {a} vs {b}");
        }
    }
}

#[test]
fn perturbing_one_tower_leaves_the_other_towers_lrn_output_unchanged() {
    let dims = [2, 8, 4, 4];
    let device = Default::default();
    let x = Tensor::<B, 4>::random(dims, Distribution::Uniform(-50.0, 50.0), &device);
    let bump = Tensor::<B, 4>::random([2, 4, 4, 4], Distribution::Uniform(20.0, 40.0), &device);
    let perturbed = x.clone().slice_assign([0..2, 0..4, 0..4, 0..4], x.clone().narrow(1, 0, 4) + bump);
    for (towers, tower1_may_change) in [(2, false), (1, true)] {
        let lrn = TowerLrnConfig::new().with_towers(towers).init();
        let a = to_vec(lrn.forward(x.clone()).narrow(1, 4, 4));
        let b = to_vec(lrn.forward(perturbed.clone()).narrow(1, 4, 4));
        assert_eq!(a.len(), b.len());
        let changed = a.iter().zip(&b).any(|(p, q)| p != q);
        assert_eq!(changed, tower1_may_change, "towers = {towers}");
        let own_a = to_vec(lrn.forward(x.clone()).narrow(1, 0, 4));
        let own_b = to_vec(lrn.forward(perturbed.clone()).narrow(1, 0, 4));
        assert_ne!(own_a, own_b, "the perturbed tower's own output must change");
    }
}

#[test]
fn heads_compute_the_textbook_losses() {
    let device = Default::default();
    let logits_v = [[2.0f32, -1.0, 0.5], [-0.3, 0.8, 4.0]];
    let targets_v = [0i64, 1];
    let logits = Tensor::<B, 2>::from_data(logits_v, &device);
    let targets = Tensor::<B, 1, Int>::from_data(targets_v, &device);

    let mut softmax = 0.0f64;
    let mut logistic = 0.0f64;
    for (row, &t) in logits_v.iter().zip(&targets_v) {
        let lse = row.iter().map(|&z| (z as f64).exp()).sum::<f64>().ln();
        softmax += lse - row[t as usize] as f64;
        for (j, &z) in row.iter().enumerate() {
            let p = 1.0 / (1.0 + (-(z as f64)).exp());
            let y = if j as i64 == t { 1.0 } else { 0.0 };
            logistic -= y * p.ln() + (1.0 - y) * (1.0 - p).ln();
        }
    }
    let got_s = Head::Softmax.loss(logits.clone(), targets.clone()).into_scalar() as f64;
    let got_l = Head::Logistic.loss(logits.clone(), targets.clone()).into_scalar() as f64;
    assert!((got_s - softmax / 2.0).abs() < 1e-5, "{got_s} vs {}", softmax / 2.0);
    assert!((got_l - logistic / 2.0).abs() < 1e-5, "{got_l} vs {}", logistic / 2.0);
    let predicted = Head::Logistic.predict(logits).into_data().convert::<i64>().to_vec::<i64>().unwrap();
    assert_eq!(predicted, vec![0, 2]);
}

#[test]
fn logistic_head_is_stable_for_large_logits() {
    let device = Default::default();
    let logits = Tensor::<B, 2>::from_data([[80.0f32, -90.0]], &device);
    let targets = Tensor::<B, 1, Int>::from_data([1i64], &device);
    let loss = Head::Logistic.loss(logits, targets).into_scalar() as f64;
    // -ln sigmoid(-90) - ln(1 - sigmoid(80)) = 90 + 80 (up to e^-80 terms).
    assert!((loss - 170.0).abs() < 1e-3, "{loss}");
}
