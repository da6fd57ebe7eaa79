//! A differential test of every op: each method of Burn 0.21's backend op traits runs on
//! `Hybrid<Flex>` and on Flex itself over generated inputs (odd and empty sizes, negative and
//! non-finite values; f32, f16, int and bool) in three configurations: a 1-rank mesh; 2 virtual
//! ranks with replicated tensors; 2 virtual ranks with every input created `Shard(d)`, for
//! each dimension `d` that splits (`MeshDevice::creating`). Outputs equal Flex's bit for bit
//! where the arithmetic is the same, within the dtype's rounding where a sharded reduction
//! changes the order of a sum; where Flex refuses an input (a panic), Hybrid must too. A
//! failure names the op, the configuration and the input. Gradients are compared too (on
//! `Autodiff<Hybrid<Flex>>` against `Autodiff<Flex>`: `backward.rs`).
//!
//! Which methods are covered is checked against the traits themselves (read as
//! `forwarded_ops.rs` reads them): every method is a case here, or listed with the reason it is
//! not (`NOT_CASES`). The ops that ran gathered under `Shard(d)` (the ledger's fallbacks) are
//! printed by op, for the book.

mod activation;
mod backward;
mod bool_ops;
mod float;
mod int;
mod module;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{f16, DType, Shape, TensorData};
use owt_hybrid::{Hybrid, MeshDevice, Placement};

/// The backend under test.
pub(crate) type H = Hybrid<Flex>;

/// How a case's inputs are laid out on the mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Config {
    /// One rank.
    OneRank,
    /// Two virtual ranks, every tensor whole on both.
    TwoReplicated,
    /// Two virtual ranks, every created tensor split along `d` where it splits.
    TwoShard(usize),
}

impl Config {
    fn mesh(self) -> MeshDevice<FlexDevice> {
        match self {
            Config::OneRank => MeshDevice::virtual_ranks(FlexDevice, 1),
            Config::TwoReplicated => MeshDevice::virtual_ranks(FlexDevice, 2),
            Config::TwoShard(d) => MeshDevice::virtual_ranks(FlexDevice, 2).creating(Placement::Shard(d)),
        }
    }

    /// The configurations for `inputs`: one rank, two replicated, and two split along each
    /// dimension some input can be split along.
    fn for_inputs(inputs: &[TensorData]) -> Vec<Config> {
        let mut all = vec![Config::OneRank, Config::TwoReplicated];
        let rank = inputs.iter().map(|d| d.shape.len()).max().unwrap_or(0);
        for d in 0..rank {
            if inputs.iter().any(|t| t.shape.get(d).is_some_and(|&n| n >= 2)) {
                all.push(Config::TwoShard(d));
            }
        }
        all
    }
}

/// How a case's outputs must match Flex's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    /// Bit for bit.
    Bits,
    /// A sum whose order a split changes: values within the dtype's rounding (relative to the
    /// largest magnitude of the output), NaN and infinities where Flex has them.
    Rounding,
    /// Shape and dtype only (values unspecified: an empty tensor's).
    Shape,
}

/// One input set: its description and tensors.
pub(crate) struct Input {
    pub what: String,
    pub data: Vec<TensorData>,
}

/// An op's case: which trait method, its inputs, how it must match, and the same generic body
/// instantiated for Flex and for Hybrid.
pub(crate) struct Case {
    pub op: &'static str,
    pub inputs: fn() -> Vec<Input>,
    pub matching: Match,
    pub flex: fn(&FlexDevice, &[TensorData]) -> Vec<TensorData>,
    pub hybrid: fn(&MeshDevice<FlexDevice>, &[TensorData]) -> Vec<TensorData>,
}

/// `case!(op, inputs, matching, |device, data| body)`: `body` is generic over `B: Backend`,
/// creates its inputs from `data` on `device` and returns its outputs read back.
macro_rules! case {
    ($op:ident, $inputs:expr, $m:expr, |$dev:ident, $x:ident| $body:expr) => {{
        #[allow(unused_variables)]
        fn run<B: burn::tensor::backend::Backend>(
            $dev: &B::Device,
            $x: &[burn::tensor::TensorData],
        ) -> Vec<burn::tensor::TensorData> {
            $body
        }
        $crate::differential::Case {
            op: stringify!($op),
            inputs: $inputs,
            matching: $m,
            flex: run::<burn::backend::Flex>,
            hybrid: run::<$crate::differential::H>,
        }
    }};
}
pub(crate) use case;

// Inputs and outputs of a body.

