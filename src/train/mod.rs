//! Training and evaluation on one device.

pub mod atomic;
pub mod checkpoint;
pub mod config;
pub mod metrics;
pub mod progress;
pub mod trainer;

pub use checkpoint::{Checkpoint, CheckpointState, CHECKPOINT_FILE};
pub use config::TrainConfig;
pub use metrics::EpochMetrics;
pub use trainer::{evaluate, load_model, train, Evaluation, RunOptions};
