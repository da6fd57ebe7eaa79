//! The owt tool's integration tests, in one test binary: each module is one
//! former test file, so the crate's generic code is compiled and linked once for all of them.

/// The owt binary's allocator: it reuses freed memory where the system's hands the large
/// blocks of AlexNetOwt's 4096-wide FC layers back to the kernel and faults them in again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod book;
mod bounded_inputs;
mod checkpoint_lies;
mod cli;
mod closed_output;
mod conv_grid_backends;
mod cost_tiers;
mod cuda_transport;
mod cudnn_descriptors;
mod data;
mod data_identity;
mod deterministic_runs;
mod dropout_kernel;
mod dropout_masks;
mod empty_work;
mod external_kernels;
mod fashion_mnist;
mod faults;
mod fuzz_inputs;
mod gpu_script;
mod grouped_sgd;
mod input_pipeline;
mod jpeg_pipeline;
mod launcher;
mod layers;
mod learner;
mod mixed_precision;
mod numeric_flags;
mod outputs_inside_inputs;
mod own_cnn;
mod plan_traffic;
mod preprocessing;
mod record_shapes;
mod refused_settings;
mod rust_imports;
mod signals;
mod strided_weight_gradient;
mod terminals;
mod torchvision;
mod val_labels;
mod wgpu_conv_grid;
mod wgpu_mesh;
mod writers;

/// Issue 77's grid of convolutions, shared with the Flex binary (`parallel_training`).
#[path = "../common/conv_grid_cases.rs"]
mod conv_grid_cases;
#[path = "../common/relative_gap.rs"]
mod relative_gap;

/// The repository's root, read when the test runs (cargo sets `CARGO_MANIFEST_DIR` for the
/// test process): the path compiled in is that of the checkout that built the binary, and a
/// target dir shared between clones at other paths reuses a binary built in another clone.
fn repository() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into).unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
}
