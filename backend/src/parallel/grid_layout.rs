//! A training step on a 2-D mesh ([`GridMesh`]): every tensor on the mesh of the node's ranks
//! with the node dimension around them ([`GridMesh::mesh`]), laid out along both dimensions,
//! so each op runs its rule along each (see `dispatch.rs`). The plan says where: inside each
//! node its local plan (the weird trick's column split, the conv layers' batch split), along
//! the nodes what the [`GridPlan`] says (data parallelism for the built-in plans: each node
//! its block of the batch, `[Shard(0), ..]`).
//!
//! Nothing here sums, weighs or gathers by hand. The loss is the whole batch's mean (its
//! shape is the global batch), so a replicated parameter's gradient comes out of the backward
//! pass as a pending sum over the nodes, and the gradient sync brings it to the parameter's
//! placement along every dimension (an all-reduce over the nodes, by slices where the
//! gradient is whole inside the node). A parameter the plan shards over the nodes
//! (`[Shard(d), p]`, FSDP-style) is stored as each node's slice and gathered over the nodes
//! into the module a step computes with by a differentiable op whose backward reduce-scatters
//! the gradient to the slices ([`crate::Distributed::redistribute_along`]); each node then
//! updates, and keeps optimizer state for, only its slice. With the whole batch on every
//! node (the input `Replicate` along the nodes) the gradients are whole along the nodes
//! already, and nothing is summed over them.

use std::ops::Range;

use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::{get_device_settings, set_default_dtypes, AutodiffBackend};
use burn::tensor::{DType, TensorData};

use crate::api::distributed::Distributed;
use crate::api::upload::RowSplit;
use crate::backend::Hybrid;
use crate::ledger::LedgerSnapshot;
use crate::ledger::{Phase, Stage};
use crate::mesh::grid::{GridMesh, GridPlacement};
use crate::parallel::grid_plan::GridPlan;
use crate::parallel::layer_labels::{layer_of, LayerLabels};
use crate::parallel::layout::{Feed, GradientSync, MeshLayout, ModulePlacement, StepMesh};
use crate::parallel::params::parameter_paths;
use crate::parallel::plan::{Plan, PlanError};
use crate::spec::placement::{can_shard, Placement};
use crate::spec::scheme::Exchange;
use crate::spec::WirePrecision;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// A plan on a 2-D mesh of N nodes x L local ranks: its local plan on each node's ranks, and
/// along the nodes what the [`GridPlan`] says (data parallelism for the built-in plans).
#[derive(Clone)]
pub struct GridLayout<IB: Backend> {
    grid: GridMesh<IB::Device>,
    inner: MeshLayout<IB>,
    plan: GridPlan,
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
    /// The mesh's tensors take the default dtypes of the node's own ranks ([`GridMesh::local`]),
    /// unless the mesh's were set already.
    pub fn with_plan(grid: GridMesh<IB::Device>, plan: &GridPlan, scheme: Exchange) -> Result<Self, PlanError> {
        let local = get_device_settings::<Hybrid<IB>>(grid.local());
        let _ = set_default_dtypes::<Hybrid<IB>>(grid.mesh(), local.float_dtype, local.int_dtype);
        let inner = MeshLayout::new(grid.mesh().clone(), plan.local_plan()?, scheme);
        Ok(Self { grid, inner, plan: plan.clone() })
    }

    /// This layout sending float pieces in `wire` precision, inside each node and along the
    /// nodes alike (see [`MeshLayout::with_wire`]).
    pub fn with_wire(self, wire: WirePrecision) -> Self {
        Self { inner: self.inner.with_wire(wire), ..self }
    }

    /// This layout starting each layer's gradient sums, inside each node and along the nodes,
    /// as soon as the backward pass leaves the layer (see [`MeshLayout::with_overlapped_sync`]).
    pub fn with_overlapped_sync(self) -> Self {
        Self { inner: self.inner.with_overlapped_sync(), ..self }
    }

    /// The plan, per dimension.
    pub fn grid_plan(&self) -> &GridPlan {
        &self.plan
    }

    /// Whether every node takes the whole of a batch of `total` rows: when the plan says so,
    /// and when the batch has fewer rows than there are nodes (a short last batch), which then
    /// stays whole as a dimension shorter than a 1-D mesh does ([`can_shard`]): no node holds
    /// an empty piece.
    fn whole_on_each_node(&self, total: usize) -> bool {
        self.plan.input[0] == Placement::Replicate || !can_shard(total, self.grid.shape()[0])
    }

