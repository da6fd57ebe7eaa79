//! The learning rate of each epoch: a schedule that divides it by 10 (at given epochs, or when
//! the test loss stops improving, as the 2012 paper did by hand) and a rule that scales it with
//! the batch size (the 2014 paper scales it linearly when the batch grows with the workers).
//!
//! Both are part of a run's [`crate::train::TrainConfig`]. A schedule has no state of its own:
//! the rate of an epoch is a function of the schedule and the test losses of the epochs before
//! it, which the checkpoint keeps, so a resumed run continues the schedule exactly.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What the rate is divided by at each step of a schedule (both papers' factor).
pub const DIVISOR: f64 = 10.0;

/// Batch size the learning rate is given for, when scaling it (`--base-batch`): the 2014
/// paper's 128 images per worker.
pub const BASE_BATCH: usize = 128;

/// When the learning rate is divided by [`DIVISOR`] (`--lr-schedule`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LrSchedule {
    /// The same rate every epoch.
    #[default]
    Constant,
    /// Divided after each of the given (1-based, increasing) epochs: `step:5,7` trains epochs
    /// 1-5 at the rate, 6-7 at a tenth, 8 onward at a hundredth (PyTorch's `MultiStepLR`
    /// with milestones 5 and 7).
    Step(Vec<usize>),
    /// Divided when the test loss has not improved on its best for `patience` epochs in a row,
    /// then counted afresh (PyTorch's `ReduceLROnPlateau` with factor 0.1, threshold 0,
    /// cooldown 0).
    Plateau {
        /// Epochs without improvement before a division.
        patience: usize,
    },
}

/// Patience of `plateau` when none is given.
pub const PLATEAU_PATIENCE: usize = 1;

impl LrSchedule {
    /// How many times the rate has been divided before 0-based epoch `epoch`, given the test
    /// losses of the epochs before it (`test_losses[i]` is epoch `i + 1`'s).
    pub fn divisions_before(&self, epoch: usize, test_losses: &[f64]) -> u32 {
        match self {
            LrSchedule::Constant => 0,
            LrSchedule::Step(after) => after.iter().filter(|&&e| e <= epoch).count() as u32,
            LrSchedule::Plateau { patience } => {
                let (mut divisions, mut best, mut bad) = (0, f64::INFINITY, 0);
                for &loss in test_losses.iter().take(epoch) {
                    if loss < best {
                        best = loss;
                        bad = 0;
                    } else {
                        bad += 1;
                    }
                    if bad >= *patience {
                        divisions += 1;
                        bad = 0;
                    }
                }
                divisions
            }
        }
    }

    /// The rate of 0-based epoch `epoch` for a run whose (scaled) rate is `lr`.
    pub fn rate(&self, lr: f64, epoch: usize, test_losses: &[f64]) -> f64 {
        lr / DIVISOR.powi(self.divisions_before(epoch, test_losses) as i32)
    }

    /// Rejects a malformed schedule, in words. A step after the last epoch is not an error: it
    /// never happens (as in a shorter run of the same schedule).
    fn check(&self) -> Result<(), String> {
        match self {
            LrSchedule::Step(after) if after.is_empty() => Err("step needs at least one epoch, e.g. step:5,7".into()),
            LrSchedule::Step(after) if after.contains(&0) => {
                Err("step epochs are 1-based (the rate drops after that epoch), got 0".into())
            }
            LrSchedule::Step(after) if after.windows(2).any(|w| w[0] >= w[1]) => {
                Err(format!("step epochs must increase, got {}", join(after)))
            }
            LrSchedule::Plateau { patience: 0 } => Err("plateau patience must be at least 1, got 0".into()),
            _ => Ok(()),
        }
    }
}

fn join(epochs: &[usize]) -> String {
    epochs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(",")
}

impl fmt::Display for LrSchedule {
    /// The CLI spelling, which [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LrSchedule::Constant => write!(f, "constant"),
            LrSchedule::Step(after) => write!(f, "step:{}", join(after)),
            LrSchedule::Plateau { patience } => write!(f, "plateau:{patience}"),
        }
    }
}

impl FromStr for LrSchedule {
    type Err = String;

    /// `constant`, `step:E1,E2,..` or `plateau[:PATIENCE]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "expected constant, step:E1,E2,.. or plateau[:PATIENCE]";
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let number = |x: &str, what: &str| {
            x.trim().parse::<usize>().map_err(|_| format!("{what} must be a whole number, got {x:?} in {s:?}"))
        };
        let schedule = match (kind, arg) {
            ("constant", None) => LrSchedule::Constant,
            ("step", Some(list)) => {
                LrSchedule::Step(list.split(',').map(|e| number(e, "a step epoch")).collect::<Result<_, _>>()?)
            }
            ("plateau", None) => LrSchedule::Plateau { patience: PLATEAU_PATIENCE },
            ("plateau", Some(p)) => LrSchedule::Plateau { patience: number(p, "the plateau patience")? },
            _ => return Err(format!("unknown learning-rate schedule {s:?}: {expected}")),
        };
        schedule.check()?;
        Ok(schedule)
    }
}

/// How the given rate grows with the batch size (`--lr-scaling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LrScaling {
    /// The rate as given.
    #[default]
    None,
    /// `lr x batch / base-batch`: the 2014 paper's choice.
    Linear,
    /// `lr x sqrt(batch / base-batch)`: what the 2014 paper's variance argument suggests.
    Sqrt,
}

