//! The calls into cuDNN (through cudarc's bindings, libcudnn loaded at run time): one handle
//! per device on CubeCL's device thread, descriptors per problem kept on that thread, the
//! algorithm search and the three convolutions. Everything here runs inside
//! `CudaServer::run_foreign`, on CubeCL's stream for the calling thread, with the device's
//! context current.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::rc::Rc;

use cudarc::cudnn::sys as dnn;
use cudarc::driver::sys::{cuMemGetInfo_v2, cudaError_enum, CUstream};

use super::algorithm_cache::{algorithm_count, is_deterministic, Choice, MAX_WORKSPACE};
use super::problem::{ConvDtype, ConvOp, ConvProblem};
use crate::kernels::cuda_libraries::Failure;

/// Whether libcudnn loads, and its version (`cudnnGetVersion`), or why it cannot be used: not
/// found, or older than cuDNN 9 (whose legacy convolution API and sub-libraries owt is written
/// against).
pub fn load() -> Result<u64, String> {
    // SAFETY: dlopen of the candidate names, as cudarc does it.
    if !unsafe { dnn::is_culib_present() } {
        return Err("libcudnn did not load".into());
    }
    // SAFETY: cudnnGetVersion takes nothing and exists in every cuDNN.
    let version = unsafe { dnn::cudnnGetVersion() } as u64;
    if version < 90000 {
        return Err(format!(
            "cuDNN {} found; owt needs cuDNN 9 or newer",
            super::algorithm_cache::version_name(version)
        ));
    }
    Ok(version)
}

/// A cuDNN status as a result, naming the call that returned it.
fn check(status: dnn::cudnnStatus_t, call: &str) -> Result<(), Failure> {
    if status == dnn::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cudnnGetErrorString returns a static C string for any status.
    let text = unsafe { CStr::from_ptr(dnn::cudnnGetErrorString(status)) };
    Err(Failure::new(call, format!("{status:?}: {}", text.to_string_lossy())))
}

/// A cuDNN handle, created on the device thread with the device's context current and kept
/// for the thread's life.
struct Handle(dnn::cudnnHandle_t);

thread_local! {
    /// This thread's handle per device (CubeCL runs each device's server on its own thread).
    static HANDLES: RefCell<HashMap<usize, Rc<Handle>>> = RefCell::new(HashMap::new());
    /// This thread's descriptors per problem (by key) and device.
    static DESCRIPTORS: RefCell<HashMap<(usize, String), Rc<Descriptors>>> = RefCell::new(HashMap::new());
}

/// Creates device `device`'s handle on this thread, where it has none yet: what the first
/// use of cuDNN on a device waits for, so a failure is a decline, not a failed stream.
pub fn open(device: usize, stream: CUstream) -> Result<(), Failure> {
    handle(device, stream).map(|_| ())
}

/// The handle of device `device` on this thread, bound to `stream`.
fn handle(device: usize, stream: CUstream) -> Result<Rc<Handle>, Failure> {
    let handle = HANDLES.with(|handles| -> Result<Rc<Handle>, Failure> {
        if let Some(h) = handles.borrow().get(&device) {
            return Ok(h.clone());
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: cudnnCreate writes a handle; the device's context is current (run_foreign).
        check(unsafe { dnn::cudnnCreate(&mut raw) }, "cudnnCreate")?;
        let h = Rc::new(Handle(raw));
        handles.borrow_mut().insert(device, h.clone());
        Ok(h)
    })?;
    // SAFETY: the handle is live; CubeCL's stream outlives this call.
    check(unsafe { dnn::cudnnSetStream(handle.0, stream as dnn::cudaStream_t) }, "cudnnSetStream")?;
    Ok(handle)
}

/// The descriptors of one problem.
struct Descriptors {
    x: dnn::cudnnTensorDescriptor_t,
    w: dnn::cudnnFilterDescriptor_t,
    y: dnn::cudnnTensorDescriptor_t,
    conv: dnn::cudnnConvolutionDescriptor_t,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each non-null descriptor was created by its cudnnCreate* and is destroyed
        // once (a creation that failed left its field null).
        unsafe {
            if !self.x.is_null() {
                dnn::cudnnDestroyTensorDescriptor(self.x);
            }
            if !self.w.is_null() {
                dnn::cudnnDestroyFilterDescriptor(self.w);
            }
            if !self.y.is_null() {
                dnn::cudnnDestroyTensorDescriptor(self.y);
            }
            if !self.conv.is_null() {
                dnn::cudnnDestroyConvolutionDescriptor(self.conv);
            }
        }
    }
}

