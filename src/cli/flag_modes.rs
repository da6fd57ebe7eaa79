//! The flags each mode of a subcommand would ignore, in one table: `owt bench --loader` times
//! the input pipeline alone (no backend, no mesh, no network), a run on one device has no wire
//! or exchange scheme, a rate without scaling has no base batch, a network without batch
//! normalisation has no batch statistics. Such a flag, given on the command line, is refused
//! in clap's one line naming the flag and the mode, rather than accepted and ignored; a value
//! that arrives otherwise (a plan file's, a checkpoint's) is never refused for it.

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};

use crate::cli::{Cli, Command};
use crate::train::schedule::LrScaling;

/// One mode of a subcommand and the flags it would ignore.
pub struct Mode {
    /// The subcommand (`train`, `bench`).
    pub command: &'static str,
    /// The mode in words, as the refusal says it ("with --loader").
    pub name: &'static str,
    /// Arguments after the subcommand that put a command line in this mode (tests walk them).
    pub example: &'static [&'static str],
    /// The long flags this mode ignores.
    pub ignores: &'static [&'static str],
    /// Whether a parsed command line (run by `processes` processes) is in this mode.
    active: fn(&Command, usize) -> bool,
}

/// The flags of a run across devices: nothing to exchange, split or overlap on one device.
const MESH_FLAGS: &[&str] =
    &["--scheme", "--fc-update", "--wire", "--overlap-sync", "--virtual-ranks", "--batch-stats"];

const ONE_DEVICE: &str = "on one device (without --devices above 1, --mesh, --plan or --plan-file, in one process)";
const NO_BATCH_NORM: &str = "on a network without batch normalisation (its model has none)";

/// The subcommands with one mode: every flag they take applies to every command line that
/// parses (`plan` refuses its own contradictions, a profile named and one given, in one line).
pub const ONE_MODE: &[&str] = &["info", "eval", "plan", "report", "import", "export", "prepare"];

/// Every mode with flags it would ignore; the first active mode that ignores a given flag is
/// the one a refusal names.
pub const MODES: &[Mode] = &[
    Mode {
        command: "train",
        name: ONE_DEVICE,
        example: &["--model", "alexnet-small", "--dataset", "synthetic", "--out", "run"],
        ignores: MESH_FLAGS,
        active: |c, processes| matches!(c, Command::Train(a) if !a.parallel.on_mesh() && processes == 1),
    },
    Mode {
        command: "train",
        name: NO_BATCH_NORM,
        example: &["--model", "alexnet-small", "--dataset", "synthetic", "--out", "run", "--devices", "2"],
        ignores: &["--batch-stats"],
        active: |c, _| matches!(c, Command::Train(a) if !batch_norm(&a.model.spec())),
    },
    Mode {
        command: "train",
        name: "without --lr-scaling linear or sqrt (the rate is not scaled to a base batch)",
        example: &["--model", "alexnet-small", "--dataset", "synthetic", "--out", "run"],
        ignores: &["--base-batch"],
        active: |c, _| matches!(c, Command::Train(a) if a.lr_scaling == LrScaling::None),
    },
    Mode {
        command: "bench",
        name: "with --loader (it times the input pipeline alone: no backend, mesh or network runs)",
        example: &["--loader"],
        ignores: &[
            "--backend",
            "--conv",
            "--matmul",
            "--tf32",
            "--deterministic",
            "--precision",
            "--devices",
            "--mesh",
            "--virtual-ranks",
            "--plan",
            "--plan-file",
            "--scheme",
            "--fc-update",
            "--wire",
            "--overlap-sync",
            "--batch-stats",
            "--no-fusion",
            "--head",
            "--classes",
            "--towers",
            "--hidden",
            "--adaptive-pool",
        ],
        active: |c, _| matches!(c, Command::Bench(a) if a.loader),
    },
    Mode {
        command: "bench",
        name: ONE_DEVICE,
        example: &["--model", "alexnet-small"],
        ignores: MESH_FLAGS,
        active: |c, processes| matches!(c, Command::Bench(a) if !a.loader && !a.parallel.on_mesh() && processes == 1),
    },
    Mode {
        command: "bench",
        name: NO_BATCH_NORM,
        example: &["--model", "alexnet-small", "--devices", "2"],
        ignores: &["--batch-stats"],
        active: |c, _| matches!(c, Command::Bench(a) if !a.loader && !batch_norm(&a.model.spec())),
    },
    Mode {
        command: "bench",
        name: "with --compare-schemes (it runs every scheme in turn)",
        example: &["--model", "alexnet-small", "--devices", "2", "--compare-schemes"],
        ignores: &["--scheme"],
        active: |c, _| matches!(c, Command::Bench(a) if a.compare_schemes),
    },
];