    /// The rows of a batch of `total` this node takes (those [`Feed::row_split`] names).
    fn rows(&self, total: usize) -> Range<usize> {
        if self.whole_on_each_node(total) {
            0..total
        } else {
            self.grid.node_rows(total)
        }
    }

    /// The mesh.
    pub fn grid(&self) -> &GridMesh<IB::Device> {
        &self.grid
    }

    /// The layout on this node's ranks (on the 2-D mesh: its tensors are laid out along the
    /// nodes too).
    pub fn local_layout(&self) -> &MeshLayout<IB> {
        &self.inner
    }

    /// Every parameter of `module` (placed by [`ModulePlacement::place_module`]) with its placement
    /// per dimension, outer first: `[Replicate, Shard(1)]` for an FC weight split by columns
    /// inside each node, `[Shard(0), Shard(1)]` for one whose rows each node stores a slice of.
    pub fn placements<M: Module<AH<IB>>>(&self, module: &M) -> Vec<(String, GridPlacement)> {
        let mut found = PlacementList { path: Vec::new(), found: Vec::new() };
        module.visit(&mut found);
        found.found
    }

    /// The input's placement per dimension: along the nodes as the plan says (the batch split
    /// over them for the built-in plans), then as the plan places it inside each.
    pub fn input_placement(&self) -> GridPlacement {
        [self.plan.input[0], self.plan().map_or(Placement::Replicate, |p| p.input)]
    }

    /// `x`, a whole batch on every node, laid out as the input along both dimensions.
    fn placed<T: Distributed>(&self, x: T) -> T {
        let [outer, inner] = self.input_placement();
        x.distribute_along(0, outer).distribute(inner)
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

struct PlacementList {
    path: Vec<String>,
    found: Vec<(String, GridPlacement)>,
}

impl<IB: Backend> ModuleVisitor<AH<IB>> for PlacementList {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let placements = param.val().placements();
        self.found.push((self.path.join("."), [placements[0], placements[1]]));
    }
}

/// The parameters a node stores: its slice along the nodes of those the plan shards there
/// (each still a leaf of its own).
struct NodeSlicer<'a> {
    plan: &'a GridPlan,
    path: Vec<String>,
}

impl<IB: Backend> ModuleMapper<AH<IB>> for NodeSlicer<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AH<IB>, D>>) -> Param<Tensor<AH<IB>, D>> {
        let (id, tensor, mapper) = param.consume();
        let outer = self.plan.outer_of(&self.path.join("."));
        Param::from_mapped_value(id, tensor.distribute_along(0, outer), mapper)
    }
}

/// The module a step computes with: each parameter stored as a slice along the nodes
/// gathered whole over them by the differentiable gather (labelled as its layer's forward
/// traffic; its backward, the reduce-scatter of the gradient to the slices, as its layer's
/// sync), with the stored parameter's id.
struct NodeGatherer<'a, IB: Backend> {
    grid: &'a GridMesh<IB::Device>,
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
        if !matches!(param.val().placements()[0], Placement::Shard(_)) {
            return param;
        }
        let (id, tensor, mapper) = param.consume();
        let layer = layer_of(&self.path.join(".")).to_string();
        self.grid.mesh().set_phase(Some(Phase::of(&layer, Stage::Forward)));
        let whole = crate::autodiff::redistribute::redistribute_along_labelled(
            tensor,
            0,
            Placement::Replicate,
            Some(Phase::of(&layer, Stage::Sync)),
        );
        Param::from_mapped_value(id, whole, mapper)
    }
}

impl<IB: Backend> Feed<AH<IB>> for GridLayout<IB> {
    fn device(&self) -> &crate::mesh::MeshDevice<IB::Device> {
        self.inner.device()
    }

    fn place_input<const D: usize>(&self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        self.placed(x)
    }

    fn place_labels<const D: usize>(&self, y: Tensor<AH<IB>, D, Int>) -> Tensor<AH<IB>, D, Int> {
        self.placed(y)
    }

    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<AH<IB>, D> {
        let total = data.shape[0];
        let rows = self.rows(total);
        self.upload_input_rows(rows_of(data, rows.clone(), total), rows, total)
    }

