//! A training step on a 2-D mesh ([`GridMesh`]): the plan on each node's local mesh (its L
//! ranks: the weird trick's column split, the conv layers' batch split), data parallelism
//! across the nodes (each node its block of the batch; every gradient summed over the nodes,
//! weighted by the nodes' shares of the batch, so the update is the whole batch's mean; a
//! gradient replicated inside the node by slices, one per local rank, then all-gathered in
//! the node, so each crosses the nodes once: [`crate::grid::sums_by_slices`]).
//!
//! A [`GridPlan`] may say more along the nodes: a parameter `Shard(d)` there is stored as
//! each node's slice (FSDP-style), gathered over the nodes into the module a step computes
//! with ([`StepLayout::compute_module`]) and its gradient reduce-scattered back to the slice,
//! so each node updates, and keeps optimizer state for, only its slice; an input `Replicate`
//! there gives every node the whole batch (nothing is summed over the nodes then).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, TensorData};

use crate::api::Distributed;
use crate::backend::Hybrid;
use crate::comm::{Phase, Stage};
use crate::grid::{sums_by_slices, GridMesh, GridPlacement};
use crate::grid_plan::GridPlan;
use crate::layout::{MeshLayout, StepLayout};
use crate::ledger::LedgerSnapshot;
use crate::params::parameter_paths;
use crate::phases::{layer_of, map_gradients, GradientMap, LayerLabels};
use crate::placement::{can_shard, shard_ranges, Placement};
use crate::plan::{Plan, PlanError};
use crate::scheme::Exchange;
use crate::upload::RowSplit;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// A plan on a 2-D mesh of N nodes x L local ranks: its local plan on each node's local
/// mesh, and along the nodes what the [`GridPlan`] says (data parallelism for the built-in
/// plans).
#[derive(Clone)]
pub struct GridLayout<IB: Backend> {
    grid: GridMesh<IB::Device>,
    inner: MeshLayout<IB>,
    plan: GridPlan,
    /// Rows of the batch last placed (the whole batch, over every node).
    total: Arc<AtomicUsize>,
    /// Each placed parameter's placement along the nodes, by id.
    outer: Arc<Mutex<HashMap<ParamId, Placement>>>,
}

impl<IB: Backend> std::fmt::Debug for GridLayout<IB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GridLayout({:?}, {})", self.grid, self.inner.describe())
    }
}

impl<IB: Backend> GridLayout<IB> {
    /// The layout of `plan` on `grid`: on its local mesh, exchanging activities by `scheme`.
    pub fn new(grid: GridMesh<IB::Device>, plan: Plan, scheme: Exchange) -> Self {
        Self::with_plan(grid, &GridPlan::data_parallel_across(&plan), scheme)
            .expect("a 1-D plan inside each node, data-parallel across, is a 2-D plan")
    }

    /// The layout of a 2-D plan on `grid` (see [`GridPlan::local_plan`] for what it may
    /// say), exchanging activities by `scheme` inside each node.
    pub fn with_plan(grid: GridMesh<IB::Device>, plan: &GridPlan, scheme: Exchange) -> Result<Self, PlanError> {
        let inner = MeshLayout::new(grid.local().clone(), plan.local_plan()?, scheme);
        Ok(Self { grid, inner, plan: plan.clone(), total: Arc::default(), outer: Arc::default() })
    }

    /// The plan, per dimension.
    pub fn grid_plan(&self) -> &GridPlan {
        &self.plan
    }

    /// Whether every node takes the whole batch (the input `Replicate` along the nodes).
    fn replicated_input(&self) -> bool {
        self.plan.input[0] == Placement::Replicate
    }

    /// Whether every node takes the whole of a batch of `total` rows: when the plan says so,
    /// and when the batch has fewer rows than there are nodes (a short last batch), which then
    /// stays whole as a dimension shorter than a 1-D mesh does ([`can_shard`]): no node holds
    /// an empty piece, and nothing is summed over the nodes (each already has the batch's).
    fn whole_on_each_node(&self, total: usize) -> bool {
        self.replicated_input() || !can_shard(total, self.grid.shape()[0])
    }

    /// Whether every node holds the whole of the batch last placed.
    fn last_batch_whole(&self) -> bool {
        self.whole_on_each_node(self.total.load(Ordering::SeqCst))
    }