pub(crate) fn fl<B: Backend>(d: &TensorData, dev: &B::Device) -> FloatTensor<B> {
    B::float_from_data(d.clone(), dev)
}

pub(crate) fn it<B: Backend>(d: &TensorData, dev: &B::Device) -> IntTensor<B> {
    B::int_from_data(d.clone(), dev)
}

pub(crate) fn bl<B: Backend>(d: &TensorData, dev: &B::Device) -> BoolTensor<B> {
    B::bool_from_data(d.clone(), dev)
}

pub(crate) fn rf<B: Backend>(p: FloatTensor<B>) -> TensorData {
    burn::tensor::read_sync(B::float_into_data(p)).expect("read a float tensor")
}

pub(crate) fn ri<B: Backend>(p: IntTensor<B>) -> TensorData {
    burn::tensor::read_sync(B::int_into_data(p)).expect("read an int tensor")
}

pub(crate) fn rb<B: Backend>(p: BoolTensor<B>) -> TensorData {
    burn::tensor::read_sync(B::bool_into_data(p)).expect("read a bool tensor")
}

// Generated inputs.

/// The shapes inputs take: odd, even, empty, a single row, three dimensions.
pub(crate) const SHAPES: [&[usize]; 5] = [&[5, 3], &[4, 6], &[0, 3], &[1, 7], &[2, 3, 5]];

/// `n` finite values with both signs, zeros of both signs and ties.
pub(crate) fn finite(n: usize, salt: usize) -> Vec<f32> {
    const V: [f32; 13] = [-2.5, 1.0, -0.0, 3.25, 0.5, -1.0, 0.0, 2.0, -7.75, 1e-3, 1.0, -0.25, 6.5];
    (0..n).map(|i| V[(i * 7 + salt * 3) % V.len()]).collect()
}

/// `n` values with NaN and both infinities among finite ones.
pub(crate) fn special(n: usize, salt: usize) -> Vec<f32> {
    const V: [f32; 9] = [f32::NAN, 1.5, f32::INFINITY, -3.0, -0.0, f32::NEG_INFINITY, 0.25, 2.0, -1.0];
    (0..n).map(|i| V[(i * 5 + salt) % V.len()]).collect()
}

/// `values` of `shape` in `dtype` (f32 or f16).
pub(crate) fn float_data(values: Vec<f32>, shape: &[usize], dtype: DType) -> TensorData {
    let d = TensorData::new(values, shape.to_vec());
    match dtype {
        DType::F16 => d.convert::<f16>(),
        _ => d,
    }
}

/// Float tensors of every shape, finite and non-finite, in f32 and f16 (`count` tensors per
/// set, all of one shape).
pub(crate) fn floats(count: usize) -> Vec<Input> {
    floats_of(count, &SHAPES, true)
}

/// As [`floats`], over `shapes`, with non-finite values where `non_finite`.
pub(crate) fn floats_of(count: usize, shapes: &[&[usize]], non_finite: bool) -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for shape in shapes {
            let n: usize = shape.iter().product();
            let mut kinds: Vec<(&str, fn(usize, usize) -> Vec<f32>)> = vec![("finite", finite)];
            if non_finite {
                kinds.push(("non-finite", special));
            }
            for (kind, values) in kinds {
                let data = (0..count).map(|i| float_data(values(n, i), shape, dtype)).collect();
                out.push(Input { what: format!("{dtype:?} {shape:?} {kind}"), data });
            }
        }
    }
    out
}

/// Int tensors (i64) of every shape, values in -7..=7 (`count` per set).
pub(crate) fn ints(count: usize) -> Vec<Input> {
    SHAPES
        .iter()
        .map(|shape| {
            let n: usize = shape.iter().product();
            let data = (0..count)
                .map(|c| {
                    TensorData::new(
                        (0..n).map(|i| ((i * 5 + c * 3) % 15) as i64 - 7).collect::<Vec<_>>(),
                        shape.to_vec(),
                    )
                })
                .collect();
            Input { what: format!("I64 {shape:?}"), data }
        })
        .collect()
}

/// Bool tensors of every shape (`count` per set).
pub(crate) fn bools(count: usize) -> Vec<Input> {
    SHAPES
        .iter()
        .map(|shape| {
            let n: usize = shape.iter().product();
            let data = (0..count)
                .map(|c| TensorData::new((0..n).map(|i| (i * 3 + c) % 4 < 2).collect::<Vec<_>>(), shape.to_vec()))
                .collect();
            Input { what: format!("Bool {shape:?}"), data }
        })
        .collect()
}

