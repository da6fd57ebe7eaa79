//! The calls into cuBLASLt (through cudarc's bindings, libcublasLt loaded at run time): one
//! handle per device on CubeCL's device thread, and per GEMM shape its descriptors and the
//! algorithm cuBLASLt's heuristic picks, kept on that thread. Everything here runs inside
//! `CudaServer::run_foreign`, on CubeCL's stream for the calling thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;

use cudarc::cublaslt::sys as lt;
use cudarc::driver::sys::CUstream;

use super::layout::{Gemm, Matrix};
use crate::kernels::cuda_libraries::Failure;
use crate::kernels::cudnn::{ConvDtype, Math};

/// Workspace bytes every matmul is given (cudarc's figure for Hopper; cuBLAS's own default
/// on older GPUs is 4 MiB, which fits inside it).
pub const WORKSPACE: usize = 32 << 20;

/// Whether libcublasLt loads, and its version (`cublasLtGetVersion`).
pub fn load() -> Result<u64, String> {
    // SAFETY: dlopen of the candidate names, as cudarc does it.
    if !unsafe { lt::is_culib_present() } {
        return Err("libcublasLt did not load".into());
    }
    // SAFETY: cublasLtGetVersion takes nothing.
    Ok(unsafe { lt::cublasLtGetVersion() } as u64)
}

fn check(status: lt::cublasStatus_t, call: &str) -> Result<(), Failure> {
    if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Failure::new(call, format!("{status:?}")))
    }
}

struct Handle(lt::cublasLtHandle_t);

/// One GEMM shape's descriptors and algorithm.
struct Prepared {
    desc: lt::cublasLtMatmulDesc_t,
    a: lt::cublasLtMatrixLayout_t,
    b: lt::cublasLtMatrixLayout_t,
    d: lt::cublasLtMatrixLayout_t,
    algo: lt::cublasLtMatmulAlgo_t,
    workspace: usize,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: each non-null one was created by its cublasLt*Create and is destroyed once
        // (a creation that failed left its field null).
        unsafe {
            if !self.desc.is_null() {
                lt::cublasLtMatmulDescDestroy(self.desc);
            }
            for layout in [self.a, self.b, self.d] {
                if !layout.is_null() {
                    lt::cublasLtMatrixLayoutDestroy(layout);
                }
            }
        }
    }
}

thread_local! {
    static HANDLES: RefCell<HashMap<usize, Rc<Handle>>> = RefCell::new(HashMap::new());
    static PREPARED: RefCell<HashMap<(usize, String), Rc<Prepared>>> = RefCell::new(HashMap::new());
}

/// Creates device `device`'s handle on this thread, where it has none yet: what the first use
/// of cuBLASLt on a device waits for, so a failure is a decline, not a failed stream.
pub fn open(device: usize) -> Result<(), Failure> {
    handle(device).map(|_| ())
}

