//! A 2-D convolution in the terms of cuDNN's descriptors: the input and output as 4-D tensors
//! with explicit strides (CubeCL's CUDA tensors are pitched: each row padded to a power of two
//! of its bytes, so only the strides say where an element is), the filter packed
//! `[o, c / groups, kh, kw]` (cuDNN's filter descriptors have no strides), padding, stride,
//! dilation and groups as cuDNN's convolution descriptor takes them, and the output side by
//! cuDNN's documented formula. Pure arithmetic: tested on any machine against Burn's own
//! output-shape arithmetic.
//!
//! Padding is one value per axis, as cuDNN's convolution descriptor and Burn's `ConvOptions`
//! both hold it. An asymmetric padding (Burn's `PaddingConfig2d::Explicit` with top != bottom
//! or left != right, or a `Same` whose total is odd) never reaches a backend: Burn 0.21's
//! `conv2d` pads the input with zeros first and passes no padding, as PyTorch does before
//! cuDNN. That is the one place it is decided, for cuDNN and CubeCL alike; owt declines
//! nothing for it (tests/owt/cudnn_descriptors.rs walks both ways over issue 77's grid).

use burn::tensor::ops::ConvOptions;
use burn::tensor::DType;

/// Why cuDNN is not given a convolution (it then runs on CubeCL's kernels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The element types cuDNN convolves, each with the type it accumulates in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvDtype {
    /// f32 data, f32 accumulation (TF32 tensor cores where [`Math::Tf32`] allows them).
    F32,
    /// f64 data and accumulation.
    F64,
    /// f16 data, f32 accumulation on tensor cores.
    F16,
    /// bf16 data, f32 accumulation on tensor cores.
    Bf16,
}

impl ConvDtype {
    /// The cuDNN type of a Burn dtype, if cuDNN convolves it (`Flex32` is stored as f32).
    pub fn of(dtype: DType) -> Option<ConvDtype> {
        match dtype {
            DType::F32 | DType::Flex32 => Some(ConvDtype::F32),
            DType::F64 => Some(ConvDtype::F64),
            DType::F16 => Some(ConvDtype::F16),
            DType::BF16 => Some(ConvDtype::Bf16),
            _ => None,
        }
    }

    /// The short name the algorithm cache's keys use.
    pub fn name(self) -> &'static str {
        match self {
            ConvDtype::F32 => "f32",
            ConvDtype::F64 => "f64",
            ConvDtype::F16 => "f16",
            ConvDtype::Bf16 => "bf16",
        }
    }

    /// `cudnnDataType_t` of the data (CUDNN_DATA_FLOAT 0, DOUBLE 1, HALF 2, BFLOAT16 9).
    pub fn data_type(self) -> u32 {
        match self {
            ConvDtype::F32 => 0,
            ConvDtype::F64 => 1,
            ConvDtype::F16 => 2,
            ConvDtype::Bf16 => 9,
        }
    }

    /// `cudnnDataType_t` the convolution accumulates in: double for f64, float otherwise (as
    /// PyTorch sets it for half types).
    pub fn compute_type(self) -> u32 {
        match self {
            ConvDtype::F64 => 1,
            _ => 0,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ConvDtype::F32 => 4,
            ConvDtype::F64 => 8,
            ConvDtype::F16 | ConvDtype::Bf16 => 2,
        }
    }
}

/// How f32 convolutions and matmuls may round: through TF32 tensor cores (cuDNN's and
/// cuBLAS's default on Ampere and later, PyTorch's `allow_tf32` for convolutions) or strictly
/// in f32 (fused multiply-adds only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Math {
    /// TF32 tensor cores allowed for f32 data.
    #[default]
    Tf32,
    /// Strict f32: FMA kernels only.
    Strict,
}

