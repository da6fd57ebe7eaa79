//! The run's SGD momentum as a checkpoint holds it (every parameter's whole) and as a layout
//! stores it (on a 2-D mesh that shards parameters over its nodes, each node only its
//! slices): [`whole`] before a checkpoint is written (in parameter order: reading a sharded
//! momentum gathers it), [`stored`] after one is read. Where the layout stores every
//! parameter whole, [`stored`] hands the record back untouched.

use std::marker::PhantomData;

use std::collections::HashMap;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::momentum::MomentumState;
use burn::optim::record::{AdaptorRecord, AdaptorRecordV1};
use burn::optim::{Sgd, SgdState};
use burn::prelude::*;
use burn::record::{FullPrecisionSettings, Record};
use burn::tensor::backend::AutodiffBackend;
use owt_hybrid::StepLayout;

use crate::train::checkpoint::InParameterOrder;

/// One entry of the optimizer's record: a parameter's momentum.
type Entry<B> = AdaptorRecord<Sgd<<B as AutodiffBackend>::InnerBackend>, B>;

/// The record in `module`'s parameter order, each momentum read whole when it is written
/// (reading a tensor a 2-D mesh shards over its nodes gathers it: a collective, so every node
/// reads the same one at a time, in this order).
pub fn whole<B: AutodiffBackend, M: Module<B>>(
    record: impl IntoIterator<Item = (ParamId, Entry<B>)>,
    module: &M,
) -> Vec<(ParamId, Entry<B>)> {
    InParameterOrder::new(record, module).0
}

/// The record as `layout` stores it, from a whole one (read from a checkpoint) for `module`'s
/// parameters: each momentum laid out as the layout stores its parameter
/// ([`owt_hybrid::ModulePlacement::stored_state`]). Local.
pub fn stored<B, L, M, R>(layout: &L, record: R, module: &M) -> R
where
    B: AutodiffBackend,
    L: StepLayout<B>,
    M: Module<B>,
    R: IntoIterator<Item = (ParamId, Entry<B>)> + FromIterator<(ParamId, Entry<B>)>,
{
    if layout.stores_whole() {
        return record;
    }
    let paths = paths_by_id(module);
    let device = layout.device().clone();
    record
        .into_iter()
        .map(|(id, entry)| {
            let path = paths.get(&id).map_or("", String::as_str);
            (id, map_entry(entry, &mut Stored { layout, path, backend: PhantomData }, &device))
        })
        .collect()
}

/// Each parameter's dotted path by its id.
fn paths_by_id<B: Backend, M: Module<B>>(module: &M) -> HashMap<ParamId, String> {
    struct Paths {
        path: Vec<String>,
        found: HashMap<ParamId, String>,
    }
    impl<B: Backend> ModuleVisitor<B> for Paths {
        fn enter_module(&mut self, name: &str, _container_type: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.found.insert(param.id, self.path.join("."));
        }
    }
    let mut paths = Paths { path: Vec::new(), found: HashMap::new() };
    module.visit(&mut paths);
    paths.found
}

/// A change to a momentum tensor of any rank.
trait Velocity<B: Backend> {
    fn map<const D: usize>(&mut self, v: Tensor<B, D>) -> Tensor<B, D>;
}

struct Stored<'a, B, L> {
    layout: &'a L,
    path: &'a str,
    backend: PhantomData<B>,
}

impl<B: AutodiffBackend, L: StepLayout<B>> Velocity<B::InnerBackend> for Stored<'_, B, L> {
    fn map<const D: usize>(&mut self, v: Tensor<B::InnerBackend, D>) -> Tensor<B::InnerBackend, D> {
        self.layout.stored_state(self.path, v)
    }
}

fn map_state<B: Backend, const D: usize>(
    state: SgdState<B, D>,
    f: &mut impl Velocity<B>,
    device: &B::Device,
) -> SgdState<B, D> {
    SgdState {
        momentum: state.momentum.map(|m| {
            // The velocity is private to burn's momentum: read through its record.
            let item = m.into_item::<FullPrecisionSettings>();
            MomentumState::new(f.map(Tensor::<B, D>::from_item(item.velocity, device)))
        }),
    }
}

fn map_entry<B: AutodiffBackend>(
    entry: Entry<B>,
    f: &mut impl Velocity<B::InnerBackend>,
    device: &B::Device,
) -> Entry<B> {
    let AdaptorRecord::V1(v1) = entry;
    AdaptorRecord::V1(match v1 {
        AdaptorRecordV1::Rank0(s) => AdaptorRecordV1::Rank0(map_state(s, f, device)),
        AdaptorRecordV1::Rank1(s) => AdaptorRecordV1::Rank1(map_state(s, f, device)),
        AdaptorRecordV1::Rank2(s) => AdaptorRecordV1::Rank2(map_state(s, f, device)),
        AdaptorRecordV1::Rank3(s) => AdaptorRecordV1::Rank3(map_state(s, f, device)),
        AdaptorRecordV1::Rank4(s) => AdaptorRecordV1::Rank4(map_state(s, f, device)),
        AdaptorRecordV1::Rank5(s) => AdaptorRecordV1::Rank5(map_state(s, f, device)),
        AdaptorRecordV1::Rank6(s) => AdaptorRecordV1::Rank6(map_state(s, f, device)),
        AdaptorRecordV1::Rank7(s) => AdaptorRecordV1::Rank7(map_state(s, f, device)),
        AdaptorRecordV1::Rank8(s) => AdaptorRecordV1::Rank8(map_state(s, f, device)),
    })
}