fn handle(device: usize) -> Result<Rc<Handle>, Failure> {
    HANDLES.with(|handles| {
        if let Some(h) = handles.borrow().get(&device) {
            return Ok(h.clone());
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes a handle; the device's context is current (run_foreign).
        check(unsafe { lt::cublasLtCreate(&mut raw) }, "cublasLtCreate")?;
        let h = Rc::new(Handle(raw));
        handles.borrow_mut().insert(device, h.clone());
        Ok(h)
    })
}

fn data_type(dtype: ConvDtype) -> lt::cudaDataType_t {
    use lt::cudaDataType_t::*;
    match dtype {
        ConvDtype::F32 => CUDA_R_32F,
        ConvDtype::F64 => CUDA_R_64F,
        ConvDtype::F16 => CUDA_R_16F,
        ConvDtype::Bf16 => CUDA_R_16BF,
    }
}

/// The compute and scale types: TF32 tensor cores or strict f32 for f32 data, f64 for f64,
/// f32 accumulation for the half types (as PyTorch's `allow_tf32` for matmuls).
fn compute_type(dtype: ConvDtype, math: Math) -> (lt::cublasComputeType_t, lt::cudaDataType_t) {
    use lt::cublasComputeType_t::*;
    match (dtype, math) {
        (ConvDtype::F32, Math::Tf32) => (CUBLAS_COMPUTE_32F_FAST_TF32, lt::cudaDataType_t::CUDA_R_32F),
        (ConvDtype::F64, _) => (CUBLAS_COMPUTE_64F, lt::cudaDataType_t::CUDA_R_64F),
        _ => (CUBLAS_COMPUTE_32F, lt::cudaDataType_t::CUDA_R_32F),
    }
}

/// The largest power of two (up to 256) that divides every address: what cuBLASLt may
/// assume of the operands' alignment.
fn alignment(addresses: &[u64]) -> u32 {
    addresses.iter().fold(256u32, |a, &p| if p == 0 { a } else { a.min(1 << p.trailing_zeros().min(8)) })
}

/// Creates `m`'s layout into `out`: left null where creation fails; created where a later
/// attribute fails, for the caller's [`Prepared`] to destroy.
fn layout(out: &mut lt::cublasLtMatrixLayout_t, dtype: ConvDtype, m: &Matrix, batch: u64) -> Result<(), Failure> {
    // SAFETY: writes a layout it creates; the attribute values outlive the calls.
    unsafe {
        check(
            lt::cublasLtMatrixLayoutCreate(out, data_type(dtype), m.rows, m.cols, m.ld),
            "cublasLtMatrixLayoutCreate",
        )?;
        let raw = *out;
        if batch > 1 {
            use lt::cublasLtMatrixLayoutAttribute_t::*;
            set_layout_attribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &(batch as i32), "batch count")?;
            set_layout_attribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.batch_stride, "batch stride")?;
        }
    }
    Ok(())
}

/// Sets one attribute of a layout to `value` (its size is the attribute's).
///
/// # Safety
///
/// `layout` is a live layout and `T` the attribute's C type.
unsafe fn set_layout_attribute<T>(
    layout: lt::cublasLtMatrixLayout_t,
    attribute: lt::cublasLtMatrixLayoutAttribute_t,
    value: &T,
    what: &str,
) -> Result<(), Failure> {
    // SAFETY: as the caller promises; `value` outlives the call.
    let status = unsafe {
        lt::cublasLtMatrixLayoutSetAttribute(layout, attribute, value as *const T as *const c_void, size_of::<T>())
    };
    check(status, &format!("cublasLtMatrixLayoutSetAttribute ({what})"))
}

/// A heuristic result laid out as `cublasLtMatmulHeuristicResult_t`, its status a plain
/// integer so no value cuBLASLt writes is an invalid Rust enum.
#[repr(C)]
#[derive(Clone, Copy)]
struct Heuristic {
    algo: lt::cublasLtMatmulAlgo_t,
    workspace_size: usize,
    state: u32,
    waves_count: f32,
    reserved: [i32; 4],
}