fn data_type(dtype: ConvDtype) -> dnn::cudnnDataType_t {
    use dnn::cudnnDataType_t::*;
    match dtype {
        ConvDtype::F32 => CUDNN_DATA_FLOAT,
        ConvDtype::F64 => CUDNN_DATA_DOUBLE,
        ConvDtype::F16 => CUDNN_DATA_HALF,
        ConvDtype::Bf16 => CUDNN_DATA_BFLOAT16,
    }
}

fn compute_type(dtype: ConvDtype) -> dnn::cudnnDataType_t {
    match dtype {
        ConvDtype::F64 => dnn::cudnnDataType_t::CUDNN_DATA_DOUBLE,
        _ => dnn::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

fn math_type(value: u32) -> Result<dnn::cudnnMathType_t, Failure> {
    use dnn::cudnnMathType_t::*;
    Ok(match value {
        0 => CUDNN_DEFAULT_MATH,
        1 => CUDNN_TENSOR_OP_MATH,
        2 => CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
        3 => CUDNN_FMA_MATH,
        other => {
            return Err(Failure::new("cudnnSetConvolutionMathType", format!("math type {other} is none of cuDNN's")))
        }
    })
}

/// The descriptors of `problem` on this thread for `device`, with `math` set on the
/// convolution descriptor (a search's choice, or the problem's own before a search).
fn descriptors(device: usize, problem: &ConvProblem, math: u32) -> Result<Rc<Descriptors>, Failure> {
    let key = (device, problem.key());
    let d = DESCRIPTORS.with(|all| -> Result<Rc<Descriptors>, Failure> {
        if let Some(d) = all.borrow().get(&key) {
            return Ok(d.clone());
        }
        let d = Rc::new(create(problem)?);
        all.borrow_mut().insert(key, d.clone());
        Ok(d)
    })?;
    // SAFETY: the descriptor is live.
    check(unsafe { dnn::cudnnSetConvolutionMathType(d.conv, math_type(math)?) }, "cudnnSetConvolutionMathType")?;
    Ok(d)
}

fn create(p: &ConvProblem) -> Result<Descriptors, Failure> {
    let data = data_type(p.dtype);
    let mut d = Descriptors {
        x: std::ptr::null_mut(),
        w: std::ptr::null_mut(),
        y: std::ptr::null_mut(),
        conv: std::ptr::null_mut(),
    };
    // SAFETY: each call writes or sets a descriptor it created; the arrays outlive the calls.
    // A failure drops `d`, destroying what was created.
    unsafe {
        check(dnn::cudnnCreateTensorDescriptor(&mut d.x), "cudnnCreateTensorDescriptor")?;
        check(dnn::cudnnCreateFilterDescriptor(&mut d.w), "cudnnCreateFilterDescriptor")?;
        check(dnn::cudnnCreateTensorDescriptor(&mut d.y), "cudnnCreateTensorDescriptor")?;
        check(dnn::cudnnCreateConvolutionDescriptor(&mut d.conv), "cudnnCreateConvolutionDescriptor")?;
        check(
            dnn::cudnnSetTensorNdDescriptor(d.x, data, 4, p.x.dims.as_ptr(), p.x.strides.as_ptr()),
            "cudnnSetTensorNdDescriptor (input)",
        )?;
        check(
            dnn::cudnnSetTensorNdDescriptor(d.y, data, 4, p.y.dims.as_ptr(), p.y.strides.as_ptr()),
            "cudnnSetTensorNdDescriptor (output)",
        )?;
        check(
            dnn::cudnnSetFilterNdDescriptor(d.w, data, dnn::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW, 4, p.w.as_ptr()),
            "cudnnSetFilterNdDescriptor",
        )?;
        check(
            dnn::cudnnSetConvolutionNdDescriptor(
                d.conv,
                2,
                p.padding.as_ptr(),
                p.stride.as_ptr(),
                p.dilation.as_ptr(),
                dnn::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                compute_type(p.dtype),
            ),
            "cudnnSetConvolutionNdDescriptor",
        )?;
        check(dnn::cudnnSetConvolutionGroupCount(d.conv, p.groups), "cudnnSetConvolutionGroupCount")?;
    }
    Ok(d)
}

/// cuDNN's own output dims for `problem`'s input, filter and convolution descriptors
/// (`cudnnGetConvolutionNdForwardOutputDim`), with the descriptors set as a run sets them:
/// host arithmetic only, no GPU needed, so the mapping is checked against cuDNN itself on any
/// machine that has the library (the tests').
#[cfg(test)]
pub fn output_dims_by_cudnn(problem: &ConvProblem) -> Result<[i32; 4], Failure> {
    let d = create(problem)?;
    let mut out = [0i32; 4];
    // SAFETY: the descriptors are live; `out` has room for 4 dims.
    check(
        unsafe { dnn::cudnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, 4, out.as_mut_ptr()) },
        "cudnnGetConvolutionNdForwardOutputDim",
    )?;
    Ok(out)
}

/// One entry of a search's results, laid out as cuDNN's three `cudnnConvolution*AlgoPerf_t`
/// (which share it), with plain integers where cudarc has enums, so no value cuDNN writes
/// can be an invalid Rust enum.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Perf {
    algo: u32,
    status: u32,
    time: f32,
    memory: usize,
    determinism: u32,
    math_type: u32,
    reserved: [i32; 3],
}

