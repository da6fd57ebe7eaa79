//! The run's SGD: Burn's `Sgd` (momentum, dampening 0, weight decay) as its checkpoints record
//! it, stepping every parameter in a few launches where the backend has owt-hybrid's grouped
//! kernel (`owt_hybrid::sgd_momentum`, registered by the runtime for CubeCL's backends) and
//! through Burn's own per-parameter optimizer otherwise (Flex: unchanged numbers). The
//! velocities stay on the device between steps and become Burn's records only when a
//! checkpoint asks, so a checkpoint reads the same whichever path stepped.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use burn::module::{AutodiffModule, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::momentum::MomentumState;
use burn::optim::record::AdaptorRecord;
use burn::optim::{GradientsParams, Optimizer, Sgd, SgdState};
use burn::optim::{LearningRate, MultiGradientsParams};
use burn::prelude::*;
use burn::record::{FullPrecisionSettings, Record};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Scalar, TensorMetadata, TensorPrimitive};
use owt_hybrid::sgd_momentum::{MultiTensorSgdBackend, SgdMomentum, SgdStepped, SgdTensors};

/// A grouped step on inner backend `IB`, or the parameters back where it does not take them.
type GroupedStep<IB> = fn(Vec<SgdTensors<IB>>, SgdMomentum) -> Result<Vec<SgdStepped<IB>>, Vec<SgdTensors<IB>>>;

fn grouped_steps() -> &'static RwLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>> {
    static STEPS: OnceLock<RwLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>>> = OnceLock::new();
    STEPS.get_or_init(Default::default)
}

/// Steps every model on inner backend `IB` with the grouped kernel from now on (the runtime
/// calls this for the backends it composes).
pub fn register_grouped_sgd<IB: MultiTensorSgdBackend>() {
    fn step<IB: MultiTensorSgdBackend>(
        params: Vec<SgdTensors<IB>>,
        hyper: SgdMomentum,
    ) -> Result<Vec<SgdStepped<IB>>, Vec<SgdTensors<IB>>> {
        if IB::sgd_takes(&params) {
            Ok(IB::sgd_momentum_step(params, hyper))
        } else {
            Err(params)
        }
    }
    let step: GroupedStep<IB> = step::<IB>;
    grouped_steps().write().unwrap_or_else(|e| e.into_inner()).insert(TypeId::of::<IB>(), Box::new(step));
}

fn grouped_step<IB: Backend>() -> Option<GroupedStep<IB>> {
    let steps = grouped_steps().read().unwrap_or_else(|e| e.into_inner());
    steps.get(&TypeId::of::<IB>()).and_then(|s| s.downcast_ref::<GroupedStep<IB>>()).copied()
}

/// Burn's record of the run's optimizer: each parameter's momentum.
pub type SgdRecord<M, B> =
    <OptimizerAdaptor<Sgd<<B as AutodiffBackend>::InnerBackend>, M, B> as Optimizer<M, B>>::Record;

/// A parameter's velocity and its rank.
struct Velocity<IB: Backend> {
    tensor: FloatTensor<IB>,
    rank: usize,
}