/// `gemm`'s descriptors and cuBLASLt's heuristic choice for it, or `None` where the heuristic
/// has no algorithm.
fn prepare(h: &Handle, gemm: &Gemm, dtype: ConvDtype, math: Math, align: u32) -> Result<Option<Prepared>, Failure> {
    let (compute, scale) = compute_type(dtype, math);
    // Every field null until created, so a failure part way destroys what was created.
    let mut prepared = Prepared {
        desc: std::ptr::null_mut(),
        a: std::ptr::null_mut(),
        b: std::ptr::null_mut(),
        d: std::ptr::null_mut(),
        algo: lt::cublasLtMatmulAlgo_t { data: [0; 8] },
        workspace: 0,
    };
    // SAFETY: creates a descriptor into the field.
    unsafe {
        check(lt::cublasLtMatmulDescCreate(&mut prepared.desc, compute, scale), "cublasLtMatmulDescCreate")?;
    }
    layout(&mut prepared.a, dtype, &gemm.a, gemm.batch)?;
    layout(&mut prepared.b, dtype, &gemm.b, gemm.batch)?;
    layout(&mut prepared.d, dtype, &gemm.d, gemm.batch)?;
    let desc = prepared.desc;
    let op = |t: bool| -> i32 { i32::from(t) };
    let (ta, tb) = (op(gemm.a.transposed), op(gemm.b.transposed));
    let mut pref = std::ptr::null_mut();
    let max_workspace = WORKSPACE as u64;
    let mut heuristic = std::mem::MaybeUninit::<Heuristic>::zeroed();
    let mut returned = 0i32;
    // SAFETY: as above; the heuristic writes at most one result into `heuristic`.
    unsafe {
        use lt::cublasLtMatmulDescAttributes_t::*;
        use lt::cublasLtMatmulPreferenceAttributes_t::*;
        check(
            lt::cublasLtMatmulDescSetAttribute(
                desc,
                CUBLASLT_MATMUL_DESC_TRANSA,
                &ta as *const i32 as *const c_void,
                4,
            ),
            "cublasLtMatmulDescSetAttribute (transa)",
        )?;
        check(
            lt::cublasLtMatmulDescSetAttribute(
                desc,
                CUBLASLT_MATMUL_DESC_TRANSB,
                &tb as *const i32 as *const c_void,
                4,
            ),
            "cublasLtMatmulDescSetAttribute (transb)",
        )?;
        check(lt::cublasLtMatmulPreferenceCreate(&mut pref), "cublasLtMatmulPreferenceCreate")?;
        let set = |attr, value: *const c_void, len| lt::cublasLtMatmulPreferenceSetAttribute(pref, attr, value, len);
        let mut result = check(
            set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace as *const u64 as *const c_void, 8),
            "cublasLtMatmulPreferenceSetAttribute (workspace)",
        );
        for attr in [
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ] {
            if result.is_ok() {
                result = check(
                    set(attr, &align as *const u32 as *const c_void, 4),
                    "cublasLtMatmulPreferenceSetAttribute (alignment)",
                );
            }
        }
        if result.is_ok() {
            result = check(
                lt::cublasLtMatmulAlgoGetHeuristic(
                    h.0,
                    desc,
                    prepared.a,
                    prepared.b,
                    prepared.d,
                    prepared.d,
                    pref,
                    1,
                    heuristic.as_mut_ptr() as *mut lt::cublasLtMatmulHeuristicResult_t,
                    &mut returned,
                ),
                "cublasLtMatmulAlgoGetHeuristic",
            );
        }
        lt::cublasLtMatmulPreferenceDestroy(pref);
        result?;
    }
    // SAFETY: zero-initialised, then written by the heuristic where it returned a result.
    let heuristic = unsafe { heuristic.assume_init() };
    if returned < 1 {
        return Ok(None);
    }
    if heuristic.state != 0 {
        return Err(Failure::new("cublasLtMatmulAlgoGetHeuristic", format!("its result's state {}", heuristic.state)));
    }
    prepared.algo = heuristic.algo;
    prepared.workspace = heuristic.workspace_size.min(WORKSPACE);
    Ok(Some(prepared))
}

/// The addresses of a GEMM's operands: cuBLASLt's `A` (the row-major `rhs`), `B` (`lhs`) and
/// `D` (the output), and its workspace of [`WORKSPACE`] bytes.
#[derive(Debug, Clone, Copy)]
pub struct Pointers {
    /// `rhs`.
    pub a: u64,
    /// `lhs`.
    pub b: u64,
    /// The output.
    pub d: u64,
    /// The workspace.
    pub workspace: u64,
}

/// The key of a GEMM's prepared descriptors and algorithm on a device thread.
fn key(device: usize, gemm: &Gemm, dtype: ConvDtype, math: Math, align: u32) -> (usize, String) {
    (device, format!("{gemm:?} {dtype:?} {math:?} align {align}"))
}

/// `gemm`'s descriptors and cuBLASLt's heuristic choice of algorithm for operands aligned to
/// `align` bytes, made once per key on this (CubeCL's device) thread and kept: whether cuBLASLt
/// has an algorithm for it. Callers run this, waiting, before a GEMM's first run, so a GEMM
/// cuBLASLt cannot run goes to CubeCL instead of failing on the stream.
pub fn prepare_cached(device: usize, gemm: &Gemm, dtype: ConvDtype, math: Math, align: u32) -> Result<bool, Failure> {
    match prepared(device, gemm, dtype, math, align) {
        Ok(_) => Ok(true),
        Err(None) => Ok(false),
        Err(Some(f)) => Err(f),
    }
}