/// The comparison of two outputs, or why they differ.
fn compare(got: &TensorData, want: &TensorData, matching: Match) -> Result<(), String> {
    // Flex labels some of its bool results (bool_gather's) plain U8, the same bytes as the
    // Bool(U8) every other bool op gives: the labels count as one.
    let label = |d: DType| match d {
        DType::Bool(burn::tensor::BoolStore::U8) => DType::U8,
        d => d,
    };
    if got.shape != want.shape || label(got.dtype) != label(want.dtype) {
        return Err(format!("shape {:?} {:?}, Flex's {:?} {:?}", got.shape, got.dtype, want.shape, want.dtype));
    }
    match matching {
        Match::Shape => Ok(()),
        Match::Bits => match got.as_bytes() == want.as_bytes() {
            true => Ok(()),
            false => Err(format!("{:?} against Flex's {:?}", preview(got), preview(want))),
        },
        Match::Rounding => {
            if !matches!(want.dtype, DType::F32 | DType::F16 | DType::F64 | DType::BF16) {
                return compare(got, want, Match::Bits);
            }
            let (a, b) = (values(got), values(want));
            let scale = b.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
            let tol = if want.dtype == DType::F16 { 4e-3 } else { 2e-6 } * scale;
            let bad = a.iter().zip(&b).position(|(x, y)| {
                if y.is_nan() || x.is_nan() {
                    x.is_nan() != y.is_nan()
                } else if y.is_infinite() || x.is_infinite() {
                    x != y
                } else {
                    (x - y).abs() > tol
                }
            });
            match bad {
                None => Ok(()),
                Some(i) => Err(format!("element {i}: {} against Flex's {} (tolerance {tol:e})", a[i], b[i])),
            }
        }
    }
}

fn values(d: &TensorData) -> Vec<f64> {
    d.clone().convert::<f64>().to_vec::<f64>().unwrap()
}

fn preview(d: &TensorData) -> Vec<f64> {
    let v = d.clone().convert::<f64>().to_vec::<f64>().unwrap_or_default();
    v.into_iter().take(12).collect()
}

/// What a run of cases did.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub ops: BTreeSet<&'static str>,
    pub inputs: usize,
    pub comparisons: usize,
    pub refused_by_flex: usize,
    pub fallbacks: BTreeMap<String, u64>,
}

impl Counts {
    /// Prints what ran (one line) and the ops that ran gathered under `Shard(d)`, by op: the
    /// figures the book's testing chapter gives.
    pub(crate) fn report(&self, what: &str) {
        let gathered: u64 = self.fallbacks.values().sum();
        eprintln!(
            "{what}: {} ops, {} inputs, {} comparisons ({} inputs Flex refuses, refused alike), {gathered} ops gathered under Shard(d)",
            self.ops.len(),
            self.inputs,
            self.comparisons,
            self.refused_by_flex
        );
        let mut by_count: Vec<_> = self.fallbacks.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (op, n) in by_count {
            eprintln!("  gathered {n:>5} {op}");
        }
    }
}

