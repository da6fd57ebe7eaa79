//! The convolutions and matmuls of CubeCL's CUDA backend handed to cuDNN and cuBLASLt: what
//! [`install`] registers with the vendored burn-cubecl's hook. Each op is described for the
//! library ([`ConvProblem`], [`gemm`]), its output allocated by CubeCL on the calling thread
//! (so on that thread's stream), and the library's call queued on CubeCL's device thread in
//! that stream's order (`CudaServer::run_foreign`). What may fail waits and is checked first,
//! so a failure is a decline and never a failed stream ([`Decisions`]): each device's handle is
//! created at its first use, a problem's algorithm searched once (on CubeCL's own buffers and
//! workspace), and each problem's first run on a device waits for the library's status; later
//! runs are queued without waiting. An op a library does not take (a layout or dtype it cannot
//! describe, a failure, a problem no algorithm runs) goes to CubeCL's kernels, counted and its
//! reason kept ([`declines`]); under strict f32 such ops are also named by [`not_strict`]
//! (CubeCL's kernels round f32 through TF32).

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use burn::tensor::ops::ConvOptions;
use burn::tensor::DType;
use burn_cubecl::kernel::external::{self, ExternalKernels};
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl_cuda::{CudaRuntime, CudaServer, ForeignBuffer};
use cubecl_runtime::server::Handle;

use super::choice::{ConvKernels, Installed, KernelChoice, MatmulKernels, Runner};
use super::decisions::{Decisions, Failure, LibraryCalls, NothingRemembered, Remembered, Searched};
use super::usage::COUNTERS;
use crate::kernels::cublaslt::{self, gemm, Gemm};
use crate::kernels::cudnn::algorithm_cache::{version_name, FILE_NAME};
use crate::kernels::cudnn::problem::{alignment_at, packed_strides};
use crate::kernels::cudnn::Math;
use crate::kernels::cudnn::{self, AlgorithmCache, Choice, ConvDtype, ConvOp, ConvProblem, Identity};
use crate::kernels::libraries::{find, Library, Loader};

type Tensor = CubeTensor<CudaRuntime>;
type Client = burn_cubecl::cubecl::client::ComputeClient<CudaRuntime>;

/// The most distinct reasons [`declines`] keeps.
const MAX_DECLINES: usize = 32;

static DECLINES: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The ops that ran on CubeCL's kernels under strict f32, each once.
static NOT_STRICT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Why ops were left to CubeCL's kernels although a library was installed, each reason once
/// (at most 32).
pub fn declines() -> Vec<String> {
    DECLINES.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
}

/// Under `--tf32 off`, the ops (by kind and problem) that CubeCL's kernels ran because a library
/// declined them: they rounded f32 through TF32 (at most 32). Empty under TF32, and where every
/// op ran strict.
pub fn not_strict() -> Vec<String> {
    NOT_STRICT.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
}

fn decline(why: String) {
    let mut all = DECLINES.lock().unwrap_or_else(|e| e.into_inner());
    if all.len() < MAX_DECLINES {
        all.insert(why);
    }
}

/// Decides who runs CUDA's convolutions and matmuls under `choice` on this machine (libraries
/// looked for through `loader`), registers the decision with burn-cubecl for every CUDA device
/// of this process, and returns it with warnings to print (a damaged algorithm cache). cuDNN's
/// algorithm choices are kept in `cache_dir` (none: searched every run), each device's under
/// its GPU's name (`gpus[i]` for device `i`). Refused, in one line: `--conv cudnn` or `--matmul
/// cublaslt` where the library does not load, strict f32 where either library does not run
/// (CubeCL's tensor-core kernels round f32 through TF32). Call before any CUDA device starts: a
/// fusion server reads whether matmuls are taken when it starts.
pub fn install(
    choice: KernelChoice,
    loader: &dyn Loader,
    cache_dir: Option<&Path>,
    gpus: &[String],
) -> Result<(Installed, Vec<String>), String> {
    let conv = match choice.conv {
        ConvKernels::Auto => Ask::Library,
        ConvKernels::Cudnn => Ask::Forced("--conv cudnn"),
        ConvKernels::Owt => Ask::Cubecl("--conv owt"),
        ConvKernels::Cubecl => Ask::Cubecl("--conv cubecl"),
    };
    let conv = library_for(conv, &Library::cudnn(), loader, cudnn::ffi::load)?;
    let matmul = match choice.matmul {
        MatmulKernels::Auto => Ask::Library,
        MatmulKernels::Cublaslt => Ask::Forced("--matmul cublaslt"),
        MatmulKernels::Cubecl => Ask::Cubecl("--matmul cubecl"),
    };
    let matmul = library_for(matmul, &Library::cublaslt(), loader, cublaslt::ffi::load)?;
    if choice.math == Math::Strict {
        let missing: Vec<&str> = [(&conv, "convolutions"), (&matmul, "matmuls")]
            .iter()
            .filter(|(r, _)| r.is_err())
            .map(|(_, what)| *what)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "--tf32 off: strict f32 needs cuDNN and cuBLASLt, but CubeCL's kernels would run the {} (they round f32 through TF32)",
                missing.join(" and ")
            ));
        }
    }
    let mut warnings = Vec::new();
    let cudnn = match &conv {
        Ok((_, version, _)) => {
            let cache = match cache_dir {
                Some(dir) => {
                    let (cache, warning) = AlgorithmCache::load(&dir.join(FILE_NAME));
                    warnings.extend(warning);
                    cache
                }
                None => AlgorithmCache::empty(None),
            };
            let names = if gpus.is_empty() { vec!["unknown GPU".to_string()] } else { gpus.to_vec() };
            let gpus = names.into_iter().map(|gpu| Identity { gpu, cudnn: *version }).collect();
            Some(Cudnn { cache: Mutex::new(cache), gpus, decisions: Arc::default() })
        }
        Err(_) => None,
    };
    let runner = |r: Result<(String, u64, String), String>| match r {
        Ok((file, _, name)) => Runner::Library { name, file },
        Err(why) => Runner::Cubecl { why },
    };
    let conv = runner(conv);
    let installed = Installed {
        owt_strided_weight_gradients: !conv.is_library() && choice.conv != ConvKernels::Cubecl,
        conv,
        matmul: runner(matmul),
        math: choice.math.name(),
        deterministic: choice.deterministic,
    };
    let libraries = CudaLibraries {
        cudnn,
        owt_strided_weight_gradients: installed.owt_strided_weight_gradients,
        cublaslt: installed.matmul.is_library().then(Arc::default),
        packed_filters: PackedFilters::default(),
        math: choice.math,
        deterministic: choice.deterministic,
    };
    external::register::<CudaRuntime>(Arc::new(libraries));
    Ok((installed, warnings))
}

