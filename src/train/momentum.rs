//! The run's SGD momentum as a checkpoint holds it (every parameter's whole) and as a layout
//! stores it (on a 2-D mesh that shards parameters over its nodes, each node only its
//! slices): [`whole`] before a checkpoint is written, [`stored`] after one is read. Where the
//! layout stores every parameter whole, both hand the record back untouched.

use std::marker::PhantomData;

use burn::module::{Module, ParamId};
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

/// The record with every parameter's momentum whole, in `module`'s parameter order (making
/// one whole is a collective over the nodes: every node makes the same one at a time).
pub fn whole<B: AutodiffBackend, L: StepLayout<B>, M: Module<B>>(
    layout: &L,
    record: impl IntoIterator<Item = (ParamId, Entry<B>)>,
    module: &M,
) -> Vec<(ParamId, Entry<B>)> {
    let ordered = InParameterOrder::new(record, module).0;
    if layout.stores_whole() {
        return ordered;
    }
    let device = layout.device().clone();
    ordered
        .into_iter()
        .map(|(id, entry)| (id, map_entry(entry, &mut Whole { layout, id, backend: PhantomData }, &device)))
        .collect()
}

/// The record as `layout` stores it, from a whole one (read from a checkpoint). Local.
pub fn stored<B, L, R>(layout: &L, record: R) -> R
where
    B: AutodiffBackend,
    L: StepLayout<B>,
    R: IntoIterator<Item = (ParamId, Entry<B>)> + FromIterator<(ParamId, Entry<B>)>,
{
    if layout.stores_whole() {
        return record;
    }
    let device = layout.device().clone();
    record
        .into_iter()
        .map(|(id, entry)| (id, map_entry(entry, &mut Stored { layout, id, backend: PhantomData }, &device)))
        .collect()
}

/// A change to a momentum tensor of any rank.
trait Velocity<B: Backend> {
    fn map<const D: usize>(&mut self, v: Tensor<B, D>) -> Tensor<B, D>;
}

struct Whole<'a, B, L> {
    layout: &'a L,
    id: ParamId,
    backend: PhantomData<B>,
}

impl<B: AutodiffBackend, L: StepLayout<B>> Velocity<B::InnerBackend> for Whole<'_, B, L> {
    fn map<const D: usize>(&mut self, v: Tensor<B::InnerBackend, D>) -> Tensor<B::InnerBackend, D> {
        self.layout.whole_state(self.id, v)
    }
}

struct Stored<'a, B, L> {
    layout: &'a L,
    id: ParamId,
    backend: PhantomData<B>,
}

impl<B: AutodiffBackend, L: StepLayout<B>> Velocity<B::InnerBackend> for Stored<'_, B, L> {
    fn map<const D: usize>(&mut self, v: Tensor<B::InnerBackend, D>) -> Tensor<B::InnerBackend, D> {
        self.layout.stored_state(self.id, v)
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