impl Math {
    /// The short name the algorithm cache's keys and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            Math::Tf32 => "tf32",
            Math::Strict => "strict",
        }
    }

    /// `cudnnMathType_t` for data of `dtype`: CUDNN_DEFAULT_MATH (0; TF32 allowed for f32 on
    /// Ampere and later), CUDNN_TENSOR_OP_MATH (1) for f16 and bf16, CUDNN_FMA_MATH (3) for
    /// strict f32 (as PyTorch's `setConvolutionDescriptor`).
    pub fn cudnn_math_type(self, dtype: ConvDtype) -> u32 {
        match (dtype, self) {
            (ConvDtype::F16 | ConvDtype::Bf16, _) => 1,
            (ConvDtype::F32, Math::Strict) => 3,
            _ => 0,
        }
    }
}

/// Which of a convolution's three computations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvOp {
    /// `y = conv(x, w)` (cudnnConvolutionForward).
    Forward,
    /// `dx` from `dy` and `w` (cudnnConvolutionBackwardData).
    BackwardData,
    /// `dw` from `x` and `dy` (cudnnConvolutionBackwardFilter).
    BackwardFilter,
}

impl ConvOp {
    /// The short name the algorithm cache's keys use.
    pub fn name(self) -> &'static str {
        match self {
            ConvOp::Forward => "fwd",
            ConvOp::BackwardData => "bwd-data",
            ConvOp::BackwardFilter => "bwd-filter",
        }
    }
}

/// A 4-D tensor as a cuDNN tensor descriptor takes it: dims and strides in elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tensor4 {
    /// `[n, c, h, w]`.
    pub dims: [i32; 4],
    /// Elements between neighbours along each dim.
    pub strides: [i32; 4],
}

impl Tensor4 {
    /// The tensor of `dims` and `strides` (Burn's, in elements), or why cuDNN cannot take it:
    /// a dimension or the furthest element past `i32` (cuDNN's descriptors are `int`), a
    /// zero stride along a dimension longer than 1 (a broadcast view). Strides of dimensions
    /// of length 1 are normalised to what a packed layout would give them (they address
    /// nothing; PyTorch does the same before it describes a tensor).
    pub fn new(what: &str, dims: [usize; 4], strides: [usize; 4]) -> Result<Tensor4, Unsupported> {
        let mut strides = strides;
        for i in (0..4).rev() {
            if dims[i] == 1 {
                strides[i] = if i == 3 { 1 } else { strides[i + 1] * dims[i + 1].max(1) };
            } else if strides[i] == 0 {
                return Err(Unsupported(format!("{what} is a broadcast view (dims {dims:?}, strides {strides:?})")));
            }
        }
        if dims.contains(&0) {
            return Err(Unsupported(format!("{what} is empty (dims {dims:?})")));
        }
        let furthest: u128 = dims.iter().zip(&strides).map(|(&d, &s)| (d as u128 - 1) * s as u128).sum();
        let fits = |v: u128| v <= i32::MAX as u128;
        if !fits(furthest + 1) || dims.iter().chain(&strides).any(|&v| !fits(v as u128)) {
            return Err(Unsupported(format!(
                "{what} spans past cuDNN's 32-bit sizes (dims {dims:?}, strides {strides:?})"
            )));
        }
        Ok(Tensor4 { dims: dims.map(|v| v as i32), strides: strides.map(|v| v as i32) })
    }

    /// The packed (row-major, unpadded) tensor of `dims`.
    pub fn packed(what: &str, dims: [usize; 4]) -> Result<Tensor4, Unsupported> {
        Tensor4::new(what, dims, packed_strides(dims))
    }
}

/// The alignment in bytes (a power of two, at most 256) of an address `offset` bytes into a
/// buffer CubeCL allocated (its buffers start 256-byte aligned or better).
pub fn alignment_at(offset: u64) -> u32 {
    if offset == 0 {
        256
    } else {
        1 << offset.trailing_zeros().min(8)
    }
}

/// The strides of a packed row-major tensor of `dims`.
pub fn packed_strides(dims: [usize; 4]) -> [usize; 4] {
    [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1]
}