/// What a run asks of one library.
enum Ask {
    /// The library where it loads.
    Library,
    /// The library, or the run is refused (the flag that forced it).
    Forced(&'static str),
    /// CubeCL's kernels (the flag that asked for them).
    Cubecl(&'static str),
}

/// The library `library` for one kind of op as `ask` says: its file, version and name
/// (`cuDNN 9.10.0`), or why CubeCL's kernels run them; `Err` refuses the run (forced and not
/// found).
fn library_for(
    ask: Ask,
    library: &Library,
    loader: &dyn Loader,
    load: fn() -> Result<u64, String>,
) -> Result<Result<(String, u64, String), String>, String> {
    let found = match ask {
        Ask::Cubecl(flag) => return Ok(Err(flag.to_string())),
        _ => open(library, loader, load).map(|(file, v)| (file, v, format!("{} {}", library.what, version_name(v)))),
    };
    match (found, ask) {
        (Err(why), Ask::Forced(flag)) => Err(format!("{flag}: {why}")),
        (found, _) => Ok(found),
    }
}

/// The file of `library` that loads and its version, or what was looked for and where.
fn open(library: &Library, loader: &dyn Loader, load: fn() -> Result<u64, String>) -> Result<(String, u64), String> {
    let file = find(library, loader).map_err(|missing| missing.to_string())?;
    let version = load().map_err(|why| format!("{file} found but unusable: {why}"))?;
    Ok((file, version))
}

/// One of a convolution's computations as burn-cubecl's hook hands it over: `x` the input (its
/// dims only, for the input gradient), `w` the filter, `dy` the output gradient (the two
/// gradients), `bias` the forward's.
#[derive(Clone, Copy)]
struct ConvCall<'a> {
    op: ConvOp,
    x: &'a Tensor,
    w: &'a Tensor,
    dy: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
    options: &'a ConvOptions<2>,
}

/// cuDNN where it runs convolutions: its algorithm cache, each device's GPU, what it decided.
struct Cudnn {
    /// The algorithm cache (every GPU's section).
    cache: Mutex<AlgorithmCache>,
    /// Device `i`'s GPU and cuDNN (the last for devices past the list).
    gpus: Vec<Identity>,
    decisions: Arc<Decisions<Choice>>,
}

impl Cudnn {
    fn gpu(&self, device: usize) -> &Identity {
        &self.gpus[device.min(self.gpus.len() - 1)]
    }
}

/// What [`install`] registers.
struct CudaLibraries {
    /// cuDNN, where it runs convolutions.
    cudnn: Option<Cudnn>,
    /// Whether owt's unfolded GEMM takes strided convolutions' weight gradients (without cuDNN).
    owt_strided_weight_gradients: bool,
    /// What cuBLASLt decided for each GEMM, where it runs matmuls.
    cublaslt: Option<Arc<Decisions<()>>>,
    /// Packed copies of the filters handed to cuDNN.
    packed_filters: PackedFilters,
    math: Math,
    /// `--deterministic`: cuDNN's deterministic algorithms only.
    deterministic: bool,
}

fn dims<const D: usize>(t: &Tensor) -> Option<[usize; D]> {
    t.meta.shape().to_vec().try_into().ok()
}

fn strides<const D: usize>(t: &Tensor) -> Option<[usize; D]> {
    t.meta.strides().to_vec().try_into().ok()
}

fn is_packed(t: &Tensor) -> bool {
    match dims::<4>(t) {
        Some(d) => strides::<4>(t) == Some(packed_strides(d)),
        None => false,
    }
}

/// `t` laid out packed row-major: itself, or a copy by CubeCL's kernel.
fn packed(t: &Tensor) -> Result<Tensor, String> {
    let d: [usize; 4] = dims(t).ok_or("a tensor of rank other than 4")?;
    if is_packed(t) {
        return Ok(t.clone());
    }
    let copy = burn_cubecl::kernel::into_contiguous(t.clone());
    if is_packed(&copy) {
        Ok(copy)
    } else {
        Err(format!("the tensor {d:?} does not pack (strides {:?})", copy.meta.strides().to_vec()))
    }
}

/// The most packed filters [`PackedFilters`] keeps (with their originals): a few steps of a
/// network's convolutions.
const MAX_PACKED_FILTERS: usize = 64;

/// Packed copies of the filters handed to cuDNN (its filter descriptors take no strides, and
/// CubeCL pads each filter row), each kept with a handle of its original: the forward and the
/// input gradient of one step share one copy, and while the copy is kept the original cannot
/// be changed in place (CubeCL writes in place only into a handle nothing else holds).
#[derive(Default)]
struct PackedFilters(Mutex<VecDeque<(Tensor, Tensor)>>);

impl PackedFilters {
    /// `w` packed: itself where it is, else a kept copy or a new one.
    fn of(&self, w: &Tensor) -> Result<Tensor, String> {
        if is_packed(w) {
            return Ok(w.clone());
        }
        let same = |kept: &Tensor| {
            kept.handle.memory.same_memory(&w.handle.memory)
                && kept.handle.offset_start == w.handle.offset_start
                && kept.meta.shape() == w.meta.shape()
                && kept.meta.strides() == w.meta.strides()
                && kept.dtype == w.dtype
                && kept.device == w.device
        };
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, copy)) = kept.iter().find(|(original, _)| same(original)) {
            return Ok(copy.clone());
        }
        let copy = packed(w)?;
        kept.push_back((w.clone(), copy.clone()));
        if kept.len() > MAX_PACKED_FILTERS {
            kept.pop_front();
        }
        Ok(copy)
    }
}