    /// `x` (a figure of this node's rows: a mean loss, a count) ready to be summed over the
    /// nodes, which add their pieces rank by rank and so must agree on its placement. When
    /// some nodes' blocks of the last batch split over their local ranks and others' are too
    /// short to ([`can_shard`]), the first hold such a figure as a pending sum (`Partial`)
    /// and the others whole: then every node completes it first. (Added rank by rank, a
    /// `Partial` count and a whole one counted the short node's rows once per local rank.)
    fn agreed<T: Distributed>(&self, x: T) -> T {
        let total = self.total.load(Ordering::SeqCst);
        let local = self.grid.local().size();
        let blocks = shard_ranges(total, self.grid.shape()[0]);
        let split = |r: &Range<usize>| can_shard(r.len(), local);
        if blocks.iter().all(split) || !blocks.iter().any(split) {
            x
        } else {
            x.distribute(Placement::Replicate)
        }
    }

    /// The rows of a batch of `total` this node takes (those [`StepLayout::row_split`] names).
    fn rows(&self, total: usize) -> Range<usize> {
        if self.whole_on_each_node(total) {
            0..total
        } else {
            self.grid.node_rows(total)
        }
    }

    /// Each placed parameter's placement along the nodes, by id.
    fn along_nodes(&self) -> std::sync::MutexGuard<'_, HashMap<ParamId, Placement>> {
        self.outer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the parameter `id` lives along the nodes (`Replicate` if it was never placed).
    fn outer_of(&self, id: &ParamId) -> Placement {
        self.along_nodes().get(id).copied().unwrap_or(Placement::Replicate)
    }

    /// The mesh.
    pub fn grid(&self) -> &GridMesh<IB::Device> {
        &self.grid
    }

    /// The layout on this node's local mesh.
    pub fn local_layout(&self) -> &MeshLayout<IB> {
        &self.inner
    }

    /// Every parameter of `module` (placed by [`StepLayout::place_module`]) with its placement
    /// per dimension, outer first: `[Replicate, Shard(1)]` for an FC weight split by columns
    /// inside each node, `[Shard(0), Shard(1)]` for one whose rows each node stores a slice of.
    pub fn placements<M: Module<AH<IB>>>(&self, module: &M) -> Vec<(String, GridPlacement)> {
        let mut found = PlacementList { path: Vec::new(), found: Vec::new(), outer: &self.along_nodes() };
        module.visit(&mut found);
        found.found
    }

    /// The input's placement per dimension: along the nodes as the plan says (the batch split
    /// over them for the built-in plans), then as the plan places it inside each.
    pub fn input_placement(&self) -> GridPlacement {
        [self.plan.input[0], self.plan().map_or(Placement::Replicate, |p| p.input)]
    }

    fn remember(&self, total: usize) -> Range<usize> {
        self.total.store(total, Ordering::SeqCst);
        self.rows(total)
    }

    /// Each node's weight in the sum of gradients: its share of the batch last placed.
    fn node_weights(&self) -> Vec<f64> {
        let total = self.total.load(Ordering::SeqCst).max(1);
        shard_ranges(total, self.grid.shape()[0]).iter().map(|r| r.len() as f64 / total as f64).collect()
    }
}

/// Rows `rows` of `data`, whose first dimension has `total` rows.
fn rows_of(data: TensorData, rows: Range<usize>, total: usize) -> TensorData {
    if rows == (0..total) {
        return data;
    }
    let per_row = data.as_bytes().len() / total.max(1);
    let bytes = data.as_bytes()[rows.start * per_row..rows.end * per_row].to_vec();
    let mut shape = data.shape.clone();
    shape[0] = rows.len();
    TensorData::from_bytes_vec(bytes, shape, data.dtype)
}

struct PlacementList<'a> {
    path: Vec<String>,
    found: Vec<(String, GridPlacement)>,
    outer: &'a HashMap<ParamId, Placement>,
}

impl<IB: Backend> ModuleVisitor<AH<IB>> for PlacementList<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let outer = self.outer.get(&param.id).copied().unwrap_or(Placement::Replicate);
        self.found.push((self.path.join("."), [outer, param.val().placement()]));
    }
}

/// The parameters a node stores: its slice along the nodes of those the plan shards there
/// (each id's placement along the nodes noted in `outer`).
struct NodeSlicer<'a, IB: Backend> {
    grid: &'a GridMesh<IB::Device>,
    plan: &'a GridPlan,
    path: Vec<String>,
    outer: HashMap<ParamId, Placement>,
}

impl<IB: Backend> ModuleMapper<AH<IB>> for NodeSlicer<'_, IB> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AH<IB>, D>>) -> Param<Tensor<AH<IB>, D>> {
        let (id, tensor, mapper) = param.consume();
        let outer = self.plan.outer_of(&self.path.join("."));
        self.outer.insert(id, outer);
        let Placement::Shard(d) = outer else { return Param::from_mapped_value(id, tensor, mapper) };
        let require_grad = tensor.is_require_grad();
        let slice = Tensor::from_inner(self.grid.node_slice(tensor.inner(), d));
        Param::from_mapped_value(id, if require_grad { slice.require_grad() } else { slice }, mapper)
    }
}

