//! The `owt` command line: `info`, `train`, `eval`, `plan`, `bench`.

pub mod bench;
pub mod eval;
pub mod info;
pub mod plan;
pub mod profile;
pub mod train;

use clap::{Args, Parser, Subcommand};

use owt_models::{ModelKind, ModelSpec};

use crate::error::OwtError;

/// owt: the AlexNet family on Burn, single-device and hybrid data/model-parallel.
#[derive(Debug, Parser)]
#[command(name = "owt", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a model's layer profile: parameters, multiply-accumulates and output shape per layer.
    Info(info::InfoArgs),
    /// Train a model and write metrics.json and a checkpoint.
    Train(train::TrainArgs),
    /// Evaluate a checkpoint on a dataset's test split.
    Eval(eval::EvalArgs),
    /// Print the analytic communication of one training step under a parallel plan.
    Plan(plan::PlanArgs),
    /// Time synthetic training steps: steady-state images/s, step time, traffic per step.
    Bench(bench::BenchArgs),
}

/// Model selection flags shared by commands.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Which network.
    #[arg(long, value_parser = parse_model)]
    pub model: ModelKind,
    /// Input side in pixels (default: 227, 224 or 28 by model).
    #[arg(long)]
    pub input: Option<usize>,
    /// Input channels (default: 3, 3 or 1 by model).
    #[arg(long)]
    pub channels: Option<usize>,
    /// Output classes (default: 1000, or 10 for alexnet-small).
    #[arg(long)]
    pub classes: Option<usize>,
    /// Towers of alexnet-small: 2 (grouped, as in 2012) or 1.
    #[arg(long)]
    pub towers: Option<usize>,
}

fn parse_model(s: &str) -> Result<ModelKind, String> {
    s.parse()
}

impl ModelArgs {
    /// The spec these flags describe.
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            kind: self.model,
            input: self.input,
            channels: self.channels,
            classes: self.classes,
            towers: self.towers,
            dropout: None,
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), OwtError> {
    match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Bench(args) => bench::run(&args),
    }
}