/// The bytes a tensor's elements span from its first (its buffer must hold that many).
fn span_bytes(t: &Tensor) -> u64 {
    let shape = t.meta.shape().to_vec();
    let furthest: usize = shape.iter().zip(t.meta.strides().iter()).map(|(&d, &s)| d.saturating_sub(1) * s).sum();
    ((furthest + 1) * t.dtype.size()) as u64
}

/// One dtype for all of `tensors`, as cuDNN and cuBLASLt type it.
fn one_dtype(tensors: &[&Tensor]) -> Result<(ConvDtype, DType), String> {
    let dtype = tensors[0].dtype;
    if tensors.iter().any(|t| t.dtype != dtype) {
        let all: Vec<DType> = tensors.iter().map(|t| t.dtype).collect();
        return Err(format!("mixed dtypes {all:?}"));
    }
    ConvDtype::of(dtype).map(|d| (d, dtype)).ok_or_else(|| format!("dtype {dtype:?}"))
}

/// Checks that each buffer `run_foreign` resolved holds the bytes its tensor spans (a layout
/// that addressed past its buffer would have the library read or write someone else's memory).
fn check_sizes(buffers: &[ForeignBuffer], needs: &[u64]) -> Result<(), Failure> {
    for (i, (b, need)) in buffers.iter().zip(needs).enumerate() {
        if b.size < *need {
            let why = format!("buffer {i} holds {} bytes, the op spans {need}", b.size);
            return Err(Failure::new("owt's check of the buffers", why));
        }
    }
    Ok(())
}

/// Queues `task` on CubeCL's device thread with `handles` resolved, in the order of the
/// client's stream; an error it returns fails the stream.
fn submit<F>(client: &Client, handles: Vec<Handle>, task: F)
where
    F: FnOnce(cudarc::driver::sys::CUstream, &[ForeignBuffer]) -> Result<(), String> + Send + 'static,
{
    let bindings = handles.into_iter().map(Handle::binding).collect();
    client.submit_to_server(move |server: &mut CudaServer, stream_id| {
        // SAFETY: the tasks below check each buffer's size against what their tensors span
        // before the library touches it, and only queue work on the stream they are given.
        unsafe { server.run_foreign(stream_id, bindings, task) }
    });
}