/// The module a step computes with: each parameter stored as a slice along the nodes
/// gathered whole over them (labelled as its layer's forward traffic), a fresh leaf with the
/// stored parameter's id.
struct NodeGatherer<'a, IB: Backend> {
    grid: &'a GridMesh<IB::Device>,
    outer: &'a HashMap<ParamId, Placement>,
    path: Vec<String>,
}

impl<IB: Backend> ModuleMapper<AH<IB>> for NodeGatherer<'_, IB> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AH<IB>, D>>) -> Param<Tensor<AH<IB>, D>> {
        let Some(&Placement::Shard(d)) = self.outer.get(&param.id) else { return param };
        let (id, tensor, mapper) = param.consume();
        self.grid.local().set_phase(Some(Phase::of(layer_of(&self.path.join(".")), Stage::Forward)));
        let whole = Tensor::from_inner(self.grid.all_gather_over_nodes(tensor.inner(), d)).require_grad();
        Param::from_mapped_value(id, whole, mapper)
    }
}

/// Each gradient summed over the nodes, weighted by their shares (a replicated one by
/// slices: [`sums_by_slices`]); that of a parameter sharded over the nodes reduce-scattered
/// to this node's slice. With the whole batch on every node (`whole_batch_each`: the plan's
/// input `Replicate` along the nodes, or a batch shorter than the node count) nothing is
/// summed: every node's gradient is already the batch's, and a sharded one is cut.
struct NodeSum<'a, IB: Backend> {
    grid: &'a GridMesh<IB::Device>,
    weights: &'a [f64],
    outer: &'a HashMap<ParamId, Placement>,
    whole_batch_each: bool,
}

impl<IB: Backend> GradientMap<IB> for NodeSum<'_, IB> {
    fn map<const D: usize>(
        &mut self,
        param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D> {
        match (self.outer.get(&param.id), self.whole_batch_each) {
            (Some(&Placement::Shard(d)), false) => {
                return self.grid.reduce_scatter_over_nodes(grad, d, Some(self.weights))
            }
            (Some(&Placement::Shard(d)), true) => return self.grid.node_slice(grad, d),
            (_, true) => return grad,
            (_, false) => {}
        }
        if sums_by_slices(grad.placement(), grad.dims()[0], self.grid.shape()) {
            let slice = grad.distribute(Placement::Shard(0));
            self.grid.all_reduce_over_nodes(slice, Some(self.weights)).distribute(Placement::Replicate)
        } else {
            self.grid.all_reduce_over_nodes(grad, Some(self.weights))
        }
    }
}

impl<IB: Backend> StepLayout<AH<IB>> for GridLayout<IB> {
    type Labels = LayerLabels<IB>;

    fn device(&self) -> &crate::mesh::MeshDevice<IB::Device> {
        self.inner.device()
    }

    fn ranks(&self) -> usize {
        self.grid.size()
    }

    fn plan_mesh(&self, batch: usize) -> (usize, usize) {
        (self.grid.local().size(), self.rows(batch).len())
    }

    fn describe(&self) -> String {
        let [n, l] = self.grid.shape();
        let [outer, inner] = self.grid.names();
        format!(
            "2-D mesh ({outer} {n} x {inner} {l}): {} inside each {outer}, {}",
            self.inner.describe(),
            self.plan.across()
        )
    }

    fn plan(&self) -> Option<&Plan> {
        self.inner.plan()
    }

    fn place_module<M: Module<AH<IB>>>(&self, module: M) -> Result<M, PlanError> {
        // Every node checks what the smallest node stores, so all of them accept or refuse.
        let stored = self.plan.check_outer(&parameter_paths(&module), self.grid.shape()[0])?;
        if let Some(plan) = self.inner.plan() {
            plan.check_params(&stored, self.grid.local().size())?;
        }
        let mut slicer =
            NodeSlicer::<IB> { grid: &self.grid, plan: &self.plan, path: Vec::new(), outer: HashMap::new() };
        let module = module.map(&mut slicer);
        self.along_nodes().extend(slicer.outer);
        self.inner.place_module(module)
    }

    fn stores_whole(&self) -> bool {
        !self.along_nodes().values().any(|p| matches!(p, Placement::Shard(_)))
    }

    fn compute_module<M: Module<AH<IB>>>(&self, module: &M) -> M {
        if self.stores_whole() {
            return module.clone();
        }
        let outer = self.along_nodes().clone();
        let mut gatherer = NodeGatherer::<IB> { grid: &self.grid, outer: &outer, path: Vec::new() };
        let whole = module.clone().map(&mut gatherer);
        self.grid.local().set_phase(None);
        whole
    }