/// Whether the network a spec builds has batch normalisation (true where it does not build:
/// that refusal comes later, from the network itself).
fn batch_norm(spec: &owt_models::ModelSpec) -> bool {
    spec.architecture().map_or(true, |a| a.batch_norm)
}

/// Processes in this job, as its launcher says (MPI is joined later, by the command).
fn launched_processes() -> usize {
    owt_hybrid::Launch::from_env().ok().flatten().map_or(1, |l| l.size)
}

/// Refuses a flag given on the command line that the command's mode would ignore, as clap
/// refuses a conflict: one line naming the flag and the mode.
pub fn check(cli: &Cli, matches: &ArgMatches) -> Result<(), clap::Error> {
    check_with(cli, matches, launched_processes())
}

/// [`check`] for a job of `processes` processes.
pub fn check_with(cli: &Cli, matches: &ArgMatches, processes: usize) -> Result<(), clap::Error> {
    let Some((name, sub)) = matches.subcommand() else { return Ok(()) };
    let mut command = Cli::command();
    let Some(sub_command) = command.find_subcommand(name) else { return Ok(()) };
    let given = |flag: &str| {
        sub_command
            .get_arguments()
            .find(|a| a.get_long() == flag.strip_prefix("--"))
            .is_some_and(|a| sub.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
    };
    let refused = MODES
        .iter()
        .filter(|m| m.command == name && (m.active)(&cli.command, processes))
        .find_map(|m| m.ignores.iter().find(|f| given(f)).map(|f| (*f, m.name)));
    if let Some((flag, mode)) = refused {
        let message = format!("the argument '{flag}' cannot be used {mode}: it would be ignored");
        return Err(command.error(clap::error::ErrorKind::ArgumentConflict, message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use clap::FromArgMatches;

    /// A value each flag parses (the first of its possible values where it lists them).
    fn sample(arg: &clap::Arg) -> Option<String> {
        if !arg.get_action().takes_values() {
            return None;
        }
        if let Some(v) = arg.get_possible_values().into_iter().find(|v| !v.is_hide_set()) {
            return Some(v.get_name().to_string());
        }
        let long = arg.get_long().unwrap_or_default();
        Some(
            match long {
                "model" => "vgg11-bn",
                "scheme" => "b",
                "fc-update" => "per-chunk",
                "wire" => "bf16",
                "batch-stats" => "local",
                "precision" => "f32",
                "conv" => "owt",
                "matmul" => "cubecl",
                "tf32" => "off",
                "input-norm" => "imagenet",
                "resize-filter" => "bilinear",
                "head" => "softmax",
                "adaptive-pool" => "none",
                "mesh" => "2,2",
                "lr" | "momentum" | "lighting" => "0.1",
                "lr-schedule" => "constant",
                "weight-decay" => "0",
                "out" | "data" | "plan-file" | "val-labels" | "val-synsets" | "checkpoint" => "some-path",
                _ => "2",
            }
            .to_string(),
        )
    }

    fn parse(args: &[String]) -> Result<(Cli, ArgMatches), clap::Error> {
        let matches = Cli::command().try_get_matches_from(args)?;
        Ok((Cli::from_arg_matches(&matches)?, matches))
    }

    /// Every flag of each mode's subcommand, added to the mode's example: refused in one line
    /// naming the flag and the mode where the mode ignores it, and never refused by this check
    /// where no mode active on that command line ignores it.
    #[test]
    fn every_flag_is_refused_exactly_in_the_modes_that_would_ignore_it() {
        let root = Cli::command();
        let mut refused = 0;
        for mode in MODES {
            let sub = root.find_subcommand(mode.command).unwrap();
            let base: Vec<String> = ["owt", mode.command].iter().chain(mode.example).map(|s| s.to_string()).collect();
            let (cli, m) = parse(&base).unwrap_or_else(|e| panic!("{}: example {base:?}: {e}", mode.name));
            assert!((mode.active)(&cli.command, 1), "{}: the example {base:?} is not in the mode", mode.name);
            check_with(&cli, &m, 1).unwrap_or_else(|e| panic!("{}: the example alone: {e}", mode.name));
            for flag in mode.ignores {
                assert!(
                    sub.get_arguments().any(|a| a.get_long() == flag.strip_prefix("--")),
                    "{}: {flag} is no flag of owt {}",
                    mode.name,
                    mode.command
                );
            }
            for arg in sub.get_arguments() {
                let Some(long) = arg.get_long().filter(|l| *l != "help") else { continue };
                let flag = format!("--{long}");
                if mode.example.contains(&flag.as_str()) {
                    continue;
                }
                let mut args = base.clone();
                args.push(flag.clone());
                args.extend(sample(arg));
                let what = format!("{}: {args:?}", mode.name);
                let outcome = parse(&args).and_then(|(cli, m)| {
                    let still = (mode.active)(&cli.command, 1);
                    check_with(&cli, &m, 1).map(|_| still)
                });
                match outcome {
                    Err(e) if mode.ignores.contains(&flag.as_str()) => {
                        let text = e.to_string();
                        assert_eq!(e.kind(), ErrorKind::ArgumentConflict, "{what}: {text}");
                        assert!(text.contains(&format!("'{flag}'")) && text.contains(mode.name), "{what}: {text}");
                        refused += 1;
                    }
                    Ok(still) => assert!(!still || !mode.ignores.contains(&flag.as_str()), "{what}: accepted"),
                    // Clap's own refusals of flags a mode cannot take (`requires`, `conflicts_with`).
                    Err(e) if matches!(e.kind(), ErrorKind::ArgumentConflict | ErrorKind::MissingRequiredArgument) => {
                        let text = e.to_string();
                        let other =
                            MODES.iter().any(|o| o.command == mode.command && o.ignores.contains(&flag.as_str()));
                        assert!(
                            text.contains(&flag) || text.contains(&format!("'{}", arg.get_id())) || other,
                            "{what}: refused for something else: {text}"
                        );
                    }
                    Err(e) => panic!("{what}: {e} (give the flag a sample value that parses)"),
                }
            }
        }
        assert!(refused >= MODES.iter().map(|m| m.ignores.len()).sum::<usize>(), "{refused}");
    }

    #[test]
    fn every_subcommand_has_its_modes_or_is_said_to_have_one() {
        for sub in Cli::command().get_subcommands().filter(|s| s.get_name() != "help") {
            let name = sub.get_name();
            let modes = MODES.iter().any(|m| m.command == name);
            assert!(modes != ONE_MODE.contains(&name), "owt {name}: list its modes in MODES, or it in ONE_MODE");
        }
    }

    #[test]
    fn a_job_of_several_processes_is_a_mesh_run_on_one_device_each() {
        let args: Vec<String> =
            ["owt", "train", "--model", "alexnet-small", "--dataset", "synthetic", "--out", "r", "--wire", "bf16"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let (cli, m) = parse(&args).unwrap();
        let e = check_with(&cli, &m, 1).unwrap_err().to_string();
        assert!(e.contains("'--wire'") && e.contains("on one device"), "{e}");
        check_with(&cli, &m, 2).unwrap();
    }
}