impl LrScaling {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            LrScaling::None => "none",
            LrScaling::Linear => "linear",
            LrScaling::Sqrt => "sqrt",
        }
    }

    /// The rate a run at `batch` images uses when `lr` is the rate for `base_batch` images.
    pub fn scale(self, lr: f64, batch: usize, base_batch: usize) -> f64 {
        let ratio = batch as f64 / base_batch as f64;
        match self {
            LrScaling::None => lr,
            LrScaling::Linear => lr * ratio,
            LrScaling::Sqrt => lr * ratio.sqrt(),
        }
    }

    /// How the rate came about, in words: "0.08 (0.01 x 1024/128, linear scaling)".
    pub fn describe(self, lr: f64, batch: usize, base_batch: usize) -> String {
        let (scaled, lr) = (Rate(self.scale(lr, batch, base_batch)), Rate(lr));
        match self {
            LrScaling::None => format!("{lr}"),
            LrScaling::Linear => format!("{scaled} ({lr} x {batch}/{base_batch}, linear scaling)"),
            LrScaling::Sqrt => format!("{scaled} ({lr} x sqrt({batch}/{base_batch}), square-root scaling)"),
        }
    }
}

/// A learning rate as people write it: `0.01` as such, `3e-323` or `2e7` in exponent form
/// rather than as hundreds of digits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub f64);

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = self.0.abs();
        if size == 0.0 || (1e-4..1e6).contains(&size) || !size.is_finite() {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_as_people_write_them() {
        let shown = [0.01, 0.0, 1e-4, 3e-323, 5e-5, 2e7, f64::INFINITY].map(|r| Rate(r).to_string());
        assert_eq!(shown, ["0.01", "0", "0.0001", "3e-323", "5e-5", "2e7", "inf"]);
    }

    #[test]
    fn step_divides_after_the_given_epochs() {
        let s: LrSchedule = "step:2,4".parse().unwrap();
        let rates: Vec<f64> = (0..6).map(|e| s.rate(1.0, e, &[])).collect();
        assert_eq!(rates, [1.0, 1.0, 0.1, 0.1, 0.01, 0.01]);
        assert_eq!(s.to_string(), "step:2,4");
        assert_eq!(LrSchedule::Constant.rate(0.3, 100, &[]), 0.3);
    }

    #[test]
    fn plateau_divides_after_patience_epochs_without_a_new_best_and_counts_afresh() {
        let s = LrSchedule::Plateau { patience: 2 };
        // Best 1.0 at epoch 1; epochs 2, 3 do not beat it -> divided from epoch 4 on; epoch 4
        // (0.9) is a new best; 5, 6 are not -> divided again from epoch 7.
        let losses = [1.0, 1.0, 1.2, 0.9, 0.95, 0.91, 0.5];
        let divisions: Vec<u32> = (0..=7).map(|e| s.divisions_before(e, &losses)).collect();
        assert_eq!(divisions, [0, 0, 0, 1, 1, 1, 2, 2]);
        let one = LrSchedule::Plateau { patience: 1 };
        assert_eq!(one.divisions_before(3, &[1.0, 2.0, 3.0]), 2);
        // Only the epochs before the one asked about count.
        assert_eq!(one.divisions_before(1, &[1.0, 2.0, 3.0]), 0);
    }

    #[test]
    fn spellings_parse_and_malformed_ones_are_named() {
        assert_eq!("plateau".parse::<LrSchedule>(), Ok(LrSchedule::Plateau { patience: PLATEAU_PATIENCE }));
        assert_eq!("plateau:3".parse::<LrSchedule>(), Ok(LrSchedule::Plateau { patience: 3 }));
        assert_eq!("constant".parse::<LrSchedule>(), Ok(LrSchedule::Constant));
        for (bad, says) in [
            ("step", "unknown"),
            ("step:", "whole number"),
            ("step:5,3", "must increase, got 5,3"),
            ("step:0", "1-based"),
            ("step:x", "\"x\""),
            ("plateau:0", "at least 1"),
            ("cosine", "expected constant"),
        ] {
            let e = bad.parse::<LrSchedule>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // No spelling gives an empty step list ("step:" is an empty epoch), but a schedule
        // built in code or read from a config can: refused in words, not run as constant.
        assert!(LrSchedule::Step(vec![]).check().unwrap_err().contains("at least one epoch"));
        assert_eq!(LrSchedule::Step(vec![3]).check(), Ok(()));
    }

    #[test]
    fn scaling_names_are_the_cli_spellings() {
        use clap::ValueEnum;
        for scaling in LrScaling::value_variants() {
            let spelled = scaling.to_possible_value().unwrap();
            assert_eq!(scaling.name(), spelled.get_name(), "{scaling:?}");
            assert_eq!(LrScaling::from_str(scaling.name(), false), Ok(*scaling));
        }
    }

    #[test]
    fn scaling_follows_the_batch_ratio() {
        assert_eq!(LrScaling::None.scale(0.01, 1024, 128), 0.01);
        assert!((LrScaling::Linear.scale(0.01, 1024, 128) - 0.08).abs() < 1e-15);
        assert!((LrScaling::Sqrt.scale(0.01, 512, 128) - 0.02).abs() < 1e-15);
        assert!((LrScaling::Linear.scale(0.01, 64, 128) - 0.005).abs() < 1e-15);
        assert!(LrScaling::Linear.describe(0.01, 1024, 128).contains("x 1024/128"));
    }
}