/// Runs every case on every input in every configuration; panics naming each difference.
pub(crate) fn check(cases: &[Case]) -> Counts {
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for case in cases {
        counts.ops.insert(case.op);
        let (mut computed, mut refusal) = (0, String::new());
        for input in (case.inputs)() {
            counts.inputs += 1;
            let want = catch_unwind(AssertUnwindSafe(|| (case.flex)(&FlexDevice, &input.data)));
            computed += usize::from(want.is_ok());
            if let Err(e) = &want {
                refusal = format!("{}: {}", input.what, panic_text(e));
            }
            for config in Config::for_inputs(&input.data) {
                let mesh = config.mesh();
                let got = catch_unwind(AssertUnwindSafe(|| (case.hybrid)(&mesh, &input.data)));
                if let Config::TwoShard(_) = config {
                    for (op, n) in mesh.ledger_snapshot().fallbacks {
                        *counts.fallbacks.entry(op).or_default() += n;
                    }
                }
                counts.comparisons += 1;
                let at = format!("{} on {config:?} with {}", case.op, input.what);
                match (&want, got) {
                    (Err(_), Err(_)) => counts.refused_by_flex += 1,
                    (Err(_), Ok(_)) => failures.push(format!("{at}: Flex refuses the input, Hybrid computes it")),
                    (Ok(_), Err(e)) => failures.push(format!("{at}: Hybrid panics ({})", panic_text(&e))),
                    (Ok(want), Ok(got)) => {
                        if got.len() != want.len() {
                            failures.push(format!("{at}: {} outputs, Flex {}", got.len(), want.len()));
                            continue;
                        }
                        for (i, (g, w)) in got.iter().zip(want).enumerate() {
                            if let Err(why) = compare(g, w, case.matching) {
                                failures.push(format!("{at}, output {i}: {why}"));
                            }
                        }
                    }
                }
            }
        }
        // A case whose every input Flex refuses compares nothing but panics: only an op Flex
        // does not implement may be one.
        let unimplemented = FLEX_LACKS.iter().any(|(op, _)| *op == case.op);
        if computed > 0 && unimplemented {
            failures.push(format!("{}: Flex computes it now; take it off FLEX_LACKS", case.op));
        }
        if computed == 0 && !unimplemented {
            failures.push(format!("{}: Flex refuses every input, so nothing is compared ({refusal})", case.op));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from Flex:\n{}",
        failures.len(),
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    counts
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// The shape of a generated input as Burn takes it.
pub(crate) fn shape_of(d: &TensorData) -> Shape {
    Shape::from(d.shape.clone())
}

/// The ops Flex does not implement (it panics for every input): Hybrid must refuse them alike.
pub(crate) const FLEX_LACKS: [(&str, &str); 2] = [
    ("float_argtopk", "burn-flex 0.21: \"float_argtopk not implemented for flex\""),
    ("int_argtopk", "burn-flex 0.21: \"argtopk not implemented for flex\""),
];

/// The methods of the traits with no case here, and why: creation and device ops every case
/// calls to make its inputs and read its outputs, draws, gradient bookkeeping, and the
/// quantized ops `Hybrid` refuses.
pub(crate) const NOT_CASES: [(&str, &str); 15] = [
    ("float_from_data", "every float case creates its inputs with it"),
    ("int_from_data", "every int case creates its inputs with it"),
    ("bool_from_data", "every bool case creates its inputs with it"),
    ("float_into_data", "every float case reads its outputs with it"),
    ("int_into_data", "every int case reads its outputs with it"),
    ("bool_into_data", "every bool case reads its outputs with it"),
    ("float_random", "random draws: rank 0 draws from the inner backend and broadcasts (tests/hybrid/properties.rs)"),
    ("int_random", "random draws, as float_random"),
    ("float_device", "a mesh handle, not a value (every case's tensors are on it)"),
    ("int_device", "as float_device"),
    ("bool_device", "as float_device"),
    ("float_set_require_grad", "autodiff's bookkeeping, a no-op below it (backward.rs runs autodiff)"),
    ("float_is_require_grad", "as float_set_require_grad"),
    ("tr_execute", "a transaction of reads: every case's reads, and tests/hybrid's reads of several tensors"),
    ("QTensorOps", "quantization is not supported on Hybrid: every quantized op says so"),
];

#[test]
fn every_method_of_the_traits_is_a_case_or_said_why_not() {
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    for cases in [float::all(), int::all(), bool_ops::all(), module::all(), activation::all()] {
        covered.extend(cases.iter().map(|c| c.op));
    }
    let not: BTreeMap<&str, &str> = NOT_CASES.into_iter().collect();
    let packages = crate::forwarded_ops::package_dirs();
    let backend = &packages[&("burn-backend".to_string(), "0.21.0".to_string())];
    let mut missing = Vec::new();
    let (mut methods, mut with_case) = (0, 0);
    for (trait_name, file) in crate::forwarded_ops::TRAITS {
        if not.contains_key(trait_name) {
            continue;
        }
        let code = crate::forwarded_ops::code_only(&std::fs::read_to_string(backend.join(file)).unwrap());
        for (name, _) in crate::forwarded_ops::trait_methods(&code, trait_name) {
            methods += 1;
            with_case += usize::from(covered.contains(name.as_str()));
            if !covered.contains(name.as_str()) && !not.contains_key(name.as_str()) {
                missing.push(format!("{trait_name}::{name}"));
            }
        }
    }
    assert!(missing.is_empty(), "methods with no differential case and no reason: {missing:#?}");
    let stale: Vec<&&str> = covered.iter().filter(|op| !op.contains(' ') && not.contains_key(*op)).collect();
    assert!(stale.is_empty(), "cases of methods listed as without one: {stale:?}");
    eprintln!(
        "{methods} methods of the float, int, bool, module, activation and transaction traits: {with_case} with a case, {} without, each with its reason; the quantized trait refused as a whole",
        methods - with_case
    );
}
