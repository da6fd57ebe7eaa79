//! A training step on a 2-D mesh ([`GridMesh`]): the plan on each node's local mesh (its L
//! ranks: the weird trick's column split, the conv layers' batch split), data parallelism
//! across the nodes (each node its block of the batch; every gradient summed over the nodes,
//! weighted by the nodes' shares of the batch, so the update is the whole batch's mean; a
//! gradient replicated inside the node by slices, one per local rank, then all-gathered in
//! the node, so each crosses the nodes once: [`crate::grid::sums_by_slices`]).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, TensorData};

use crate::api::Distributed;
use crate::backend::Hybrid;
use crate::grid::{parameter_placement, sums_by_slices, GridMesh, GridPlacement};
use crate::grid_plan::GridPlan;
use crate::layout::{MeshLayout, StepLayout};
use crate::ledger::LedgerSnapshot;
use crate::phases::{map_gradients, GradientMap, LayerLabels};
use crate::placement::{shard_ranges, Placement};
use crate::plan::{Plan, PlanError};
use crate::scheme::Exchange;
use crate::upload::RowSplit;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// A plan on a 2-D mesh of N nodes x L local ranks: `plan` on each node's local mesh, data
/// parallel across nodes.
#[derive(Clone)]
pub struct GridLayout<IB: Backend> {
    grid: GridMesh<IB::Device>,
    inner: MeshLayout<IB>,
    /// Rows of the batch last placed (the whole batch, over every node).
    total: Arc<AtomicUsize>,
}

impl<IB: Backend> std::fmt::Debug for GridLayout<IB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GridLayout({:?}, {})", self.grid, self.inner.describe())
    }
}

impl<IB: Backend> GridLayout<IB> {
    /// The layout of `plan` on `grid`: on its local mesh, exchanging activities by `scheme`.
    pub fn new(grid: GridMesh<IB::Device>, plan: Plan, scheme: Exchange) -> Self {
        let inner = MeshLayout::new(grid.local().clone(), plan, scheme);
        Self { grid, inner, total: Arc::new(AtomicUsize::new(0)) }
    }

    /// The layout of a 2-D plan on `grid` (see [`GridPlan::local_plan`] for what runs),
    /// exchanging activities by `scheme` inside each node.
    pub fn with_plan(grid: GridMesh<IB::Device>, plan: &GridPlan, scheme: Exchange) -> Result<Self, PlanError> {
        Ok(Self::new(grid, plan.local_plan()?, scheme))
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
    /// inside each node.
    pub fn placements<M: Module<AH<IB>>>(&self, module: &M) -> Vec<(String, GridPlacement)> {
        let mut found = PlacementList { path: Vec::new(), found: Vec::new() };
        module.visit(&mut found);
        found.found
    }

    /// The input's placement per dimension: the batch split over the nodes, then as the plan
    /// places it inside each.
    pub fn input_placement(&self) -> GridPlacement {
        [Placement::Shard(0), self.plan().map_or(Placement::Replicate, |p| p.input)]
    }

    fn remember(&self, total: usize) -> Range<usize> {
        self.total.store(total, Ordering::SeqCst);
        self.grid.node_rows(total)
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
        self.found.push((self.path.join("."), parameter_placement(param.val().placement())));
    }
}

/// Each gradient summed over the nodes, weighted by their shares (a replicated one by
/// slices: [`sums_by_slices`]).
struct NodeSum<'a, IB: Backend> {
    grid: &'a GridMesh<IB::Device>,
    weights: &'a [f64],
}

impl<IB: Backend> GradientMap<IB> for NodeSum<'_, IB> {
    fn map<const D: usize>(
        &mut self,
        _param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D> {
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
        (self.grid.local().size(), self.grid.node_rows(batch).len())
    }

    fn describe(&self) -> String {
        let [n, l] = self.grid.shape();
        let [outer, inner] = self.grid.names();
        format!(
            "2-D mesh ({outer} {n} x {inner} {l}): {} inside each {outer}, data-parallel across",
            self.inner.describe()
        )
    }

    fn plan(&self) -> Option<&Plan> {
        self.inner.plan()
    }

    fn place_module<M: Module<AH<IB>>>(&self, module: M) -> Result<M, PlanError> {
        self.inner.place_module(module)
    }

    fn place_input<const D: usize>(&self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        let rows = self.remember(x.dims()[0]);
        self.inner.place_input(x.slice_dim(0, rows))
    }

    fn place_labels<const D: usize>(&self, y: Tensor<AH<IB>, D, Int>) -> Tensor<AH<IB>, D, Int> {
        let rows = self.grid.node_rows(y.dims()[0]);
        self.inner.place_labels(y.slice_dim(0, rows))
    }

    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<AH<IB>, D> {
        let total = data.shape[0];
        let rows = self.remember(total);
        self.inner.upload_input(rows_of(data, rows, total))
    }

    fn upload_labels<const D: usize>(&self, data: TensorData, dtype: Option<DType>) -> Tensor<AH<IB>, D, Int> {
        let total = data.shape[0];
        let rows = self.grid.node_rows(total);
        self.inner.upload_labels(rows_of(data, rows, total), dtype)
    }

    fn row_split(&self) -> RowSplit {
        RowSplit::block(self.grid.shape()[0], self.grid.node())
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
        map_gradients(module, &mut grads, self.grid.local(), NodeSum::<IB> { grid: &self.grid, weights: &weights });
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
        self.grid.node_rows(self.total.load(Ordering::SeqCst)).start
    }

    fn mean_over_outer(&self, x: Tensor<Hybrid<IB>, 1>) -> Tensor<Hybrid<IB>, 1> {
        self.grid.all_reduce_over_nodes(x, Some(&self.node_weights()))
    }

    fn sum_over_outer(&self, x: Tensor<Hybrid<IB>, 1, Int>) -> Tensor<Hybrid<IB>, 1, Int> {
        self.grid.all_reduce_ints_over_nodes(x)
    }

    fn whole_batch(&self, rows: usize) -> usize {
        let total = self.total.load(Ordering::SeqCst);
        if self.grid.node_rows(total).len() == rows {
            total
        } else {
            rows
        }
    }
}