/// The device addresses of a problem's three tensors: input, filter, output (each the
/// gradient where the computation writes or reads one).
#[derive(Debug, Clone, Copy)]
pub struct Pointers {
    /// `x` (or `dx`).
    pub x: u64,
    /// `w` (or `dw`).
    pub w: u64,
    /// `y` (or `dy`).
    pub y: u64,
}

impl Pointers {
    /// The least alignment of the three addresses, in bytes (a power of two, at most 256).
    pub fn alignment(&self) -> u32 {
        [self.x, self.w, self.y]
            .iter()
            .fold(256u32, |a, &p| if p == 0 { a } else { a.min(1 << p.trailing_zeros().min(8)) })
    }
}

/// The workspace `algo` needs for `problem`, or `None` where cuDNN does not run it.
fn workspace_size(h: &Handle, d: &Descriptors, op: ConvOp, algo: u32) -> Option<usize> {
    let mut size = 0usize;
    // SAFETY: the handle and descriptors are live; `algo` is below the computation's count, so
    // it is one of the enum's values (each enum is repr(u32) numbered 0..COUNT).
    let status = unsafe {
        match op {
            ConvOp::Forward => dnn::cudnnGetConvolutionForwardWorkspaceSize(
                h.0,
                d.x,
                d.w,
                d.conv,
                d.y,
                std::mem::transmute::<u32, dnn::cudnnConvolutionFwdAlgo_t>(algo),
                &mut size,
            ),
            ConvOp::BackwardData => dnn::cudnnGetConvolutionBackwardDataWorkspaceSize(
                h.0,
                d.w,
                d.y,
                d.conv,
                d.x,
                std::mem::transmute::<u32, dnn::cudnnConvolutionBwdDataAlgo_t>(algo),
                &mut size,
            ),
            ConvOp::BackwardFilter => dnn::cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h.0,
                d.x,
                d.y,
                d.conv,
                d.w,
                std::mem::transmute::<u32, dnn::cudnnConvolutionBwdFilterAlgo_t>(algo),
                &mut size,
            ),
        }
    };
    (status == dnn::cudnnStatus_t::CUDNN_STATUS_SUCCESS).then_some(size)
}

/// The workspace a search of `problems` (one problem's layouts) asks for and what it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchWorkspace {
    /// The most any algorithm of any of the layouts needs, up to [`MAX_WORKSPACE`].
    pub wanted: usize,
    /// What the search gets: `wanted`, or less where the device has less than twice that free
    /// (the search is then not kept across runs).
    pub allowed: usize,
}