    fn upload_labels<const D: usize>(&self, data: TensorData, dtype: Option<DType>) -> Tensor<AH<IB>, D, Int> {
        let total = data.shape[0];
        let rows = self.rows(total);
        self.upload_labels_rows(rows_of(data, rows.clone(), total), dtype, rows, total)
    }

    fn row_split(&self) -> RowSplit {
        if self.plan.input[0] == Placement::Replicate {
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
        assert_eq!(rows, self.rows(total), "node {} uploads its own rows", self.grid.node());
        let local = self.inner.upload_input(data);
        Tensor::from_inner(crate::api::upload::node_block(local.inner(), rows, total))
    }

    fn upload_labels_rows<const D: usize>(
        &self,
        data: TensorData,
        dtype: Option<DType>,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<AH<IB>, D, Int> {
        assert_eq!(rows, self.rows(total), "node {} uploads its own rows", self.grid.node());
        let local = self.inner.upload_labels::<D>(data, dtype);
        Tensor::from_primitive(crate::api::upload::node_block_int(local.into_primitive(), rows, total))
    }
}

impl<IB: Backend> ModulePlacement<AH<IB>> for GridLayout<IB> {
    fn plan(&self) -> Option<&Plan> {
        self.inner.plan()
    }

    fn place_module<M: Module<AH<IB>>>(&self, module: M) -> Result<M, PlanError> {
        // Every node checks what the smallest node stores, so all of them accept or refuse.
        let stored = self.plan.check_outer(&parameter_paths(&module), self.grid.shape()[0])?;
        if let Some(plan) = self.inner.plan() {
            plan.check_params(&stored, self.grid.local().size())?;
        }
        let module = module.map(&mut NodeSlicer { plan: &self.plan, path: Vec::new() });
        self.inner.place_module(module)
    }

    fn stores_whole(&self) -> bool {
        let outer = self.plan.rules.iter().map(|r| r.placement[0]).chain([self.plan.default[0]]);
        !outer.into_iter().any(|p| matches!(p, Placement::Shard(_)))
    }

    fn compute_module<M: Module<AH<IB>>>(&self, module: &M) -> M {
        if self.stores_whole() {
            return module.clone();
        }
        let whole = module.clone().map(&mut NodeGatherer::<IB> { grid: &self.grid, path: Vec::new() });
        self.grid.mesh().set_phase(None);
        whole
    }

    fn stored_state<const D: usize>(&self, path: &str, state: Tensor<Hybrid<IB>, D>) -> Tensor<Hybrid<IB>, D> {
        state.distribute_along(0, self.plan.outer_of(path))
    }
}

impl<IB: Backend> GradientSync<AH<IB>> for GridLayout<IB> {
    type Labels = LayerLabels<IB>;

    fn labels(&self) -> LayerLabels<IB> {
        self.inner.labels()
    }

    fn labels_syncing<M: AutodiffModule<AH<IB>>>(&self, module: &M) -> LayerLabels<IB> {
        self.inner.labels_syncing(module)
    }

    fn backward(&self, loss: Tensor<AH<IB>, 1>) -> <AH<IB> as AutodiffBackend>::Gradients {
        self.inner.backward(loss)
    }

    /// Each gradient brought to its parameter's placement along both dimensions (the sums
    /// over the nodes included; a parameter stored in slices over them has its gradient
    /// reduce-scattered already, by the gather's backward). `module` is the stored module.
    fn sync<M: AutodiffModule<AH<IB>>>(&self, module: &M, grads: GradientsParams) -> GradientsParams {
        self.inner.sync(module, grads)
    }
}

impl<IB: Backend> StepMesh for GridLayout<IB> {
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

    /// The whole mesh's traffic: every node's ledger summed (a collective over the nodes).
    fn traffic(&self) -> Option<LedgerSnapshot> {
        Some(self.grid.ledger_snapshot())
    }

    fn reset_traffic(&self) {
        self.inner.reset_traffic()
    }

    fn reading<T>(&self, read: impl FnOnce() -> T) -> T {
        self.inner.reading(read)
    }

    fn primary(&self) -> bool {
        self.grid.node() == 0
    }

    fn process(&self) -> usize {
        self.grid.node()
    }
}