/// The output `[n, o, ho, wo]` of a convolution of `x_dims` (`[n, c, h, w]`) by a filter of
/// `w_dims` (`[o, c / groups, kh, kw]`), by cuDNN's formula (`cudnnGetConvolution2dForwardOutputDim`:
/// `1 + (h + 2 pad - ((kh - 1) dilation + 1)) / stride`), or why there is none: channels that
/// do not split into the groups, a zero stride, dilation or group count, or a dilated kernel
/// wider than the padded input.
pub fn output_dims(
    x_dims: [usize; 4],
    w_dims: [usize; 4],
    options: &ConvOptions<2>,
) -> Result<[usize; 4], Unsupported> {
    let [n, c, h, w] = x_dims;
    let [o, cg, kh, kw] = w_dims;
    let g = options.groups;
    if options.stride.contains(&0) || options.dilation.contains(&0) || g == 0 {
        return Err(Unsupported(format!("zero stride, dilation or groups ({options:?})")));
    }
    if cg == 0 || c != cg * g || o % g != 0 || kh == 0 || kw == 0 {
        return Err(Unsupported(format!("input channels {c} and filter {w_dims:?} do not make {g} group(s)")));
    }
    let side = |input: usize, k: usize, i: usize| -> Result<usize, Unsupported> {
        let padded = input + 2 * options.padding[i];
        let reach = (k - 1) * options.dilation[i] + 1;
        if padded < reach {
            return Err(Unsupported(format!("the dilated kernel ({reach}) is wider than the padded input ({padded})")));
        }
        Ok(1 + (padded - reach) / options.stride[i])
    };
    Ok([n, o, side(h, kh, 0)?, side(w, kw, 1)?])
}

/// One convolution as cuDNN's descriptors describe it, for one of its three computations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvProblem {
    /// Which computation.
    pub op: ConvOp,
    /// The element type.
    pub dtype: ConvDtype,
    /// How f32 may round.
    pub math: Math,
    /// The input (or its gradient, for [`ConvOp::BackwardData`]).
    pub x: Tensor4,
    /// The filter `[o, c / groups, kh, kw]`, packed (or its gradient, for [`ConvOp::BackwardFilter`]).
    pub w: [i32; 4],
    /// The output (or its gradient, for the two backward computations).
    pub y: Tensor4,
    /// Zero rows and columns on each side.
    pub padding: [i32; 2],
    /// Rows and columns between windows.
    pub stride: [i32; 2],
    /// Rows and columns between taps.
    pub dilation: [i32; 2],
    /// Groups (cudnnSetConvolutionGroupCount).
    pub groups: i32,
    /// The alignment in bytes all three tensors' first elements have (a power of two, at most
    /// 256): an algorithm measured on aligned buffers may need that alignment, and Hybrid's
    /// pieces can be views that start inside a buffer (PyTorch's cuDNN path keys on it too).
    pub align: u32,
    /// Whether only algorithms cuDNN documents as deterministic may run it (`--deterministic`).
    pub deterministic: bool,
}

impl ConvProblem {
    /// `op` on `x` (dims, strides) by a packed filter of `w_dims`, into `y` (dims, strides),
    /// or why cuDNN is not given it: besides what [`Tensor4::new`] and [`output_dims`] refuse,
    /// a `y` whose dims are not the convolution's output.
    pub fn new(
        op: ConvOp,
        dtype: ConvDtype,
        math: Math,
        x: ([usize; 4], [usize; 4]),
        w_dims: [usize; 4],
        y: ([usize; 4], [usize; 4]),
        options: &ConvOptions<2>,
    ) -> Result<ConvProblem, Unsupported> {
        let out = output_dims(x.0, w_dims, options)?;
        if out != y.0 {
            return Err(Unsupported(format!("output dims {:?} are not the convolution's {out:?}", y.0)));
        }
        let filter = Tensor4::packed("the filter", w_dims)?;
        let int = |v: [usize; 2]| -> Result<[i32; 2], Unsupported> {
            let small = |x: usize| i32::try_from(x).map_err(|_| Unsupported(format!("{options:?} past 32 bits")));
            Ok([small(v[0])?, small(v[1])?])
        };
        Ok(ConvProblem {
            op,
            dtype,
            math,
            x: Tensor4::new("the input", x.0, x.1)?,
            w: filter.dims,
            y: Tensor4::new("the output", y.0, y.1)?,
            padding: int(options.padding)?,
            stride: int(options.stride)?,
            dilation: int(options.dilation)?,
            groups: i32::try_from(options.groups).map_err(|_| Unsupported("groups past 32 bits".into()))?,
            align: 256,
            deterministic: false,
        })
    }