/// The prepared GEMM, or `Err(None)` where the heuristic has no algorithm for it.
fn prepared(
    device: usize,
    gemm: &Gemm,
    dtype: ConvDtype,
    math: Math,
    align: u32,
) -> Result<Rc<Prepared>, Option<Failure>> {
    let h = handle(device)?;
    let key = key(device, gemm, dtype, math, align);
    PREPARED.with(|all| -> Result<Rc<Prepared>, Option<Failure>> {
        if let Some(p) = all.borrow().get(&key) {
            return Ok(p.clone());
        }
        let p = Rc::new(prepare(&h, gemm, dtype, math, align)?.ok_or(None)?);
        all.borrow_mut().insert(key.clone(), p.clone());
        Ok(p)
    })
}

/// Queues `gemm` (`D = op(A) op(B)`, D overwritten) on `stream`, with the algorithm
/// [`prepare_cached`] chose for operands aligned to `align` bytes (refused, failing the stream,
/// where the addresses are aligned less).
pub fn run(
    device: usize,
    stream: CUstream,
    gemm: &Gemm,
    dtype: ConvDtype,
    math: Math,
    align: u32,
    at: Pointers,
) -> Result<(), Failure> {
    let actual = alignment(&[at.a, at.b, at.d]);
    if actual < align {
        let why = format!("the operands are {actual}-byte aligned, the algorithm was chosen for {align}");
        return Err(Failure::new("owt's check of the addresses", why));
    }
    let prepared = prepared(device, gemm, dtype, math, align).map_err(|f| {
        f.unwrap_or_else(|| Failure::new("cublasLtMatmulAlgoGetHeuristic", "no algorithm (it had one before)"))
    })?;
    let h = handle(device)?;
    let (one_f64, zero_f64, one_f32, zero_f32) = (1f64, 0f64, 1f32, 0f32);
    let (one, zero): (*const c_void, *const c_void) = match dtype {
        ConvDtype::F64 => (&one_f64 as *const f64 as _, &zero_f64 as *const f64 as _),
        _ => (&one_f32 as *const f32 as _, &zero_f32 as *const f32 as _),
    };
    let d = at.d as *mut c_void;
    // SAFETY: the addresses are the operands' buffers as run_foreign resolved them, laid out as
    // `gemm` describes; the workspace holds at least `prepared.workspace` bytes.
    check(
        unsafe {
            lt::cublasLtMatmul(
                h.0,
                prepared.desc,
                one,
                at.a as *const c_void,
                prepared.a,
                at.b as *const c_void,
                prepared.b,
                zero,
                d,
                prepared.d,
                d,
                prepared.d,
                &prepared.algo,
                at.workspace as *mut c_void,
                prepared.workspace,
                stream as lt::cudaStream_t,
            )
        },
        "cublasLtMatmul",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_of_addresses_is_their_largest_common_power_of_two_up_to_256() {
        use crate::kernels::cudnn::problem::alignment_at;
        assert_eq!([0, 4, 12, 64, 512, 1536, 768].map(alignment_at), [256, 4, 4, 64, 256, 256, 256]);
        assert_eq!(alignment(&[1 << 20, (1 << 20) + 16, 0]), 16);
    }

    /// owt's `Heuristic` is laid out as cuBLASLt's `cublasLtMatmulHeuristicResult_t`
    /// (cublasLt.h: the 64-byte algorithm, a size_t at 64, the state at 72, a float at 76, int[4]
    /// at 80; 96 bytes), as cudarc's bindings of the header have it: the heuristic writes one
    /// into owt's.
    #[test]
    fn the_heuristic_result_is_laid_out_as_cublaslts() {
        use std::mem::{offset_of, size_of};
        type Theirs = lt::cublasLtMatmulHeuristicResult_t;
        assert_eq!(size_of::<Heuristic>(), 96);
        assert_eq!(size_of::<Theirs>(), 96);
        let ours = [
            offset_of!(Heuristic, algo),
            offset_of!(Heuristic, workspace_size),
            offset_of!(Heuristic, state),
            offset_of!(Heuristic, waves_count),
            offset_of!(Heuristic, reserved),
        ];
        assert_eq!(ours, [0, 64, 72, 76, 80]);
        let theirs = [
            offset_of!(Theirs, algo),
            offset_of!(Theirs, workspaceSize),
            offset_of!(Theirs, state),
            offset_of!(Theirs, wavesCount),
            offset_of!(Theirs, reserved),
        ];
        assert_eq!(theirs, ours);
        assert_eq!(size_of::<lt::cublasLtMatmulAlgo_t>(), 64);
    }
}
