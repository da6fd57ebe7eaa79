//! What a parallel plan needs of an AlexNet architecture, checked from the architecture alone
//! (no model is built), so `owt train`, `owt bench` and `owt plan` all refuse the same runs
//! with the same words.

use owt_hybrid::{Placement, Plan};
use owt_models::Architecture;

use crate::error::OwtError;

/// Every check a run of `arch` under `plan` on `ranks` ranks with a global batch of `batch`
/// images must pass: the mesh and batch ([`Plan::check_mesh`]), the towers and grouped convs
/// ([`check_architecture`]) and the parameters' shapes ([`Plan::check_params`]).
pub fn check_run(plan: &Plan, arch: &Architecture, ranks: usize, batch: usize) -> Result<(), OwtError> {
    plan.check_mesh(ranks, batch)?;
    check_architecture(plan, arch, ranks)?;
    Ok(plan.check_params(&arch.parameters()?, ranks)?)
}

/// Checks what `plan` needs of an AlexNet architecture on `ranks` ranks: the tower count, and
/// that every grouped conv whose filters are split has a multiple of `ranks` groups (so each
/// rank's filters read only its own input channels).
pub fn check_architecture(plan: &Plan, arch: &Architecture, ranks: usize) -> Result<(), OwtError> {
    if let Some(towers) = plan.towers {
        if arch.towers != towers {
            return Err(OwtError::input(format!(
                "plan {} needs a model with {towers} towers, {} has {} (try --towers {towers} with alexnet-small, or alexnet-2012)",
                plan.name, arch.name, arch.towers
            )));
        }
    }
    for (i, conv) in arch.convs.iter().enumerate() {
        let path = format!("conv{}.weight", i + 1);
        if conv.groups > 1 && plan.placement_of(&path) == Placement::Shard(0) && conv.groups % ranks != 0 {
            return Err(OwtError::input(format!(
                "plan {} splits the filters of conv{} ({} groups) over {ranks} devices: the groups must be a multiple of the devices (use --devices {} or a one-tower model)",
                plan.name,
                i + 1,
                conv.groups,
                conv.groups
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use owt_models::{ModelKind, ModelSpec};

    #[test]
    fn the_architecture_lists_the_parameters_its_module_holds() {
        for spec in [
            ModelSpec { input: Some(67), ..ModelSpec::new(ModelKind::AlexNet2012) },
            ModelSpec { input: Some(67), ..ModelSpec::new(ModelKind::AlexNetOwt) },
            ModelSpec::new(ModelKind::AlexNetSmall),
            ModelSpec { towers: Some(1), ..ModelSpec::new(ModelKind::AlexNetSmall) },
        ] {
            let arch = spec.architecture().unwrap();
            let module: owt_models::AlexNet<burn::backend::Flex> = arch.try_init(&Default::default()).unwrap();
            let mut listed = arch.parameters().unwrap();
            let mut held = owt_hybrid::parameter_paths(&module);
            listed.sort();
            held.sort();
            assert_eq!(listed, held, "{}", arch.name);
        }
    }
}