    /// The problem on tensors whose first elements are aligned to `align` bytes (a power of
    /// two; above 256 counts as 256).
    pub fn aligned_to(self, align: u32) -> ConvProblem {
        ConvProblem { align: align.clamp(1, 256), ..self }
    }

    /// The problem restricted to deterministic algorithms where `on`.
    pub fn deterministic(self, on: bool) -> ConvProblem {
        ConvProblem { deterministic: on, ..self }
    }

    /// The same problem with the input and output (gradient) packed, as cuDNN is handed them
    /// where a search found the packed layout faster ([`super::Choice::packed`]): the tensor the
    /// computation writes is allocated packed either way, the ones it reads are copied.
    pub fn packed(self) -> ConvProblem {
        let pack = |t: Tensor4| {
            let d = t.dims.map(|v| v as usize);
            Tensor4 { dims: t.dims, strides: packed_strides(d).map(|v| v as i32) }
        };
        ConvProblem { x: pack(self.x), y: pack(self.y), ..self }
    }

    /// Whether the input and output (gradient) are laid out packed already (then [`Self::packed`]
    /// is the problem itself, and a search has one layout to try).
    pub fn is_packed(&self) -> bool {
        self.packed() == *self
    }

    /// The problem's key in the algorithm cache: everything the choice of algorithm depends
    /// on, in words (`fwd f32 tf32 x 128.3.227.227/154587.51529.227.1 w 96.3.11.11 y ... pad
    /// 0.0 stride 4.4 dil 1.1 groups 1 align 256`, and ` deterministic` where it is).
    pub fn key(&self) -> String {
        let dots = |v: &[i32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(".");
        format!(
            "{} {} {} x {}/{} w {} y {}/{} pad {} stride {} dil {} groups {} align {}{}",
            self.op.name(),
            self.dtype.name(),
            self.math.name(),
            dots(&self.x.dims),
            dots(&self.x.strides),
            dots(&self.w),
            dots(&self.y.dims),
            dots(&self.y.strides),
            dots(&self.padding),
            dots(&self.stride),
            dots(&self.dilation),
            self.groups,
            self.align,
            if self.deterministic { " deterministic" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::ops::conv::calculate_conv_output_sizes;

    fn opts(stride: usize, padding: usize, dilation: usize, groups: usize) -> ConvOptions<2> {
        ConvOptions::new([stride, stride], [padding, padding], [dilation, dilation], groups)
    }

    #[test]
    fn output_dims_follow_burns_arithmetic_over_a_grid_of_shapes() {
        let mut checked = 0;
        for side in [1usize, 5, 13, 28, 55, 227] {
            for k in [1usize, 3, 5, 11] {
                for (stride, padding, dilation) in [(1, 0, 1), (1, 2, 1), (4, 0, 1), (2, 1, 2), (3, 5, 1)] {
                    let o = opts(stride, padding, dilation, 1);
                    let got = output_dims([2, 3, side, side + 1], [8, 3, k, k], &o);
                    if side + 2 * padding < (k - 1) * dilation + 1 {
                        assert!(got.is_err(), "side {side} k {k} {o:?}");
                        continue;
                    }
                    let burn =
                        calculate_conv_output_sizes(&[k, k], &o.stride, &o.padding, &o.dilation, &[side, side + 1]);
                    assert_eq!(got.unwrap(), [2, 8, burn[0], burn[1]], "side {side} k {k} {o:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 80, "{checked} shapes checked");
    }

    #[test]
    fn groups_must_divide_both_channel_counts() {
        assert!(output_dims([1, 96, 27, 27], [256, 48, 5, 5], &opts(1, 2, 1, 2)).is_ok());
        let err = output_dims([1, 96, 27, 27], [256, 96, 5, 5], &opts(1, 2, 1, 2)).unwrap_err();
        assert!(err.0.contains("2 group(s)"), "{err}");
        assert!(output_dims([1, 96, 27, 27], [255, 48, 5, 5], &opts(1, 2, 1, 2)).is_err());
    }

    #[test]
    fn pitched_strides_pass_through_and_broadcasts_are_refused() {
        // A [2, 3, 55, 55] f32 tensor as CubeCL's CUDA allocator pitches it: rows of 64.
        let x = Tensor4::new("x", [2, 3, 55, 55], [3 * 55 * 64, 55 * 64, 64, 1]).unwrap();
        assert_eq!(x.strides, [10560, 3520, 64, 1]);
        // Length-1 dims take a packed stride whatever they had.
        let one = Tensor4::new("x", [1, 3, 4, 1], [0, 4, 1, 0]).unwrap();
        assert_eq!(one.strides, [12, 4, 1, 1]);
        let err = Tensor4::new("the input", [2, 3, 4, 5], [60, 0, 5, 1]).unwrap_err();
        assert!(err.0.contains("broadcast"), "{err}");
        assert!(Tensor4::new("x", [0, 3, 4, 5], [60, 20, 5, 1]).is_err());
        let big =
            Tensor4::new("x", [1 << 12, 1 << 10, 1 << 5, 1 << 5], packed_strides([1 << 12, 1 << 10, 1 << 5, 1 << 5]));
        assert!(big.unwrap_err().0.contains("32-bit"));
    }

    #[test]
    fn a_problem_carries_options_and_refuses_a_wrong_output() {
        let o = opts(4, 2, 1, 1);
        let x = ([128, 3, 224, 224], [3 * 224 * 256, 224 * 256, 256, 1]);
        let y = ([128, 64, 55, 55], packed_strides([128, 64, 55, 55]));
        let p = ConvProblem::new(ConvOp::Forward, ConvDtype::F32, Math::Tf32, x, [64, 3, 11, 11], y, &o).unwrap();
        assert_eq!((p.padding, p.stride, p.dilation, p.groups), ([2, 2], [4, 4], [1, 1], 1));
        assert_eq!(p.w, [64, 3, 11, 11]);
        assert_eq!(
            p.key(),
            "fwd f32 tf32 x 128.3.224.224/172032.57344.256.1 w 64.3.11.11 y 128.64.55.55/193600.3025.55.1 pad 2.2 stride 4.4 dil 1.1 groups 1 align 256"
        );
        let det = p.aligned_to(16).deterministic(true);
        assert!(det.key().ends_with("groups 1 align 16 deterministic"), "{}", det.key());
        assert_ne!(det.key(), p.key());
        assert_eq!(p.aligned_to(4096).align, 256);
        // Packed: the pitched input takes packed strides, the packed output keeps its own.
        assert!(!p.is_packed());
        let packed = p.packed();
        assert_eq!(packed.x.strides, [3 * 224 * 224, 224 * 224, 224, 1]);
        assert_eq!(packed.y, p.y);
        assert!(packed.is_packed());
        assert_eq!((packed.w, packed.padding, packed.groups, packed.align), (p.w, p.padding, p.groups, p.align));
        let wrong = ([128, 64, 54, 55], packed_strides([128, 64, 54, 55]));
        let err =
            ConvProblem::new(ConvOp::Forward, ConvDtype::F32, Math::Tf32, x, [64, 3, 11, 11], wrong, &o).unwrap_err();
        assert!(err.0.contains("not the convolution's [128, 64, 55, 55]"), "{err}");
    }

    #[test]
    fn math_types_are_pytorchs() {
        assert_eq!(Math::Tf32.cudnn_math_type(ConvDtype::F32), 0);
        assert_eq!(Math::Strict.cudnn_math_type(ConvDtype::F32), 3);
        assert_eq!(Math::Strict.cudnn_math_type(ConvDtype::Bf16), 1);
        assert_eq!(Math::Tf32.cudnn_math_type(ConvDtype::F64), 0);
        assert_eq!((ConvDtype::F16.compute_type(), ConvDtype::F64.compute_type()), (0, 1));
    }
}