/// The run's SGD (see the module docs).
pub struct RunSgd<M: AutodiffModule<B>, B: AutodiffBackend> {
    burn: OptimizerAdaptor<Sgd<B::InnerBackend>, M, B>,
    grouped: Option<GroupedStep<B::InnerBackend>>,
    hyper: SgdMomentum,
    velocities: HashMap<ParamId, Velocity<B::InnerBackend>>,
    /// Momentum read from a checkpoint for parameters not stepped since (Burn's records; a
    /// parameter's becomes a velocity on its device at its next step).
    loaded: SgdRecord<M, B>,
    /// Steps the grouped kernel took (the others stepped each parameter by itself).
    grouped_steps: u64,
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Clone for RunSgd<M, B> {
    fn clone(&self) -> Self {
        Self {
            burn: self.burn.clone(),
            grouped: self.grouped,
            hyper: self.hyper,
            velocities: self
                .velocities
                .iter()
                .map(|(id, v)| (*id, Velocity { tensor: v.tensor.clone(), rank: v.rank }))
                .collect(),
            loaded: self.loaded.clone(),
            grouped_steps: self.grouped_steps,
        }
    }
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> RunSgd<M, B> {
    /// SGD with `momentum` (dampening 0, no Nesterov) and `weight_decay`, stepping through
    /// `burn` (built from the same numbers) where `B`'s inner backend has no grouped kernel.
    pub fn new(burn: OptimizerAdaptor<Sgd<B::InnerBackend>, M, B>, momentum: f64, weight_decay: Option<f32>) -> Self {
        Self {
            burn,
            grouped: grouped_step::<B::InnerBackend>(),
            hyper: SgdMomentum { lr: 0.0, momentum, weight_decay },
            velocities: HashMap::new(),
            loaded: Default::default(),
            grouped_steps: 0,
        }
    }

    /// Whether steps go through the grouped kernel.
    pub fn grouped(&self) -> bool {
        self.grouped.is_some()
    }

    /// How many steps the grouped kernel took (a step whose parameters it declines, as a
    /// mesh's differently laid out momentum right after a checkpoint is loaded, goes
    /// parameter by parameter).
    pub fn grouped_steps(&self) -> u64 {
        self.grouped_steps
    }

    fn step_grouped(&mut self, grouped: GroupedStep<B::InnerBackend>, lr: LearningRate, module: M, grads: Grads) -> M {
        let hyper = SgdMomentum { lr, ..self.hyper };
        let mut found =
            Found::<M, B> { grads, velocities: &mut self.velocities, loaded: &mut self.loaded, params: Vec::new() };
        module.visit(&mut found);
        let (ids, params): (Vec<(ParamId, usize, bool)>, Vec<SgdTensors<B::InnerBackend>>) =
            found.params.into_iter().unzip();
        let stepped = match grouped(params, hyper) {
            Ok(stepped) => {
                self.grouped_steps += 1;
                stepped
            }
            Err(params) => params.into_iter().map(|t| one_by_one::<B::InnerBackend>(t, hyper)).collect(),
        };
        let mut values = HashMap::new();
        for ((id, rank, require_grad), (value, velocity)) in ids.into_iter().zip(stepped) {
            self.velocities.insert(id, Velocity { tensor: velocity, rank });
            values.insert(id, (value, require_grad));
        }
        module.map(&mut Replace::<B> { values })
    }
}

/// A step's gradients: one set, or one per device (summed on the parameter's device).
enum Grads {
    One(GradientsParams),
    Multi(MultiGradientsParams),
}

impl Grads {
    /// The gradient of parameter `id`, on the parameter's `device`.
    fn take<IB: Backend, const D: usize>(&mut self, id: ParamId, device: &IB::Device) -> Option<Tensor<IB, D>> {
        let grad = match self {
            Grads::One(g) => g.remove::<IB, D>(id),
            Grads::Multi(g) => g.remove::<IB, D>(id).map(|(t, _)| t),
        }?;
        Some(if grad.device() == *device { grad } else { grad.to_device(device) })
    }
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Optimizer<M, B> for RunSgd<M, B> {
    type Record = SgdRecord<M, B>;

    fn step(&mut self, lr: LearningRate, module: M, grads: GradientsParams) -> M {
        match self.grouped {
            Some(grouped) => self.step_grouped(grouped, lr, module, Grads::One(grads)),
            None => self.burn.step(lr, module, grads),
        }
    }

    fn step_multi(&mut self, lr: LearningRate, module: M, grads: MultiGradientsParams) -> M {
        match self.grouped {
            Some(grouped) => self.step_grouped(grouped, lr, module, Grads::Multi(grads)),
            None => self.burn.step_multi(lr, module, grads),
        }
    }

    fn to_record(&self) -> Self::Record {
        if self.grouped.is_none() {
            return self.burn.to_record();
        }
        let mut record = self.loaded.clone();
        for (id, v) in &self.velocities {
            record.insert(*id, record_of::<B>(v));
        }
        record
    }

    fn load_record(mut self, record: Self::Record) -> Self {
        if self.grouped.is_none() {
            self.burn = self.burn.load_record(record);
            return self;
        }
        self.velocities.clear();
        self.loaded = record;
        self
    }
}

/// Burn's per-parameter arithmetic, in its order, for parameters the grouped kernel declines.
fn one_by_one<IB: Backend>(t: SgdTensors<IB>, hyper: SgdMomentum) -> SgdStepped<IB> {
    let dtype = t.param.dtype();
    let scalar = |v: f64| Scalar::new(v, &dtype);
    let mut grad = t.grad;
    if let Some(penalty) = hyper.weight_decay {
        grad = IB::float_add(IB::float_mul_scalar(t.param.clone(), scalar(penalty as f64)), grad);
    }
    let velocity = match t.velocity {
        Some(v) => {
            IB::float_add(IB::float_mul_scalar(grad, scalar(1.0)), IB::float_mul_scalar(v, scalar(hyper.momentum)))
        }
        None => grad,
    };
    let value = IB::float_sub(t.param, IB::float_mul_scalar(velocity.clone(), scalar(hyper.lr)));
    (value, velocity)
}

/// Collects every parameter that has a gradient: its id, rank and whether it tracks
/// gradients, and its tensors.
struct Found<'a, M: AutodiffModule<B>, B: AutodiffBackend> {
    grads: Grads,
    velocities: &'a mut HashMap<ParamId, Velocity<B::InnerBackend>>,
    loaded: &'a mut SgdRecord<M, B>,
    params: Vec<((ParamId, usize, bool), SgdTensors<B::InnerBackend>)>,
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> ModuleVisitor<B> for Found<'_, M, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let value = param.val();
        let require_grad = value.is_require_grad();
        let value = value.inner();
        let device = value.device();
        let Some(grad) = self.grads.take::<B::InnerBackend, D>(param.id, &device) else { return };
        let velocity = match self.velocities.remove(&param.id) {
            Some(v) => Some(v.tensor),
            None => self.loaded.remove(&param.id).and_then(|r| velocity_of::<B::InnerBackend, B, D>(r, &device)),
        };
        let tensors =
            SgdTensors { param: value.into_primitive().tensor(), grad: grad.into_primitive().tensor(), velocity };
        self.params.push(((param.id, D, require_grad), tensors));
    }
}

/// Puts each stepped parameter's new value in place, keeping its id.
struct Replace<B: AutodiffBackend> {
    values: HashMap<ParamId, (FloatTensor<B::InnerBackend>, bool)>,
}

impl<B: AutodiffBackend> ModuleMapper<B> for Replace<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let tensor = match self.values.remove(&id) {
            Some((value, require_grad)) => {
                let tensor =
                    Tensor::from_inner(Tensor::<B::InnerBackend, D>::from_primitive(TensorPrimitive::Float(value)));
                if require_grad {
                    tensor.require_grad()
                } else {
                    tensor
                }
            }
            None => tensor,
        };
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// A velocity as Burn's record holds it.
fn record_of<B: AutodiffBackend>(v: &Velocity<B::InnerBackend>) -> AdaptorRecord<Sgd<B::InnerBackend>, B> {
    fn of<IB: Backend, B: AutodiffBackend<InnerBackend = IB>, const D: usize>(
        t: FloatTensor<IB>,
    ) -> AdaptorRecord<Sgd<IB>, B> {
        let velocity = Tensor::<IB, D>::from_primitive(TensorPrimitive::Float(t));
        AdaptorRecord::from_state::<D>(SgdState { momentum: Some(MomentumState::new(velocity)) })
    }
    let t = v.tensor.clone();
    match v.rank {
        1 => of::<_, B, 1>(t),
        2 => of::<_, B, 2>(t),
        3 => of::<_, B, 3>(t),
        4 => of::<_, B, 4>(t),
        5 => of::<_, B, 5>(t),
        6 => of::<_, B, 6>(t),
        7 => of::<_, B, 7>(t),
        8 => of::<_, B, 8>(t),
        rank => unreachable!("a parameter of rank {rank}: Burn's records stop at 8"),
    }
}

/// The velocity in Burn's record, on `device` (read through the record, as its field is
/// private: one copy through the host, once per parameter after a checkpoint is loaded), if
/// the record has one of rank `D`.
fn velocity_of<IB: Backend, B: AutodiffBackend<InnerBackend = IB>, const D: usize>(
    record: AdaptorRecord<Sgd<IB>, B>,
    device: &IB::Device,
) -> Option<FloatTensor<IB>> {
    let state: SgdState<IB, D> = record.into_state::<D>();
    let item = state.momentum?.into_item::<FullPrecisionSettings>();
    Some(Tensor::<IB, D>::from_item(item.velocity, device).into_primitive().tensor())
}
