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
use cudarc::driver::sys::{cuMemAllocAsync, cuMemFreeAsync, cudaError_enum, CUdeviceptr, CUstream};

use super::algorithm_cache::{algorithm_count, Choice};
use super::problem::{ConvDtype, ConvOp, ConvProblem};

/// The most workspace a search lets an algorithm use (PyTorch caps its search by the largest
/// free block; an algorithm that needs more than this is not worth its memory here).
pub const MAX_SEARCH_WORKSPACE: usize = 1 << 30;

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
fn check(status: dnn::cudnnStatus_t, call: &str) -> Result<(), String> {
    if status == dnn::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cudnnGetErrorString returns a static C string for any status.
    let text = unsafe { CStr::from_ptr(dnn::cudnnGetErrorString(status)) };
    Err(format!("{call}: {} ({status:?})", text.to_string_lossy()))
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

/// The handle of device `device` on this thread, bound to `stream`.
fn handle(device: usize, stream: CUstream) -> Result<Rc<Handle>, String> {
    let handle = HANDLES.with(|handles| -> Result<Rc<Handle>, String> {
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

fn math_type(value: u32) -> Result<dnn::cudnnMathType_t, String> {
    use dnn::cudnnMathType_t::*;
    Ok(match value {
        0 => CUDNN_DEFAULT_MATH,
        1 => CUDNN_TENSOR_OP_MATH,
        2 => CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
        3 => CUDNN_FMA_MATH,
        other => return Err(format!("math type {other} is none of cuDNN's")),
    })
}

/// The descriptors of `problem` on this thread for `device`, with `math` set on the
/// convolution descriptor (a search's choice, or the problem's own before a search).
fn descriptors(device: usize, problem: &ConvProblem, math: u32) -> Result<Rc<Descriptors>, String> {
    let key = (device, problem.key());
    let d = DESCRIPTORS.with(|all| -> Result<Rc<Descriptors>, String> {
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

fn create(p: &ConvProblem) -> Result<Descriptors, String> {
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
pub fn output_dims_by_cudnn(problem: &ConvProblem) -> Result<[i32; 4], String> {
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

/// Device memory allocated on `stream` for the length of a search, freed on the same stream.
struct Scratch {
    ptr: CUdeviceptr,
    len: usize,
    stream: CUstream,
}

impl Scratch {
    /// As much as `wanted` bytes allows, halving on failure, down to nothing.
    fn at_most(wanted: usize, stream: CUstream) -> Scratch {
        let mut len = wanted;
        while len > 0 {
            let mut ptr: CUdeviceptr = 0;
            // SAFETY: cuMemAllocAsync writes a device address valid on `stream`.
            if unsafe { cuMemAllocAsync(&mut ptr, len, stream) } == cudaError_enum::CUDA_SUCCESS {
                return Scratch { ptr, len, stream };
            }
            len /= 2;
        }
        Scratch { ptr: 0, len: 0, stream }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated on this stream by cuMemAllocAsync; the search's work on the
            // stream precedes the free in stream order.
            unsafe { cuMemFreeAsync(self.ptr, self.stream) };
        }
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

/// Runs every algorithm cuDNN has for `problem` on its real buffers (the output is
/// overwritten, as the computation itself will overwrite it) and returns the fastest that
/// succeeded within the search's workspace, or `None` where none did. Under strict f32 only
/// algorithms that ran in FMA math count. Blocks the device thread until the timings are in
/// (once per problem and machine: the caller keeps the answer).
pub fn search(device: usize, stream: CUstream, problem: &ConvProblem, at: Pointers) -> Result<Option<Choice>, String> {
    let h = handle(device, stream)?;
    let d = descriptors(device, problem, problem.math.cudnn_math_type(problem.dtype))?;
    let count = algorithm_count(problem.op);
    let wanted = (0..count)
        .filter_map(|algo| workspace_size(&h, &d, problem.op, algo))
        .filter(|&s| s <= MAX_SEARCH_WORKSPACE)
        .max()
        .unwrap_or(0);
    let scratch = Scratch::at_most(wanted, stream);
    let mut perfs = vec![Perf::default(); count as usize];
    let mut returned = 0i32;
    let (x, w, y) = (at.x as *mut c_void, at.w as *mut c_void, at.y as *mut c_void);
    let ws = scratch.ptr as *mut c_void;
    // SAFETY: the pointers are the problem's buffers (resolved by run_foreign, sized by the
    // problem's dims and strides), the scratch is `scratch.len` bytes on this stream, and
    // `perfs` has room for `count` results laid out as cuDNN's.
    let status = unsafe {
        match problem.op {
            ConvOp::Forward => dnn::cudnnFindConvolutionForwardAlgorithmEx(
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
                scratch.len,
            ),
            ConvOp::BackwardData => dnn::cudnnFindConvolutionBackwardDataAlgorithmEx(
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
                scratch.len,
            ),
            ConvOp::BackwardFilter => dnn::cudnnFindConvolutionBackwardFilterAlgorithmEx(
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
                scratch.len,
            ),
        }
    };
    drop(scratch);
    check(status, "cudnnFind*AlgorithmEx")?;
    let strict_f32 = problem.math.cudnn_math_type(problem.dtype) == 3;
    let found = perfs[..returned.clamp(0, count as i32) as usize]
        .iter()
        .filter(|p| p.status == 0 && p.algo < count && p.math_type <= 3)
        .filter(|p| !strict_f32 || p.math_type == 3)
        .min_by(|a, b| a.time.total_cmp(&b.time))
        .map(|p| Choice { algo: p.algo, math_type: p.math_type, workspace: p.memory as u64 });
    Ok(found)
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
) -> Result<(), String> {
    if choice.algo >= algorithm_count(problem.op) {
        return Err(format!("algorithm {} of {} is none of cuDNN's", choice.algo, problem.op.name()));
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
                    let theirs =
                        output_dims_by_cudnn(&p).unwrap_or_else(|e| panic!("{x_dims:?} {w_dims:?} {options:?}: {e}"));
                    assert_eq!(theirs.map(|v| v as usize), y_dims, "{x_dims:?} {w_dims:?} {options:?} {op:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 11 * 3 * 3);
    }
}
