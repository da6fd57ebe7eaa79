//! Which compute backend a run asked for (`--backend`).

/// The compute backends `owt` can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Burn's pure-Rust CPU backend (always available; what CI uses).
    #[default]
    Flex,
    /// wgpu (Vulkan/Metal/DX12; on a CPU-only Linux box, Mesa lavapipe). Needs `--features wgpu`.
    Wgpu,
    /// CUDA through CubeCL. Needs `--features cuda` and an NVIDIA driver.
    Cuda,
}

impl BackendKind {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Flex => "flex",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }
}