/// Runs `task` on CubeCL's device thread with `handles` resolved, after everything queued
/// before it, and waits for what it finds; a failure (of `task`, or of the device, which did
/// not run it after an earlier error) is returned, never recorded on the stream.
fn submit_and_wait<T, F>(client: &Client, handles: Vec<Handle>, task: F) -> Result<T, Failure>
where
    T: Send,
    F: FnOnce(cudarc::driver::sys::CUstream, &[ForeignBuffer]) -> Result<T, Failure> + Send,
{
    let bindings = handles.into_iter().map(Handle::binding).collect();
    client
        .submit_to_server_blocking(move |server: &mut CudaServer, stream_id| {
            let mut found = None;
            // SAFETY: as in `submit`: the tasks check each buffer's size before touching it.
            unsafe {
                server.run_foreign(stream_id, bindings, |stream, buffers| {
                    found = Some(task(stream, buffers));
                    Ok(())
                })
            };
            found
        })
        .flatten()
        .unwrap_or_else(|| {
            Err(Failure::new("CubeCL's device thread", "did not run the call: the device reported an earlier error"))
        })
}

/// A convolution's three tensors as its problem names them (`x`, `w`, `y`; the one the
/// computation writes allocated packed), and which of them it reads.
#[derive(Clone)]
struct ConvOperands {
    op: ConvOp,
    x: Tensor,
    w: Tensor,
    y: Tensor,
}

impl ConvOperands {
    /// The bytes of the tensors the computation reads that a packed layout copies (those not
    /// packed already).
    fn copied_bytes(&self) -> u64 {
        let (reads_x, reads_y) = self.reads();
        let bytes = |t: &Tensor| if is_packed(t) { 0 } else { (t.meta.shape().num_elements() * t.dtype.size()) as u64 };
        [(reads_x, &self.x), (reads_y, &self.y)].iter().filter(|(read, _)| *read).map(|(_, t)| bytes(t)).sum()
    }

    /// Whether the computation reads `x` and `y` (the one it writes it does not).
    fn reads(&self) -> (bool, bool) {
        match self.op {
            ConvOp::Forward => (true, false),
            ConvOp::BackwardData => (false, true),
            ConvOp::BackwardFilter => (true, true),
        }
    }

    /// The tensors handed to cuDNN for `problem`'s layout: as they are, or with the ones the
    /// computation reads copied packed where `packed` (the written one is packed already).
    fn laid_out(&self, packed_layout: bool) -> Result<(Tensor, Tensor, Tensor), Failure> {
        if !packed_layout {
            return Ok((self.x.clone(), self.w.clone(), self.y.clone()));
        }
        let copy = |t: &Tensor| packed(t).map_err(|why| Failure::new("owt's packed copy", why));
        let (reads_x, reads_y) = self.reads();
        let x = if reads_x { copy(&self.x)? } else { self.x.clone() };
        let y = if reads_y { copy(&self.y)? } else { self.y.clone() };
        Ok((x, self.w.clone(), y))
    }
}

/// cuDNN's calls on CubeCL's device thread, through the client of the tensors at hand.
struct CudnnCalls<'a> {
    client: &'a Client,
    decisions: &'a Arc<Decisions<Choice>>,
}

impl CudnnCalls<'_> {
    /// Runs `problem` with `choice` on `operands`: waiting for cuDNN's status, or queued (a
    /// failure then fails the stream, and the problem is declined from then on).
    fn run(
        &self,
        device: usize,
        problem: &ConvProblem,
        choice: Choice,
        operands: &ConvOperands,
        wait: bool,
    ) -> Result<(), Failure> {
        let (x, w, y) = operands.laid_out(choice.packed)?;
        let layout = if choice.packed { problem.packed() } else { *problem };
        let mut sizes = vec![span_bytes(&x), span_bytes(&w), span_bytes(&y)];
        let mut handles = vec![x.handle.clone(), w.handle.clone(), y.handle.clone()];
        if choice.workspace > 0 {
            handles.push(self.client.empty(choice.workspace as usize));
            sizes.push(choice.workspace);
        }
        let task = move |stream, buffers: &[ForeignBuffer]| -> Result<(), Failure> {
            check_sizes(buffers, &sizes)?;
            let at = cudnn::ffi::Pointers { x: buffers[0].ptr, w: buffers[1].ptr, y: buffers[2].ptr };
            let ws = match buffers.get(3) {
                Some(b) => cudnn::ffi::Workspace { ptr: b.ptr, len: choice.workspace as usize },
                None => cudnn::ffi::Workspace { ptr: 0, len: 0 },
            };
            cudnn::ffi::run(device, stream, &layout, choice, at, ws)
        };
        if wait {
            return submit_and_wait(self.client, handles, task);
        }
        let decisions = self.decisions.clone();
        let key = problem.key();
        submit(self.client, handles, move |stream, buffers| {
            task(stream, buffers).map_err(|f| decisions.failed_later(device, &key, "cuDNN", "convolution", &f))
        });
        Ok(())
    }
}

