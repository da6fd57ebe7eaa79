//! The convolutions and matmuls of CubeCL's CUDA backend handed to cuDNN and cuBLASLt: what
//! [`install`] registers with the vendored burn-cubecl's hook. Each op is described for the
//! library ([`ConvProblem`], [`gemm`]), its output allocated by CubeCL on the calling thread
//! (so on that thread's stream), and the library's call queued on CubeCL's device thread in
//! that stream's order (`CudaServer::run_foreign`); nothing waits on the host but a cuDNN
//! algorithm search, once per problem and machine. An op a library does not take (a layout or
//! dtype it cannot describe, a problem no algorithm runs) goes to CubeCL's kernels, counted and
//! its reason kept ([`declines`]).

use std::collections::BTreeSet;
use std::collections::HashMap;
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
use super::usage::COUNTERS;
use crate::kernels::cublaslt::{self, gemm};
use crate::kernels::cudnn::algorithm_cache::{version_name, FILE_NAME};
use crate::kernels::cudnn::problem::packed_strides;
use crate::kernels::cudnn::Math;
use crate::kernels::cudnn::{self, AlgorithmCache, Choice, ConvDtype, ConvOp, ConvProblem, Identity};
use crate::kernels::libraries::{find, Library, Loader};

type Tensor = CubeTensor<CudaRuntime>;

/// The most distinct reasons [`declines`] keeps.
const MAX_DECLINES: usize = 32;

static DECLINES: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Why ops were left to CubeCL's kernels although a library was installed, each reason once
/// (at most 32).
pub fn declines() -> Vec<String> {
    DECLINES.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
}

fn decline(why: String) {
    let mut all = DECLINES.lock().unwrap_or_else(|e| e.into_inner());
    if all.len() < MAX_DECLINES {
        all.insert(why);
    }
}