/// What a search of `problems` (the layouts it will try) should be given as workspace: the
/// most any algorithm needs (at most [`MAX_WORKSPACE`]), within half the device's free memory.
/// The caller allocates it from CubeCL's pool.
pub fn search_workspace(device: usize, stream: CUstream, problems: &[ConvProblem]) -> Result<SearchWorkspace, Failure> {
    let h = handle(device, stream)?;
    let mut wanted = 0usize;
    for problem in problems {
        let d = descriptors(device, problem, problem.math.cudnn_math_type(problem.dtype))?;
        let most = (0..algorithm_count(problem.op))
            .filter_map(|algo| workspace_size(&h, &d, problem.op, algo))
            .filter(|&s| s as u64 <= MAX_WORKSPACE)
            .max()
            .unwrap_or(0);
        wanted = wanted.max(most);
    }
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two sizes; the device's context is current (run_foreign).
    let status = unsafe { cuMemGetInfo_v2(&mut free, &mut total) };
    if status != cudaError_enum::CUDA_SUCCESS {
        return Err(Failure::new("cuMemGetInfo", format!("{status:?}")));
    }
    Ok(SearchWorkspace { wanted, allowed: wanted.min(free / 2) })
}

/// What a search found for one layout: the choice and its time (milliseconds as cuDNN measured
/// it; cuDNN's estimate order where it did not measure: under `--deterministic`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The algorithm, its math type and workspace (`packed` as the layout searched).
    pub choice: Choice,
    /// Milliseconds, or the rank in cuDNN's heuristic order.
    pub time: f32,
}

/// The best of a search's `perfs` for `problem` within `workspace` bytes: succeeded, one of
/// cuDNN's algorithms and math types, FMA math under strict f32, deterministic (by cuDNN's word
/// and by its documentation) where the problem must be; the fastest, or cuDNN's first where it
/// did not time them.
fn best(problem: &ConvProblem, perfs: &[Perf], workspace: usize, timed: bool) -> Option<Found> {
    let count = algorithm_count(problem.op);
    let strict_f32 = problem.math.cudnn_math_type(problem.dtype) == 3;
    let ok = |p: &&Perf| {
        p.status == 0
            && p.algo < count
            && p.math_type <= 3
            && p.memory <= workspace
            && (!strict_f32 || p.math_type == 3)
            && (!problem.deterministic || (p.determinism == 1 && is_deterministic(problem.op, p.algo)))
    };
    let found = |(rank, p): (usize, &Perf)| Found {
        choice: Choice {
            algo: p.algo,
            math_type: p.math_type,
            workspace: p.memory as u64,
            packed: problem.is_packed(),
        },
        time: if timed { p.time } else { rank as f32 },
    };
    let mut candidates = perfs.iter().enumerate().filter(|(_, p)| ok(p));
    if timed {
        candidates.min_by(|a, b| a.1.time.total_cmp(&b.1.time)).map(found)
    } else {
        candidates.next().map(found)
    }
}

