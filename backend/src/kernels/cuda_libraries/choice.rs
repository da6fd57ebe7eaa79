//! What a run asks for ([`KernelChoice`]: `--conv`, `--matmul`, `--tf32`) and what it got
//! ([`Installed`]: a [`Runner`] per kind of op, said in one line).

use serde::Serialize;

use crate::kernels::cudnn::Math;

/// Who runs a CUDA device's convolutions (`--conv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConvKernels {
    /// cuDNN where it loads, else as [`ConvKernels::Owt`].
    #[default]
    Auto,
    /// CubeCL's kernels, but for the weight gradients of strided convolutions: owt's
    /// unfolded GEMM (`conv_grad::unfolded`), split over the images where CubeCL's kernel
    /// reduces over every position of the batch on a few cores.
    Owt,
    /// CubeCL's kernels alone.
    Cubecl,
    /// cuDNN, or the run is refused where it does not load.
    Cudnn,
}

/// Who runs a CUDA device's matmuls (`--matmul`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulKernels {
    /// cuBLASLt where it loads, CubeCL's kernels otherwise.
    #[default]
    Auto,
    /// CubeCL's kernels.
    Cubecl,
    /// cuBLASLt, or the run is refused where it does not load.
    Cublaslt,
}

/// What a run asks of a CUDA device's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelChoice {
    /// The convolutions'.
    pub conv: ConvKernels,
    /// The matmuls'.
    pub matmul: MatmulKernels,
    /// How f32 may round in cuDNN's and cuBLASLt's kernels.
    pub math: Math,
    /// `--deterministic`: numbers that are a function of the inputs on one machine (cuDNN's
    /// deterministic algorithms only, chosen without timing; CubeCL's autotune results fixed
    /// before any rank uses them, the same on every rank).
    pub deterministic: bool,
}

impl std::str::FromStr for ConvKernels {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ConvKernels::Auto),
            "owt" => Ok(ConvKernels::Owt),
            "cubecl" => Ok(ConvKernels::Cubecl),
            "cudnn" => Ok(ConvKernels::Cudnn),
            other => Err(format!("expected auto, owt, cubecl or cudnn, got {other:?}")),
        }
    }
}

impl std::str::FromStr for MatmulKernels {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(MatmulKernels::Auto),
            "cubecl" => Ok(MatmulKernels::Cubecl),
            "cublaslt" => Ok(MatmulKernels::Cublaslt),
            other => Err(format!("expected auto, cubecl or cublaslt, got {other:?}")),
        }
    }
}

/// Who runs one kind of op after [`install`](super::install): a library (its file and version) or CubeCL
/// (and why, where a library was asked for or looked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kernels", rename_all = "kebab-case")]
pub enum Runner {
    /// A vendor library.
    Library {
        /// The library, in words (`cuDNN 9.10.0`).
        name: String,
        /// The file that loaded.
        file: String,
    },
    /// CubeCL's kernels.
    Cubecl {
        /// Why not a library: asked for (`--conv cubecl`), or what was looked for and where.
        why: String,
    },
}

impl Runner {
    fn phrase(&self, ops: &str) -> String {
        match self {
            Runner::Library { name, file } => format!("{ops} on {name} ({file})"),
            Runner::Cubecl { why } => format!("{ops} on CubeCL's kernels ({why})"),
        }
    }

    /// Whether a library runs these ops.
    pub fn is_library(&self) -> bool {
        matches!(self, Runner::Library { .. })
    }
}

/// What [`install`](super::install) decided: who runs convolutions and matmuls, in which math.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Installed {
    /// The convolutions' runner.
    pub conv: Runner,
    /// Whether owt's unfolded GEMM takes the weight gradients of strided convolutions (where
    /// CubeCL's kernels run convolutions).
    pub owt_strided_weight_gradients: bool,
    /// The matmuls' runner.
    pub matmul: Runner,
    /// `tf32` or `strict`.
    pub math: &'static str,
    /// Whether the run is deterministic (`--deterministic`).
    pub deterministic: bool,
}

impl Installed {
    /// The one line a CUDA run starts with.
    pub fn line(&self) -> String {
        let math = match self.math {
            "strict" => "strict f32",
            _ => "f32 through TF32",
        };
        let strided = match self.owt_strided_weight_gradients {
            true => "; strided convolutions' weight gradients on owt's unfolded GEMM",
            false => "",
        };
        let deterministic = match self.deterministic {
            true => "; deterministic (cuDNN's deterministic algorithms, autotune fixed before use)",
            false => "",
        };
        format!(
            "owt: {}{strided}; {}; {math}{deterministic}",
            self.conv.phrase("convolutions"),
            self.matmul.phrase("matmuls")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_line_names_each_runner_and_why() {
        let installed = Installed {
            conv: Runner::Cubecl { why: "no cuDNN (looked for libcudnn.so in LD_LIBRARY_PATH (unset) ...)".into() },
            owt_strided_weight_gradients: true,
            matmul: Runner::Library { name: "cuBLASLt 13.0.0".into(), file: "libcublasLt.so.13".into() },
            math: "tf32",
            deterministic: false,
        };
        let line = installed.line();
        assert_eq!(
            line,
            "owt: convolutions on CubeCL's kernels (no cuDNN (looked for libcudnn.so in LD_LIBRARY_PATH (unset) ...)); strided convolutions' weight gradients on owt's unfolded GEMM; matmuls on cuBLASLt 13.0.0 (libcublasLt.so.13); f32 through TF32"
        );
        let plain = Installed { math: "strict", owt_strided_weight_gradients: false, ..installed };
        assert!(plain.line().ends_with("(libcublasLt.so.13); strict f32"), "{}", plain.line());
        let det = Installed { deterministic: true, ..plain };
        assert!(det
            .line()
            .ends_with("strict f32; deterministic (cuDNN's deterministic algorithms, autotune fixed before use)"));
    }

    #[test]
    fn the_switches_parse_their_words_and_name_the_others() {
        assert_eq!("cudnn".parse::<ConvKernels>(), Ok(ConvKernels::Cudnn));
        assert_eq!("cublaslt".parse::<MatmulKernels>(), Ok(MatmulKernels::Cublaslt));
        assert_eq!("owt".parse::<ConvKernels>(), Ok(ConvKernels::Owt));
        assert_eq!("cuda".parse::<ConvKernels>().unwrap_err(), "expected auto, owt, cubecl or cudnn, got \"cuda\"");
    }
}