/// Decides who runs CUDA's convolutions and matmuls under `choice` on this machine (libraries
/// looked for through `loader`), registers the decision with burn-cubecl for every CUDA device
/// of this process, and returns it with warnings to print (a damaged or foreign algorithm
/// cache). cuDNN's algorithm choices are kept in `cache_dir` (none: searched every run), keyed
/// by `gpu`'s name. Refused, in one line: `--conv cudnn` or `--matmul cublaslt` where the
/// library does not load, strict f32 where either library does not run (CubeCL's tensor-core
/// kernels round f32 through TF32). Call before any CUDA device starts: a fusion server reads
/// whether matmuls are taken when it starts.
pub fn install(
    choice: KernelChoice,
    loader: &dyn Loader,
    cache_dir: Option<&Path>,
    gpu: &str,
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
    let cache = match &conv {
        Ok((_, version, _)) => {
            let identity = Identity { gpu: gpu.to_string(), cudnn: *version };
            let cache = match cache_dir {
                Some(dir) => {
                    let (cache, warning) = AlgorithmCache::load(&dir.join(FILE_NAME), identity);
                    warnings.extend(warning);
                    cache
                }
                None => AlgorithmCache::empty(identity, None),
            };
            Some(Mutex::new(cache))
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
    };
    let libraries = CudaLibraries {
        cudnn: cache,
        owt_strided_weight_gradients: installed.owt_strided_weight_gradients,
        cublaslt: installed.matmul.is_library(),
        gemms: Mutex::default(),
        packed_inputs: std::env::var_os("OWT_CUDNN_PACKED").is_some_and(|v| v == "1"),
        math: choice.math,
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

/// What [`install`] registers.
struct CudaLibraries {
    /// The algorithm cache where cuDNN runs convolutions.
    cudnn: Option<Mutex<AlgorithmCache>>,
    /// Whether owt's unfolded GEMM takes strided convolutions' weight gradients (without cuDNN).
    owt_strided_weight_gradients: bool,
    /// Whether cuBLASLt runs matmuls.
    cublaslt: bool,
    /// Whether cuBLASLt has an algorithm for each GEMM asked of it so far (by device, shape,
    /// dtype, math and alignment), or why not.
    gemms: Mutex<HashMap<String, Result<(), String>>>,
    /// Whether convolutions' inputs and output gradients are copied packed before cuDNN reads
    /// them (`OWT_CUDNN_PACKED=1`; CubeCL pads rows, and some of cuDNN's algorithms take
    /// packed tensors only: an experiment for a GPU run, off by default).
    packed_inputs: bool,
    math: Math,
}

fn dims<const D: usize>(t: &Tensor) -> Option<[usize; D]> {
    t.meta.shape().to_vec().try_into().ok()
}

fn strides<const D: usize>(t: &Tensor) -> Option<[usize; D]> {
    t.meta.strides().to_vec().try_into().ok()
}

/// `t` laid out packed row-major: itself, or a copy by CubeCL's kernel.
fn packed(t: &Tensor) -> Result<Tensor, String> {
    let d: [usize; 4] = dims(t).ok_or("a filter of rank other than 4")?;
    if strides::<4>(t) == Some(packed_strides(d)) {
        return Ok(t.clone());
    }
    let copy = burn_cubecl::kernel::into_contiguous(t.clone());
    if strides::<4>(&copy) == Some(packed_strides(d)) {
        Ok(copy)
    } else {
        Err(format!("the filter {d:?} does not pack (strides {:?})", copy.meta.strides().to_vec()))
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
fn check_sizes(buffers: &[ForeignBuffer], needs: &[u64]) -> Result<(), String> {
    for (i, (b, need)) in buffers.iter().zip(needs).enumerate() {
        if b.size < *need {
            return Err(format!("owt: buffer {i} holds {} bytes, the op spans {need}", b.size));
        }
    }
    Ok(())
}

/// Queues `task` on CubeCL's device thread with `handles` resolved, in the order of the
/// client's stream.
fn submit<F>(client: &burn_cubecl::cubecl::client::ComputeClient<CudaRuntime>, handles: Vec<Handle>, task: F)
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
/// before it, and waits for what it finds (`None` where the device did not run it: a stream
/// that failed earlier).
fn submit_and_wait<T, F>(
    client: &burn_cubecl::cubecl::client::ComputeClient<CudaRuntime>,
    handles: Vec<Handle>,
    task: F,
) -> Option<T>
where
    T: Send,
    F: FnOnce(cudarc::driver::sys::CUstream, &[ForeignBuffer]) -> T + Send,
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
}

impl CudaLibraries {
    /// The algorithm for `problem`: from the cache, or searched on the tensors' own buffers
    /// (`handles`: x, w, y as the problem names them), waiting for the search's timings.
    fn algorithm(
        cache: &Mutex<AlgorithmCache>,
        problem: &ConvProblem,
        client: &burn_cubecl::cubecl::client::ComputeClient<CudaRuntime>,
        device: usize,
        handles: Vec<Handle>,
        needs: [u64; 3],
    ) -> Result<Choice, String> {
        let key = problem.key();
        if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return found.ok_or_else(|| format!("no cuDNN algorithm runs {key}"));
        }
        let p = *problem;
        let found = submit_and_wait(client, handles, move |stream, buffers| {
            check_sizes(buffers, &needs).and_then(|_| {
                let at = cudnn::ffi::Pointers { x: buffers[0].ptr, w: buffers[1].ptr, y: buffers[2].ptr };
                cudnn::ffi::search(device, stream, &p, at)
            })
        })
        .ok_or("the cuDNN search did not run (the device reported an earlier error)")??;
        COUNTERS.cudnn_searches.fetch_add(1, Ordering::Relaxed);
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(key.clone(), found);
        if let Err(e) = cache.save() {
            decline(format!("the cuDNN algorithm cache was not written: {e}"));
        }
        found.ok_or_else(|| format!("no cuDNN algorithm runs {key}"))
    }

    /// One of a convolution's computations by cuDNN, or why not.
    fn conv(&self, cache: &Mutex<AlgorithmCache>, call: &ConvCall) -> Result<Tensor, String> {
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
        // The three tensors as the problem names them (x, w, y), which of them is written, and
        // the problem's layouts.
        let read = |t: &Tensor| match self.packed_inputs {
            true => burn_cubecl::kernel::into_contiguous(t.clone()),
            false => t.clone(),
        };
        let (xt, wt, yt) = match op {
            ConvOp::Forward => (read(x), packed(w)?, new(y_dims)),
            ConvOp::BackwardData => (new(x_dims), packed(w)?, read(dy.unwrap())),
            ConvOp::BackwardFilter => (read(x), new(w_dims), read(dy.unwrap())),
        };
        let layout = |t: &Tensor| -> Result<([usize; 4], [usize; 4]), String> {
            Ok((dims(t).ok_or("rank other than 4")?, strides(t).ok_or("rank other than 4")?))
        };
        let problem =
            ConvProblem::new(op, dtype, self.math, layout(&xt)?, w_dims, layout(&yt)?, options).map_err(|u| u.0)?;
        let needs = [span_bytes(&xt), span_bytes(&wt), span_bytes(&yt)];
        let tensors = [xt.handle.clone(), wt.handle.clone(), yt.handle.clone()];
        let choice = Self::algorithm(cache, &problem, &client, index, tensors.to_vec(), needs)?;
        let workspace = (choice.workspace > 0).then(|| client.empty(choice.workspace as usize));
        let mut handles = tensors.to_vec();
        let mut sizes = needs.to_vec();
        if let Some(ws) = &workspace {
            handles.push(ws.clone());
            sizes.push(choice.workspace);
        }
        let has_ws = workspace.is_some();
        submit(&client, handles, move |stream, buffers| {
            check_sizes(buffers, &sizes)?;
            let at = cudnn::ffi::Pointers { x: buffers[0].ptr, w: buffers[1].ptr, y: buffers[2].ptr };
            let ws = match has_ws {
                true => cudnn::ffi::Workspace { ptr: buffers[3].ptr, len: choice.workspace as usize },
                false => cudnn::ffi::Workspace { ptr: 0, len: 0 },
            };
            cudnn::ffi::run(index, stream, &problem, choice, at, ws)
        });
        Ok(match (op, bias) {
            // The bias by CubeCL's broadcast add, queued after the convolution (what cuDNN's
            // algorithm search has not tried cannot fail on the stream).
            (ConvOp::Forward, Some(b)) => {
                type Cube = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;
                use burn::tensor::{Tensor as BurnTensor, TensorPrimitive};
                let y = BurnTensor::<Cube, 4>::from_primitive(TensorPrimitive::Float(yt));
                let b = BurnTensor::<Cube, 1>::from_primitive(TensorPrimitive::Float(b.clone()));
                (y + b.reshape([1, w_dims[0], 1, 1])).into_primitive().tensor()
            }
            (ConvOp::Forward, None) => yt,
            (ConvOp::BackwardData, _) => xt,
            (ConvOp::BackwardFilter, _) => wt,
        })
    }

    /// A convolution computation by cuDNN where it runs them, counted either way.
    fn counted_conv(&self, call: ConvCall) -> Option<Tensor> {
        let out = self.cudnn.as_ref().and_then(|cache| {
            self.conv(cache, &call).map_err(|why| decline(format!("{}: {why}", call.op.name()))).ok()
        });
        let counter = if out.is_some() { &COUNTERS.cudnn_convs } else { &COUNTERS.cubecl_convs };
        counter.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn gemm(&self, lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, String> {
        let (dtype, burn_dtype) = one_dtype(&[lhs, rhs])?;
        let g = gemm(
            (&lhs.meta.shape().to_vec(), &lhs.meta.strides().to_vec()),
            (&rhs.meta.shape().to_vec(), &rhs.meta.strides().to_vec()),
        )
        .map_err(|u| u.0)?;
        let (client, device) = (lhs.client.clone(), lhs.device.clone());
        let (index, math) = (device.index, self.math);
        // What cuBLASLt may assume of the operands' addresses, from where they start in their
        // buffers (the output is fresh): its algorithm is chosen for that, waiting, the first
        // time, so a GEMM it has no algorithm for goes to CubeCL instead of failing the stream.
        let align = [lhs, rhs]
            .iter()
            .map(|t| cublaslt::ffi::alignment_at(t.handle.offset_start.unwrap_or(0)))
            .min()
            .unwrap_or(256);
        let key = format!("{index} {g:?} {dtype:?} {math:?} align {align}");
        let known = self.gemms.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        let prepared = match known {
            Some(prepared) => prepared,
            None => {
                let g2 = g.clone();
                let prepared = submit_and_wait(&client, Vec::new(), move |_, _| {
                    cublaslt::ffi::prepare_cached(index, &g2, dtype, math, align)
                })
                .unwrap_or_else(|| Err("the device reported an earlier error".into()));
                self.gemms.lock().unwrap_or_else(|e| e.into_inner()).insert(key, prepared.clone());
                prepared
            }
        };
        prepared?;
        let out = empty_device_contiguous_dtype(client.clone(), device.clone(), g.out_dims.clone().into(), burn_dtype);
        let workspace = client.empty(cublaslt::ffi::WORKSPACE);
        let sizes = [span_bytes(rhs), span_bytes(lhs), span_bytes(&out), cublaslt::ffi::WORKSPACE as u64];
        let handles = vec![rhs.handle.clone(), lhs.handle.clone(), out.handle.clone(), workspace];
        submit(&client, handles, move |stream, buffers| {
            check_sizes(buffers, &sizes)?;
            let at = cublaslt::ffi::Pointers {
                a: buffers[0].ptr,
                b: buffers[1].ptr,
                d: buffers[2].ptr,
                workspace: buffers[3].ptr,
            };
            cublaslt::ffi::run(index, stream, &g, dtype, math, align, at)
        });
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
        let out = if self.cublaslt {
            self.gemm(lhs, rhs).map_err(|why| decline(format!("matmul: {why}"))).ok()
        } else {
            None
        };
        let counter = if out.is_some() { &COUNTERS.cublaslt_matmuls } else { &COUNTERS.cubecl_matmuls };
        counter.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn takes_matmuls(&self) -> bool {
        self.cublaslt
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
    fn cudarcs_candidates_are_the_names_looked_for() {
        for stem in ["cudnn", "cublasLt"] {
            let theirs = cudarc::get_lib_name_candidates(stem);
            let ours = crate::kernels::libraries::candidate_names(stem);
            let positions: Vec<usize> = ours
                .iter()
                .map(|name| theirs.iter().position(|t| t == name).unwrap_or_else(|| panic!("{name} not in {theirs:?}")))
                .collect();
            assert!(positions.windows(2).all(|w| w[0] < w[1]), "{stem}: {ours:?} in cudarc's order {theirs:?}");
        }
    }

    #[test]
    fn without_the_libraries_cubecl_runs_and_the_line_says_where_they_were_looked_for() {
        let (installed, warnings) =
            install(KernelChoice::default(), &Nothing("/opt/empty".into()), None, "test GPU").unwrap();
        assert!(warnings.is_empty());
        let line = installed.line();
        for part in [
            "convolutions on CubeCL's kernels (no cuDNN (looked for libcudnn.so, libcudnn.so.13",
            "LD_LIBRARY_PATH=/opt/empty",
            "matmuls on CubeCL's kernels (no cuBLASLt (looked for libcublasLt.so",
            "f32 through TF32",
        ] {
            assert!(line.contains(part), "{part:?} in {line}");
        }
        // Where the loader finds a file, cudarc's own loading decides: a file that is there but
        // does not load says so; one that loads (pip's wheels on LD_LIBRARY_PATH, as CI has
        // them) is named with its version.
        let (installed, _) = install(KernelChoice::default(), &Everything, None, "test GPU").unwrap();
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
        let cubecl = KernelChoice { conv: ConvKernels::Cubecl, matmul: MatmulKernels::Cubecl, math: Math::Tf32 };
        let (installed, _) = install(cubecl, &Nothing(String::new()), None, "test GPU").unwrap();
        assert_eq!(installed.conv, Runner::Cubecl { why: "--conv cubecl".into() });
        assert_eq!(installed.matmul, Runner::Cubecl { why: "--matmul cubecl".into() });
        external::unregister::<CudaRuntime>();
    }

    #[test]
    fn a_forced_library_or_strict_f32_without_the_libraries_is_refused_in_one_line() {
        let none = Nothing("/opt/empty".into());
        let forced = KernelChoice { conv: ConvKernels::Cudnn, ..Default::default() };
        let why = install(forced, &none, None, "test GPU").unwrap_err();
        assert!(why.starts_with("--conv cudnn: no cuDNN (looked for"), "{why}");
        let forced = KernelChoice { matmul: MatmulKernels::Cublaslt, ..Default::default() };
        assert!(install(forced, &none, None, "test GPU").unwrap_err().starts_with("--matmul cublaslt: no cuBLASLt"));
        let strict = KernelChoice { math: Math::Strict, ..Default::default() };
        let why = install(strict, &none, None, "test GPU").unwrap_err();
        assert!(why.contains("--tf32 off") && why.contains("the convolutions and matmuls"), "{why}");
        assert!(!why.contains('\n'));
    }
}