/// Chooses cuDNN's algorithm for `problem` on its real buffers `at`, with `workspace`: where
/// any algorithm may run, by running them all and timing them (`cudnnFind*AlgorithmEx`, the
/// output overwritten as the computation itself will overwrite it), as PyTorch's
/// `cudnn.benchmark`; under `--deterministic`, without timing, cuDNN's first deterministic
/// choice by its own heuristics (`cudnnGet*Algorithm_v7`), as PyTorch's deterministic mode
/// without benchmarking, so the choice is a function of the problem on one machine. `None`
/// where no algorithm qualifies. Waits for the timings (once per problem and machine: the
/// caller keeps the answer).
pub fn search(
    device: usize,
    stream: CUstream,
    problem: &ConvProblem,
    at: Pointers,
    workspace: Workspace,
) -> Result<Option<Found>, Failure> {
    let h = handle(device, stream)?;
    let d = descriptors(device, problem, problem.math.cudnn_math_type(problem.dtype))?;
    let count = algorithm_count(problem.op);
    let mut perfs = vec![Perf::default(); count as usize];
    let mut returned = 0i32;
    let (x, w, y) = (at.x as *mut c_void, at.w as *mut c_void, at.y as *mut c_void);
    let ws = workspace.ptr as *mut c_void;
    let timed = !problem.deterministic;
    // SAFETY: the pointers are the problem's buffers (resolved by run_foreign, sized by the
    // problem's dims and strides), the workspace is `workspace.len` bytes of one of CubeCL's
    // buffers, and `perfs` has room for `count` results laid out as cuDNN's.
    let (status, call) = unsafe {
        match (problem.op, timed) {
            (ConvOp::Forward, true) => (
                dnn::cudnnFindConvolutionForwardAlgorithmEx(
                    h.0,
                    d.x,
                    x,
                    d.w,
                    w,
                    d.conv,
                    d.y,
                    y,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionFwdAlgoPerf_t,
                    ws,
                    workspace.len,
                ),
                "cudnnFindConvolutionForwardAlgorithmEx",
            ),
            (ConvOp::BackwardData, true) => (
                dnn::cudnnFindConvolutionBackwardDataAlgorithmEx(
                    h.0,
                    d.w,
                    w,
                    d.y,
                    y,
                    d.conv,
                    d.x,
                    x,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionBwdDataAlgoPerf_t,
                    ws,
                    workspace.len,
                ),
                "cudnnFindConvolutionBackwardDataAlgorithmEx",
            ),
            (ConvOp::BackwardFilter, true) => (
                dnn::cudnnFindConvolutionBackwardFilterAlgorithmEx(
                    h.0,
                    d.x,
                    x,
                    d.y,
                    y,
                    d.conv,
                    d.w,
                    w,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionBwdFilterAlgoPerf_t,
                    ws,
                    workspace.len,
                ),
                "cudnnFindConvolutionBackwardFilterAlgorithmEx",
            ),
            (ConvOp::Forward, false) => (
                dnn::cudnnGetConvolutionForwardAlgorithm_v7(
                    h.0,
                    d.x,
                    d.w,
                    d.conv,
                    d.y,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionFwdAlgoPerf_t,
                ),
                "cudnnGetConvolutionForwardAlgorithm_v7",
            ),
            (ConvOp::BackwardData, false) => (
                dnn::cudnnGetConvolutionBackwardDataAlgorithm_v7(
                    h.0,
                    d.w,
                    d.y,
                    d.conv,
                    d.x,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionBwdDataAlgoPerf_t,
                ),
                "cudnnGetConvolutionBackwardDataAlgorithm_v7",
            ),
            (ConvOp::BackwardFilter, false) => (
                dnn::cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                    h.0,
                    d.x,
                    d.y,
                    d.conv,
                    d.w,
                    count as i32,
                    &mut returned,
                    perfs.as_mut_ptr() as *mut dnn::cudnnConvolutionBwdFilterAlgoPerf_t,
                ),
                "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
            ),
        }
    };
    check(status, call)?;
    let returned = returned.clamp(0, count as i32) as usize;
    Ok(best(problem, &perfs[..returned], workspace.len, timed))
}

/// Where a computation's workspace is, and its length.
#[derive(Debug, Clone, Copy)]
pub struct Workspace {
    /// Device address (0 when `len` is 0).
    pub ptr: u64,
    /// Bytes.
    pub len: usize,
}

