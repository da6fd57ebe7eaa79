//! The owt tool's integration tests, in one test binary: each module is one
//! former test file, so the crate's generic code is compiled and linked once for all of them.

mod cli;
mod cuda_transport;
mod data;
mod dropout_masks;
mod empty_work;
mod fashion_mnist;
mod faults;
mod hybrid_step;
mod input_pipeline;
mod learner;
mod plan_traffic;
mod torchvision;
mod wgpu_mesh;