    fn whole_state<const D: usize>(&self, id: ParamId, state: Tensor<Hybrid<IB>, D>) -> Tensor<Hybrid<IB>, D> {
        match self.outer_of(&id) {
            Placement::Shard(d) => self.grid.all_gather_over_nodes(state, d),
            _ => state,
        }
    }

    fn stored_state<const D: usize>(&self, id: ParamId, state: Tensor<Hybrid<IB>, D>) -> Tensor<Hybrid<IB>, D> {
        match self.outer_of(&id) {
            Placement::Shard(d) => self.grid.node_slice(state, d),
            _ => state,
        }
    }

    fn place_input<const D: usize>(&self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        let rows = self.remember(x.dims()[0]);
        self.inner.place_input(x.slice_dim(0, rows))
    }

    fn place_labels<const D: usize>(&self, y: Tensor<AH<IB>, D, Int>) -> Tensor<AH<IB>, D, Int> {
        let rows = self.rows(y.dims()[0]);
        self.inner.place_labels(y.slice_dim(0, rows))
    }

    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<AH<IB>, D> {
        let total = data.shape[0];
        let rows = self.remember(total);
        self.inner.upload_input(rows_of(data, rows, total))
    }

    fn upload_labels<const D: usize>(&self, data: TensorData, dtype: Option<DType>) -> Tensor<AH<IB>, D, Int> {
        let total = data.shape[0];
        let rows = self.rows(total);
        self.inner.upload_labels(rows_of(data, rows, total), dtype)
    }

    fn row_split(&self) -> RowSplit {
        if self.replicated_input() {
            RowSplit::whole()
        } else {
            RowSplit::block(self.grid.shape()[0], self.grid.node())
        }
    }

    fn upload_input_rows<const D: usize>(
        &self,
        data: TensorData,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<AH<IB>, D> {
        assert_eq!(rows, self.remember(total), "node {} uploads its own rows", self.grid.node());
        self.inner.upload_input(data)
    }

    fn upload_labels_rows<const D: usize>(
        &self,
        data: TensorData,
        dtype: Option<DType>,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<AH<IB>, D, Int> {
        // Pixels may come this way too (bytes normalised on the device): either upload says
        // what the whole batch is, for the nodes' weights and the step's outcome.
        assert_eq!(rows, self.remember(total), "node {} uploads its own rows", self.grid.node());
        self.inner.upload_labels(data, dtype)
    }

    fn labels(&self) -> LayerLabels<IB> {
        self.inner.labels()
    }

    fn backward(&self, loss: Tensor<AH<IB>, 1>) -> <AH<IB> as AutodiffBackend>::Gradients {
        self.inner.backward(loss)
    }

    fn sync<M: AutodiffModule<AH<IB>>>(
        &self,
        module: &M,
        grads: <AH<IB> as AutodiffBackend>::Gradients,
    ) -> GradientsParams {
        let mut grads = self.inner.sync(module, grads);
        let weights = self.node_weights();
        let outer = self.along_nodes().clone();
        let sum = NodeSum::<IB> {
            grid: &self.grid,
            weights: &weights,
            outer: &outer,
            whole_batch_each: self.last_batch_whole(),
        };
        map_gradients(module, &mut grads, self.grid.local(), sum);
        grads
    }

    /// The whole mesh's traffic: every node's ledger summed (a collective over the nodes).
    fn traffic(&self) -> Option<LedgerSnapshot> {
        Some(self.grid.ledger_snapshot())
    }

    fn reset_traffic(&self) {
        self.inner.reset_traffic()
    }

    fn primary(&self) -> bool {
        self.grid.node() == 0
    }

    fn process(&self) -> usize {
        self.grid.node()
    }

    fn first_row(&self) -> usize {
        self.rows(self.total.load(Ordering::SeqCst)).start
    }

    fn mean_over_outer(&self, x: Tensor<Hybrid<IB>, 1>) -> Tensor<Hybrid<IB>, 1> {
        if self.last_batch_whole() {
            return x;
        }
        self.grid.all_reduce_over_nodes(self.agreed(x), Some(&self.node_weights()))
    }

    fn sum_over_outer(&self, x: Tensor<Hybrid<IB>, 1, Int>) -> Tensor<Hybrid<IB>, 1, Int> {
        if self.last_batch_whole() {
            return x;
        }
        self.grid.all_reduce_ints_over_nodes(self.agreed(x))
    }

    fn whole_batch(&self, rows: usize) -> usize {
        let total = self.total.load(Ordering::SeqCst);
        if self.rows(total).len() == rows {
            total
        } else {
            rows
        }
    }
}