impl LibraryCalls for CudnnCalls<'_> {
    type Problem = ConvProblem;
    type Choice = Choice;
    type Operands = ConvOperands;

    fn library(&self) -> &'static str {
        "cuDNN"
    }

    fn problem_kind(&self) -> &'static str {
        "convolution"
    }

    fn open(&self, device: usize) -> Result<(), Failure> {
        submit_and_wait(self.client, Vec::new(), move |stream, _| cudnn::ffi::open(device, stream))
    }

    fn search(
        &self,
        device: usize,
        problem: &ConvProblem,
        operands: &ConvOperands,
    ) -> Result<Searched<Choice>, Failure> {
        // Both layouts where they differ (CubeCL pitches rows; some of cuDNN's algorithms run
        // on packed tensors only), timed alike; one under --deterministic (no timing to compare).
        let layouts: Vec<ConvProblem> = match problem.deterministic || problem.is_packed() {
            true => vec![*problem],
            false => vec![*problem, problem.packed()],
        };
        let asked = layouts.clone();
        let ws = submit_and_wait(self.client, Vec::new(), move |stream, _| {
            cudnn::ffi::search_workspace(device, stream, &asked)
        })?;
        let workspace = (ws.allowed > 0).then(|| self.client.empty(ws.allowed));
        let mut best: Option<cudnn::ffi::Found> = None;
        for layout in layouts {
            let (x, w, y) = operands.laid_out(layout.is_packed() && !problem.is_packed())?;
            let mut sizes = vec![span_bytes(&x), span_bytes(&w), span_bytes(&y)];
            let mut handles = vec![x.handle.clone(), w.handle.clone(), y.handle.clone()];
            let len = ws.allowed;
            if let Some(ws) = &workspace {
                handles.push(ws.clone());
                sizes.push(len as u64);
            }
            let found = submit_and_wait(self.client, handles, move |stream, buffers| {
                check_sizes(buffers, &sizes)?;
                let at = cudnn::ffi::Pointers { x: buffers[0].ptr, w: buffers[1].ptr, y: buffers[2].ptr };
                let ws = cudnn::ffi::Workspace { ptr: buffers.get(3).map_or(0, |b| b.ptr), len };
                cudnn::ffi::search(device, stream, &layout, at, ws)
            })?;
            COUNTERS.cudnn_searches.fetch_add(1, Ordering::Relaxed);
            // A packed layout also pays for its copies, at every call: charged at 1 TB/s (a read
            // and a write of each copied tensor; an H100's memory does about three times that).
            let copies_ms = match layout.is_packed() && !problem.is_packed() {
                true => operands.copied_bytes() as f32 * 2.0 / 1e9,
                false => 0.0,
            };
            if let Some(found) = found.map(|f| cudnn::ffi::Found { time: f.time + copies_ms, ..f }) {
                if best.is_none_or(|b| found.time < b.time) {
                    best = Some(found);
                }
            }
        }
        Ok(Searched { choice: best.map(|f| f.choice), complete: ws.allowed == ws.wanted })
    }

    fn run_and_wait(
        &self,
        device: usize,
        problem: &ConvProblem,
        choice: Choice,
        operands: &ConvOperands,
    ) -> Result<(), Failure> {
        self.run(device, problem, choice, operands, true)
    }

    fn run_queued(
        &self,
        device: usize,
        problem: &ConvProblem,
        choice: Choice,
        operands: ConvOperands,
    ) -> Result<(), Failure> {
        self.run(device, problem, choice, &operands, false)
    }
}

/// One GPU's section of the algorithm cache, as the decisions read and keep it.
struct ForGpu<'a> {
    cache: &'a Mutex<AlgorithmCache>,
    gpu: &'a Identity,
}

impl ForGpu<'_> {
    fn save(&self, cache: &mut AlgorithmCache) {
        if let Err(e) = cache.save() {
            decline(format!("the cuDNN algorithm cache was not written: {e}"));
        }
    }
}

impl Remembered<Choice> for ForGpu<'_> {
    fn get(&self, key: &str) -> Option<Option<Choice>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(self.gpu, key)
    }

    fn keep(&self, key: &str, choice: Option<Choice>) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(self.gpu, key.to_string(), choice);
        self.save(&mut cache);
    }

    fn forget(&self, key: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.forget(self.gpu, key);
        self.save(&mut cache);
    }
}

/// A GEMM as cuBLASLt is asked it: the layout, element type, math and operands' alignment.
struct GemmProblem {
    gemm: Gemm,
    dtype: ConvDtype,
    math: Math,
    align: u32,
}

/// A GEMM's operands: `lhs`, `rhs` and the output.
struct GemmOperands {
    lhs: Tensor,
    rhs: Tensor,
    out: Tensor,
}

/// cuBLASLt's calls on CubeCL's device thread, through the client of the tensors at hand.
struct CublasltCalls<'a> {
    client: &'a Client,
    decisions: &'a Arc<Decisions<()>>,
    key: &'a str,
}