/// Queues `problem`'s computation with `choice` on `stream`: `y = conv(x, w)`,
/// `dx = conv_backward_data(w, dy)` or `dw = conv_backward_filter(x, dy)` (outputs overwritten).
pub fn run(
    device: usize,
    stream: CUstream,
    problem: &ConvProblem,
    choice: Choice,
    at: Pointers,
    workspace: Workspace,
) -> Result<(), Failure> {
    if choice.algo >= algorithm_count(problem.op) {
        let why = format!("algorithm {} of {} is none of cuDNN's", choice.algo, problem.op.name());
        return Err(Failure::new("owt's check of the algorithm", why));
    }
    if at.alignment() < problem.align {
        let why =
            format!("the tensors are {}-byte aligned, the algorithm was chosen for {}", at.alignment(), problem.align);
        return Err(Failure::new("owt's check of the addresses", why));
    }
    let h = handle(device, stream)?;
    let d = descriptors(device, problem, choice.math_type)?;
    let (one_f64, zero_f64, one_f32, zero_f32) = (1f64, 0f64, 1f32, 0f32);
    let (one, zero): (*const c_void, *const c_void) = match problem.dtype {
        ConvDtype::F64 => (&one_f64 as *const f64 as _, &zero_f64 as *const f64 as _),
        _ => (&one_f32 as *const f32 as _, &zero_f32 as *const f32 as _),
    };
    let (x, w, y) = (at.x as *mut c_void, at.w as *mut c_void, at.y as *mut c_void);
    let ws = workspace.ptr as *mut c_void;
    // SAFETY: as in `search`; the algorithm is below the computation's count (checked above),
    // and the workspace is at least what the search measured for it.
    unsafe {
        match problem.op {
            ConvOp::Forward => check(
                dnn::cudnnConvolutionForward(
                    h.0,
                    one,
                    d.x,
                    x,
                    d.w,
                    w,
                    d.conv,
                    std::mem::transmute::<u32, dnn::cudnnConvolutionFwdAlgo_t>(choice.algo),
                    ws,
                    workspace.len,
                    zero,
                    d.y,
                    y,
                ),
                "cudnnConvolutionForward",
            )?,
            ConvOp::BackwardData => check(
                dnn::cudnnConvolutionBackwardData(
                    h.0,
                    one,
                    d.w,
                    w,
                    d.y,
                    y,
                    d.conv,
                    std::mem::transmute::<u32, dnn::cudnnConvolutionBwdDataAlgo_t>(choice.algo),
                    ws,
                    workspace.len,
                    zero,
                    d.x,
                    x,
                ),
                "cudnnConvolutionBackwardData",
            )?,
            ConvOp::BackwardFilter => check(
                dnn::cudnnConvolutionBackwardFilter(
                    h.0,
                    one,
                    d.x,
                    x,
                    d.y,
                    y,
                    d.conv,
                    std::mem::transmute::<u32, dnn::cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
                    ws,
                    workspace.len,
                    zero,
                    d.w,
                    w,
                ),
                "cudnnConvolutionBackwardFilter",
            )?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cudnn::problem::{output_dims, packed_strides, Math};
    use burn::tensor::ops::ConvOptions;

    /// Whether libcudnn loads here; with `OWT_REQUIRE_CUDNN` set (CI, which installs pip's
    /// nvidia-cudnn-cu13 for it) a machine without it fails the test instead of skipping it.
    fn cudnn_here() -> bool {
        match load() {
            Ok(_) => true,
            Err(why) if std::env::var_os("OWT_REQUIRE_CUDNN").is_some() => {
                panic!("OWT_REQUIRE_CUDNN is set but {why}: put pip's nvidia/cudnn/lib on LD_LIBRARY_PATH")
            }
            Err(why) => {
                eprintln!("skipped: {why} (set OWT_REQUIRE_CUDNN to require it)");
                false
            }
        }
    }

    #[test]
    fn cudnn_itself_gives_the_output_dims_of_every_problem_as_owt_describes_it() {
        if !cudnn_here() {
            return;
        }
        let version = load().unwrap();
        assert!(version >= 90000, "cuDNN {version}");
        let mut checked = 0;
        // (batch, channels, side, filters, kernel, stride, padding, dilation, groups): the
        // AlexNets' and VGG's layers, then odd ones.
        let layers = [
            (2, 1, 28, 32, 5, 1, 2, 1, 1),
            (2, 32, 13, 64, 5, 1, 2, 1, 2),
            (2, 3, 224, 64, 11, 4, 2, 1, 1),
            (2, 3, 227, 96, 11, 4, 0, 1, 1),
            (2, 96, 27, 256, 5, 1, 2, 1, 2),
            (2, 384, 13, 384, 3, 1, 1, 1, 2),
            (2, 256, 13, 256, 3, 1, 1, 1, 1),
            (2, 3, 32, 64, 3, 1, 1, 1, 1),
            (2, 512, 2, 512, 3, 1, 1, 1, 1),
            (3, 6, 17, 9, 3, 2, 1, 2, 3),
            (1, 4, 9, 4, 5, 3, 4, 1, 4),
        ];
        for (n, c, side, o, k, s, p, d, g) in layers {
            let options = ConvOptions::new([s, s], [p, p], [d, d], g);
            let x_dims = [n, c, side, side + 1];
            let w_dims = [o, c / g, k, k];
            let y_dims = output_dims(x_dims, w_dims, &options).unwrap();
            // The input pitched as CubeCL lays rows out on CUDA (to a power of two of bytes).
            let pitch = (side + 1).next_power_of_two().max(4);
            let x_strides = [c * side * pitch, side * pitch, pitch, 1];
            for (dtype, math) in
                [(ConvDtype::F32, Math::Tf32), (ConvDtype::F32, Math::Strict), (ConvDtype::Bf16, Math::Tf32)]
            {
                for op in [ConvOp::Forward, ConvOp::BackwardData, ConvOp::BackwardFilter] {
                    let p = ConvProblem::new(
                        op,
                        dtype,
                        math,
                        (x_dims, x_strides),
                        w_dims,
                        (y_dims, packed_strides(y_dims)),
                        &options,
                    )
                    .unwrap();
                    let theirs = output_dims_by_cudnn(&p)
                        .unwrap_or_else(|e| panic!("{x_dims:?} {w_dims:?} {options:?}: {} {}", e.call, e.status));
                    assert_eq!(theirs.map(|v| v as usize), y_dims, "{x_dims:?} {w_dims:?} {options:?} {op:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 11 * 3 * 3);
    }

    /// The grid of convolutions users write (issue 77): non-square kernels, strides, dilations
    /// and paddings, each axis its own value, grouped and depthwise, odd sides with height !=
    /// width. Each problem's descriptors carry height and width each in their place: cuDNN's
    /// own output arithmetic over them (`cudnnGetConvolutionNdForwardOutputDim`) gives owt's
    /// output shape, for the forward pass and both gradients; an axis swapped anywhere in the
    /// descriptors would not, as every configuration here differs between its axes. (Burn
    /// pads an asymmetric `Explicit` padding explicitly before the backend's convolution, as
    /// PyTorch does, so the descriptors only ever see a padding per axis.)
    #[test]
    fn cudnn_gives_the_output_dims_of_every_convolution_of_the_grid() {
        if !cudnn_here() {
            return;
        }
        let mut checked = 0;
        // (input channels, filters, groups): plain, grouped, depthwise.
        let channels = [(4, 6, 1), (6, 4, 2), (4, 8, 4)];
        for kernel in [[1, 7], [7, 1], [3, 5], [11, 11]] {
            for stride in [[1, 1], [2, 1], [1, 3], [4, 4]] {
                for dilation in [[1, 1], [2, 1], [2, 3]] {
                    for padding in [[0, 0], [1, 2], [3, 0]] {
                        let (c, o, g) = channels[checked % channels.len()];
                        let side = |i: usize| ((kernel[i] - 1) * dilation[i] + 1 + 4) | 1;
                        let x_dims = [2, c, side(0), side(1) + 2];
                        let w_dims = [o, c / g, kernel[0], kernel[1]];
                        let options = ConvOptions::new(stride, padding, dilation, g);
                        let y_dims = output_dims(x_dims, w_dims, &options).unwrap();
                        for op in [ConvOp::Forward, ConvOp::BackwardData, ConvOp::BackwardFilter] {
                            let p = ConvProblem::new(
                                op,
                                ConvDtype::F32,
                                Math::Strict,
                                (x_dims, packed_strides(x_dims)),
                                w_dims,
                                (y_dims, packed_strides(y_dims)),
                                &options,
                            )
                            .unwrap();
                            let what = format!("{op:?} x {x_dims:?} w {w_dims:?} {options:?}");
                            let int = |v: [usize; 2]| v.map(|x| x as i32);
                            assert_eq!(
                                (p.padding, p.stride, p.dilation),
                                (int(padding), int(stride), int(dilation)),
                                "{what}"
                            );
                            let theirs =
                                output_dims_by_cudnn(&p).unwrap_or_else(|e| panic!("{what}: {} {}", e.call, e.status));
                            assert_eq!(theirs.map(|v| v as usize), y_dims, "{what}");
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 4 * 4 * 3 * 3);
    }

    /// owt's `Perf` is laid out as cuDNN 9's three `cudnnConvolution*AlgoPerf_t` (cudnn_cnn.h:
    /// two enums, a float, a size_t at 16, two enums at 24 and 28, int[3] at 32; 48 bytes), as
    /// cudarc's bindings of the header have them: a search writes them into owt's array.
    #[test]
    fn perf_is_laid_out_as_cudnns_perf_structs() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<Perf>(), 48);
        let ours = [
            offset_of!(Perf, algo),
            offset_of!(Perf, status),
            offset_of!(Perf, time),
            offset_of!(Perf, memory),
            offset_of!(Perf, determinism),
            offset_of!(Perf, math_type),
            offset_of!(Perf, reserved),
        ];
        assert_eq!(ours, [0, 4, 8, 16, 24, 28, 32]);
        macro_rules! same_as {
            ($t:ty) => {{
                assert_eq!(size_of::<$t>(), size_of::<Perf>(), stringify!($t));
                let theirs = [
                    offset_of!($t, algo),
                    offset_of!($t, status),
                    offset_of!($t, time),
                    offset_of!($t, memory),
                    offset_of!($t, determinism),
                    offset_of!($t, mathType),
                    offset_of!($t, reserved),
                ];
                assert_eq!(theirs, ours, stringify!($t));
            }};
        }
        same_as!(dnn::cudnnConvolutionFwdAlgoPerf_t);
        same_as!(dnn::cudnnConvolutionBwdDataAlgoPerf_t);
        same_as!(dnn::cudnnConvolutionBwdFilterAlgoPerf_t);
        // The enums owt reads as integers are 4 bytes, numbered as the header numbers them.
        assert_eq!(size_of::<dnn::cudnnDeterminism_t>(), 4);
        assert_eq!(dnn::cudnnDeterminism_t::CUDNN_DETERMINISTIC as u32, 1);
        assert_eq!(dnn::cudnnMathType_t::CUDNN_FMA_MATH as u32, 3);
    }

    fn perf(algo: u32, time: f32, memory: usize, determinism: u32, math_type: u32) -> Perf {
        Perf { algo, status: 0, time, memory, determinism, math_type, reserved: [0; 3] }
    }

    fn problem(op: ConvOp, math: Math) -> ConvProblem {
        let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
        let x = [2, 3, 8, 8];
        let w = [4, 3, 3, 3];
        let y = output_dims(x, w, &options).unwrap();
        ConvProblem::new(op, ConvDtype::F32, math, (x, packed_strides(x)), w, (y, packed_strides(y)), &options).unwrap()
    }

    #[test]
    fn the_best_result_is_the_fastest_that_qualifies() {
        let p = problem(ConvOp::BackwardFilter, Math::Tf32);
        let perfs = [
            perf(3, 0.5, 0, 0, 0),                       // fastest, but cuDNN calls it non-deterministic
            Perf { status: 1, ..perf(5, 0.1, 0, 1, 0) }, // failed
            perf(1, 0.9, 0, 1, 0),
            perf(2, 0.7, 4096, 1, 1),
            perf(6, 0.2, 1 << 20, 1, 0), // needs more workspace than the search had
        ];
        let found = best(&p, &perfs, 1 << 16, true).unwrap();
        assert_eq!((found.choice.algo, found.time), (3, 0.5));
        // Deterministic: neither algorithm 3 (non-deterministic by cuDNN's word and its
        // documentation) nor the first in cuDNN's order among the rest but the deterministic one.
        let det = p.deterministic(true);
        let found = best(&det, &perfs, 1 << 16, false).unwrap();
        assert_eq!((found.choice.algo, found.time), (1, 2.0), "cuDNN's order, not time");
        // cuDNN says algorithm 0 of the filter gradient is deterministic: its documentation wins.
        assert!(best(&det, &[perf(0, 0.1, 0, 1, 0)], 0, false).is_none());
        // Strict f32: FMA math only.
        let strict = problem(ConvOp::Forward, Math::Strict);
        let found = best(&strict, &[perf(1, 0.1, 0, 1, 1), perf(0, 0.3, 0, 1, 3)], 0, true).unwrap();
        assert_eq!((found.choice.algo, found.choice.math_type), (0, 3));
        assert!(found.choice.packed, "a packed problem's choice says so");
        assert!(best(&strict, &[perf(1, 0.1, 0, 1, 1)], 0, true).is_none());
    }

    #[test]
    fn the_alignment_of_three_addresses_is_their_least() {
        let at = Pointers { x: 1 << 20, w: (1 << 20) + 16, y: 0 };
        assert_eq!(at.alignment(), 16);
        assert_eq!(Pointers { x: 512, w: 1024, y: 4096 }.alignment(), 256);
    }
}