impl CublasltCalls<'_> {
    fn run(&self, device: usize, p: &GemmProblem, operands: &GemmOperands, wait: bool) -> Result<(), Failure> {
        let GemmOperands { lhs, rhs, out } = operands;
        let workspace = self.client.empty(cublaslt::ffi::WORKSPACE);
        let sizes = [span_bytes(rhs), span_bytes(lhs), span_bytes(out), cublaslt::ffi::WORKSPACE as u64];
        let handles = vec![rhs.handle.clone(), lhs.handle.clone(), out.handle.clone(), workspace];
        let (g, dtype, math, align) = (p.gemm.clone(), p.dtype, p.math, p.align);
        let task = move |stream, buffers: &[ForeignBuffer]| -> Result<(), Failure> {
            check_sizes(buffers, &sizes)?;
            let at = cublaslt::ffi::Pointers {
                a: buffers[0].ptr,
                b: buffers[1].ptr,
                d: buffers[2].ptr,
                workspace: buffers[3].ptr,
            };
            cublaslt::ffi::run(device, stream, &g, dtype, math, align, at)
        };
        if wait {
            return submit_and_wait(self.client, handles, task);
        }
        let (decisions, key) = (self.decisions.clone(), self.key.to_string());
        submit(self.client, handles, move |stream, buffers| {
            task(stream, buffers).map_err(|f| decisions.failed_later(device, &key, "cuBLASLt", "matmul", &f))
        });
        Ok(())
    }
}

impl LibraryCalls for CublasltCalls<'_> {
    type Problem = GemmProblem;
    type Choice = ();
    type Operands = GemmOperands;

    fn library(&self) -> &'static str {
        "cuBLASLt"
    }

    fn problem_kind(&self) -> &'static str {
        "matmul"
    }

    fn open(&self, device: usize) -> Result<(), Failure> {
        submit_and_wait(self.client, Vec::new(), move |_, _| cublaslt::ffi::open(device))
    }

    fn search(&self, device: usize, p: &GemmProblem, _operands: &GemmOperands) -> Result<Searched<()>, Failure> {
        let (g, dtype, math, align) = (p.gemm.clone(), p.dtype, p.math, p.align);
        let found = submit_and_wait(self.client, Vec::new(), move |_, _| {
            cublaslt::ffi::prepare_cached(device, &g, dtype, math, align)
        })?;
        Ok(Searched { choice: found.then_some(()), complete: true })
    }

    fn run_and_wait(
        &self,
        device: usize,
        p: &GemmProblem,
        _choice: (),
        operands: &GemmOperands,
    ) -> Result<(), Failure> {
        self.run(device, p, operands, true)
    }

    fn run_queued(&self, device: usize, p: &GemmProblem, _choice: (), operands: GemmOperands) -> Result<(), Failure> {
        self.run(device, p, &operands, false)
    }
}

impl CudaLibraries {
    /// Notes that CubeCL's kernels run `what` (`conv fwd`, `matmul`) because of `why`: kept for
    /// [`declines`], and for [`not_strict`] under strict f32.
    fn left_to_cubecl(&self, what: &str, why: &str) {
        decline(format!("{what}: {why}"));
        if self.math == Math::Strict {
            let mut all = NOT_STRICT.lock().unwrap_or_else(|e| e.into_inner());
            if all.len() < MAX_DECLINES {
                all.insert(format!("{what}: {why}"));
            }
        }
    }

    /// One of a convolution's computations by cuDNN, or why not.
    fn conv(&self, cudnn: &Cudnn, call: &ConvCall) -> Result<Tensor, String> {
        let ConvCall { op, x, w, dy, bias, options } = *call;
        let (client, device) = (x.client.clone(), x.device.clone());
        let index = device.index;
        let x_dims: [usize; 4] = dims(x).ok_or("an input of rank other than 4")?;
        let w_dims: [usize; 4] = dims(w).ok_or("a filter of rank other than 4")?;
        let inputs: Vec<&Tensor> = match op {
            ConvOp::Forward => [Some(x), Some(w), bias].into_iter().flatten().collect(),
            ConvOp::BackwardData => vec![w, dy.ok_or("no output gradient")?],
            ConvOp::BackwardFilter => vec![x, dy.ok_or("no output gradient")?],
        };
        let (dtype, burn_dtype) = one_dtype(&inputs)?;
        let y_dims = cudnn::output_dims(x_dims, w_dims, options).map_err(|u| u.0)?;
        let new = |d: [usize; 4]| empty_device_contiguous_dtype(client.clone(), device.clone(), d.into(), burn_dtype);
        // The three tensors as the problem names them (x, w, y), the written one fresh.
        let operands = match op {
            ConvOp::Forward => ConvOperands { op, x: x.clone(), w: self.packed_filters.of(w)?, y: new(y_dims) },
            ConvOp::BackwardData => {
                ConvOperands { op, x: new(x_dims), w: self.packed_filters.of(w)?, y: dy.unwrap().clone() }
            }
            ConvOp::BackwardFilter => ConvOperands { op, x: x.clone(), w: new(w_dims), y: dy.unwrap().clone() },
        };
        let layout = |t: &Tensor| -> Result<([usize; 4], [usize; 4]), String> {
            Ok((dims(t).ok_or("rank other than 4")?, strides(t).ok_or("rank other than 4")?))
        };
        let align = [&operands.x, &operands.w, &operands.y]
            .iter()
            .map(|t| alignment_at(t.handle.offset_start.unwrap_or(0)))
            .min()
            .unwrap_or(256);
        let problem =
            ConvProblem::new(op, dtype, self.math, layout(&operands.x)?, w_dims, layout(&operands.y)?, options)
                .map_err(|u| u.0)?
                .aligned_to(align)
                .deterministic(self.deterministic);
        let written = match op {
            ConvOp::Forward => operands.y.clone(),
            ConvOp::BackwardData => operands.x.clone(),
            ConvOp::BackwardFilter => operands.w.clone(),
        };
        let calls = CudnnCalls { client: &client, decisions: &cudnn.decisions };
        let remembered = ForGpu { cache: &cudnn.cache, gpu: cudnn.gpu(index) };
        cudnn.decisions.call(&calls, &remembered, index, &problem.key(), &problem, operands)?;
        Ok(match (op, bias) {
            // The bias by CubeCL's broadcast add, queued after the convolution.
            (ConvOp::Forward, Some(b)) => {
                type Cube = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;
                use burn::tensor::{Tensor as BurnTensor, TensorPrimitive};
                let y = BurnTensor::<Cube, 4>::from_primitive(TensorPrimitive::Float(written));
                let b = BurnTensor::<Cube, 1>::from_primitive(TensorPrimitive::Float(b.clone()));
                (y + b.reshape([1, w_dims[0], 1, 1])).into_primitive().tensor()
            }
            _ => written,
        })
    }

    /// A convolution computation by cuDNN where it runs them, counted either way.
    fn counted_conv(&self, call: ConvCall) -> Option<Tensor> {
        let out = self.cudnn.as_ref().and_then(|cudnn| {
            self.conv(cudnn, &call).map_err(|why| self.left_to_cubecl(&format!("conv {}", call.op.name()), &why)).ok()
        });
        let counter = if out.is_some() { &COUNTERS.cudnn_convs } else { &COUNTERS.cubecl_convs };
        counter.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn gemm(&self, decisions: &Arc<Decisions<()>>, lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, String> {
        let (dtype, burn_dtype) = one_dtype(&[lhs, rhs])?;
        let g = gemm(
            (&lhs.meta.shape().to_vec(), &lhs.meta.strides().to_vec()),
            (&rhs.meta.shape().to_vec(), &rhs.meta.strides().to_vec()),
        )
        .map_err(|u| u.0)?;
        let (client, device) = (lhs.client.clone(), lhs.device.clone());
        // What cuBLASLt may assume of the operands' addresses, from where they start in their
        // buffers (the output is fresh).
        let align = [lhs, rhs].iter().map(|t| alignment_at(t.handle.offset_start.unwrap_or(0))).min().unwrap_or(256);
        let key = format!("{g:?} {dtype:?} {:?} align {align}", self.math);
        let out = empty_device_contiguous_dtype(client.clone(), device.clone(), g.out_dims.clone().into(), burn_dtype);
        let problem = GemmProblem { gemm: g, dtype, math: self.math, align };
        let operands = GemmOperands { lhs: lhs.clone(), rhs: rhs.clone(), out: out.clone() };
        let calls = CublasltCalls { client: &client, decisions, key: &key };
        decisions.call(&calls, &NothingRemembered, device.index, &key, &problem, operands)?;
        Ok(out)
    }
}

/// The weight gradient of a strided convolution by owt's unfolded GEMM, run by CubeCL's own
/// tensor ops (its matmuls by cuBLASLt where that is installed), or `None` where the
/// formulation does not apply.
fn owt_weight_gradient(x: &Tensor, weight: &Tensor, dy: &Tensor, options: &ConvOptions<2>) -> Option<Tensor> {
    use burn::tensor::{Tensor as BurnTensor, TensorPrimitive};
    type Cube = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;
    let geo = crate::conv_grad::Unfolded::of(dims(x)?, dims(weight)?, options)?;
    let wrap = |t: &Tensor| BurnTensor::<Cube, 4>::from_primitive(TensorPrimitive::Float(t.clone()));
    let grad = crate::conv_grad::unfolded::weight_grad::<Cube>(wrap(x), wrap(dy), &geo);
    Some(grad.into_primitive().tensor())
}

impl ExternalKernels<CudaRuntime> for CudaLibraries {
    fn conv2d(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, options: &ConvOptions<2>) -> Option<Tensor> {
        self.counted_conv(ConvCall { op: ConvOp::Forward, x, w: weight, dy: None, bias, options })
    }

    fn conv2d_x_backward(
        &self,
        x: &Tensor,
        weight: &Tensor,
        output_grad: &Tensor,
        options: &ConvOptions<2>,
    ) -> Option<Tensor> {
        self.counted_conv(ConvCall {
            op: ConvOp::BackwardData,
            x,
            w: weight,
            dy: Some(output_grad),
            bias: None,
            options,
        })
    }

    fn conv2d_weight_backward(
        &self,
        x: &Tensor,
        weight: &Tensor,
        output_grad: &Tensor,
        options: &ConvOptions<2>,
    ) -> Option<Tensor> {
        if self.cudnn.is_none() && self.owt_strided_weight_gradients && options.stride != [1, 1] {
            if let Some(grad) = owt_weight_gradient(x, weight, output_grad, options) {
                COUNTERS.owt_weight_gradients.fetch_add(1, Ordering::Relaxed);
                return Some(grad);
            }
        }
        self.counted_conv(ConvCall {
            op: ConvOp::BackwardFilter,
            x,
            w: weight,
            dy: Some(output_grad),
            bias: None,
            options,
        })
    }

    fn matmul(&self, lhs: &Tensor, rhs: &Tensor) -> Option<Tensor> {
        let out = self.cublaslt.as_ref().and_then(|decisions| {
            self.gemm(decisions, lhs, rhs).map_err(|why| self.left_to_cubecl("matmul", &why)).ok()
        });
        let counter = if out.is_some() { &COUNTERS.cublaslt_matmuls } else { &COUNTERS.cubecl_matmuls };
        counter.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn takes_matmuls(&self) -> bool {
        self.cublaslt.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine where every library file is found but none loads for real (this test machine
    /// has no cuDNN or cuBLASLt): what cudarc then says decides.
    struct Everything;

    impl Loader for Everything {
        fn loads(&self, _name: &str) -> bool {
            true
        }
        fn var(&self, _name: &str) -> Option<String> {
            None
        }
    }

    /// A machine without the libraries, LD_LIBRARY_PATH pointing at an empty directory.
    struct Nothing(String);

    impl Loader for Nothing {
        fn loads(&self, _name: &str) -> bool {
            false
        }
        fn var(&self, name: &str) -> Option<String> {
            (name == "LD_LIBRARY_PATH").then(|| self.0.clone())
        }
    }

    #[test]
    fn the_names_looked_for_are_cudarcs_for_the_version_it_was_built_for() {
        for stem in ["cudnn", "cublasLt", "nvrtc", "nccl"] {
            let theirs = cudarc::get_lib_name_candidates(stem);
            assert_eq!(crate::kernels::libraries::candidate_names(stem), theirs, "{stem}");
        }
    }

    #[test]
    fn without_the_libraries_cubecl_runs_and_the_line_says_where_they_were_looked_for() {
        let (installed, warnings) = install(KernelChoice::default(), &Nothing("/opt/empty".into()), None, &[]).unwrap();
        assert!(warnings.is_empty());
        let line = installed.line();
        for part in [
            "convolutions on CubeCL's kernels (no cuDNN (looked for libcudnn.so, libcudnn64.so",
            "LD_LIBRARY_PATH=/opt/empty",
            "matmuls on CubeCL's kernels (no cuBLASLt (looked for libcublasLt.so",
            "f32 through TF32",
        ] {
            assert!(line.contains(part), "{part:?} in {line}");
        }
        // Where the loader finds a file, cudarc's own loading decides: a file that is there but
        // does not load says so; one that loads (pip's wheels on LD_LIBRARY_PATH, as CI has
        // them) is named with its version.
        let (installed, _) = install(KernelChoice::default(), &Everything, None, &[]).unwrap();
        match cudnn::ffi::load() {
            Ok(version) => assert_eq!(
                installed.conv,
                Runner::Library { name: format!("cuDNN {}", version_name(version)), file: "libcudnn.so".into() }
            ),
            Err(_) => assert!(
                installed.line().contains("libcudnn.so found but unusable: libcudnn did not load"),
                "{}",
                installed.line()
            ),
        }
        match cublaslt::ffi::load() {
            Ok(version) => assert_eq!(
                installed.matmul,
                Runner::Library { name: format!("cuBLASLt {}", version_name(version)), file: "libcublasLt.so".into() }
            ),
            Err(_) => assert!(installed.line().contains("libcublasLt.so found but unusable"), "{}", installed.line()),
        }
        // Asked for CubeCL, nothing is looked for.
        let cubecl = KernelChoice { conv: ConvKernels::Cubecl, matmul: MatmulKernels::Cubecl, ..Default::default() };
        let (installed, _) = install(cubecl, &Nothing(String::new()), None, &[]).unwrap();
        assert_eq!(installed.conv, Runner::Cubecl { why: "--conv cubecl".into() });
        assert_eq!(installed.matmul, Runner::Cubecl { why: "--matmul cubecl".into() });
        external::unregister::<CudaRuntime>();
    }

    #[test]
    fn a_forced_library_or_strict_f32_without_the_libraries_is_refused_in_one_line() {
        let none = Nothing("/opt/empty".into());
        let forced = KernelChoice { conv: ConvKernels::Cudnn, ..Default::default() };
        let why = install(forced, &none, None, &[]).unwrap_err();
        assert!(why.starts_with("--conv cudnn: no cuDNN (looked for"), "{why}");
        let forced = KernelChoice { matmul: MatmulKernels::Cublaslt, ..Default::default() };
        assert!(install(forced, &none, None, &[]).unwrap_err().starts_with("--matmul cublaslt: no cuBLASLt"));
        let strict = KernelChoice { math: Math::Strict, ..Default::default() };
        let why = install(strict, &none, None, &[]).unwrap_err();
        assert!(why.contains("--tf32 off") && why.contains("the convolutions and matmuls"), "{why}");
        assert!(!why.contains('\n'));
    }
}
