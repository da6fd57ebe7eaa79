//! Every number a user can give owt is bounded (issue 60 point 4): each numeric flag of each
//! command, found from the command line's own definition (so a flag added later is covered
//! without a word here), and each number inside a flag's value (`--mesh N,L`, `--uplink
//! SPAN,GBPS,US`, `--lr-schedule step:E`), is driven through 0, 1, -1, huge, u64's maximum and
//! past it, NaN, the infinities and a subnormal, on top of arguments that otherwise make the
//! command succeed quickly. Whatever the value, owt either does the work or refuses it: never
//! a panic (exit 101) or an "internal" error, a refusal in one line (the last thing it says),
//! and nothing it prints reads NaN or inf. Each run has a time limit, so a value that would
//! take a day (a billion epochs) has to be refused, not started.

use std::any::TypeId;
use std::path::PathBuf;

use clap::CommandFactory;

use crate::faults::{ok, owt_within_env, stderr, stdout, train};

/// The values every numeric flag is given.
const VALUES: [&str; 12] = [
    "0",
    "1",
    "-1",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "NaN",
    "inf",
    "-inf",
    "5e-324",
    "2.5",
];

/// Seconds one run may take: the quick work the base arguments ask for, in a debug build.
const SECONDS: u64 = 120;

/// The types a flag parsed as a number has.
fn numeric(id: &clap::builder::ValueParser) -> bool {
    let ids = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<f32>(),
        TypeId::of::<f64>(),
    ];
    ids.iter().any(|t| id.type_id() == *t)
}

/// The numeric flags of each command, from clap's definition of the command line.
fn numeric_flags() -> Vec<(String, String)> {
    let cli = owt::cli::Cli::command();
    let mut flags = Vec::new();
    for sub in cli.get_subcommands() {
        for arg in sub.get_arguments() {
            if arg.get_action().takes_values() && numeric(arg.get_value_parser()) {
                if let Some(long) = arg.get_long() {
                    flags.push((sub.get_name().to_string(), format!("--{long}")));
                }
            }
        }
    }
    flags
}

/// What the runs share: a trained run, a torchvision file, an image folder, and fresh output
/// paths.
struct Fixtures {
    dir: tempfile::TempDir,
    run: PathBuf,
    weights: PathBuf,
    folder: PathBuf,
    next: std::cell::Cell<usize>,
}

impl Fixtures {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        ok(&train(&run, &[]));
        let weights = crate::writers::torchvision_file(dir.path());
        let folder = dir.path().join("folder");
        crate::jpeg_pipeline::jpeg_folder(&folder, 4, 2);
        Self { dir, run, weights, folder, next: Default::default() }
    }

    /// A path no run has written.
    fn fresh(&self) -> String {
        self.next.set(self.next.get() + 1);
        self.dir.path().join(format!("out-{}", self.next.get())).to_str().unwrap().to_string()
    }

    /// Arguments that make `command` succeed quickly, as (flag, value) pairs after the
    /// command's name and its positional arguments; several where a command has modes.
    fn bases(&self, command: &str) -> Vec<(Vec<String>, Vec<(String, Option<String>)>)> {
        let pairs = |p: &[(&str, &str)]| -> Vec<(String, Option<String>)> {
            p.iter().map(|(f, v)| (f.to_string(), (!v.is_empty()).then(|| v.to_string()))).collect()
        };
        let words = |w: &[&str]| -> Vec<String> { w.iter().map(|s| s.to_string()).collect() };
        let small = [("--model", "alexnet-small")];
        let custom = [("--tflops", "10"), ("--mem-gbps", "100"), ("--link-gbps", "10"), ("--latency-us", "5")];
        let plan = [&small[..], &[("--devices", "2"), ("--batch", "8")]].concat();
        match command {
            "info" => vec![(words(&["info"]), pairs(&small))],
            "train" => vec![(
                words(&["train"]),
                pairs(&[
                    ("--model", "alexnet-small"),
                    ("--dataset", "synthetic"),
                    ("--limit", "8"),
                    ("--batch", "4"),
                    ("--epochs", "1"),
                    ("--out", "FRESH"),
                ]),
            )],
            "eval" => vec![(
                words(&["eval"]),
                pairs(&[("--checkpoint", self.run.to_str().unwrap()), ("--dataset", "synthetic")]),
            )],
            "plan" => vec![
                (words(&["plan"]), pairs(&[&plan[..], &custom[..]].concat())),
                (words(&["plan"]), pairs(&[&plan[..], &custom[..], &[("--auto", ""), ("--json", "")]].concat())),
            ],
            "bench" => vec![
                (
                    words(&["bench"]),
                    pairs(&[&small[..], &[("--batch", "4"), ("--warmup", "0"), ("--steps", "1")]].concat()),
                ),
                (
                    words(&["bench"]),
                    pairs(
                        &[
                            &small[..],
                            &[
                                ("--loader", ""),
                                ("--limit", "8"),
                                ("--batch", "4"),
                                ("--warmup", "0"),
                                ("--steps", "1"),
                            ],
                        ]
                        .concat(),
                    ),
                ),
            ],
            "import" => vec![(
                words(&["import", "--from", "torchvision", self.weights.to_str().unwrap()]),
                pairs(&[("--model", "alexnet-owt"), ("--input", "67"), ("--out", "FRESH")]),
            )],
            "prepare" => vec![(
                words(&["prepare"]),
                pairs(&[("--data", self.folder.to_str().unwrap()), ("--side", "36"), ("--out", "FRESH")]),
            )],
            other => panic!("owt {other} has numeric flags: give it quick arguments here"),
        }
    }

    /// The arguments of `command`'s `base` with `flag` set to `value` (in `--flag=value` form,
    /// so `-1` is a value, not a flag).
    fn args(&self, head: &[String], base: &[(String, Option<String>)], flag: &str, value: &str) -> Vec<String> {
        let mut args = head.to_vec();
        for (f, v) in base.iter().filter(|(f, _)| f != flag) {
            args.push(f.clone());
            if let Some(v) = v {
                args.push(if v == "FRESH" { self.fresh() } else { v.clone() });
            }
        }
        args.push(format!("{flag}={value}"));
        args
    }
}

/// Whether `text` holds a NaN or an infinity as a word.
fn non_finite_word(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| matches!(w.to_ascii_lowercase().as_str(), "nan" | "inf" | "infinity") || w.starts_with("NaN"))
        .map(str::to_string)
}

/// What is wrong with the run of `args`, whose last is the flag under test with `value`, if
/// anything. A refusal may quote the value it was given ("got NaN"); nothing else may read NaN
/// or inf.
fn violation(args: &[String], value: &str, raw: &str) -> Option<String> {
    let shown: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = owt_within_env(&shown, &[], SECONDS);
    let (out, err) = (stdout(&o), stderr(&o));
    let code = o.status.code();
    if !matches!(code, Some(0..=2)) {
        return Some(format!("exit {code:?}: {err}"));
    }
    if err.contains("panicked") || err.contains("internal") || err.contains("RUST_BACKTRACE") {
        return Some(format!("a panic or internal error: {err}"));
    }
    if !o.status.success() {
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        let errors = lines.iter().filter(|l| l.starts_with("error")).count();
        if errors != 1 || !lines.last().is_some_and(|l| l.starts_with("error")) {
            return Some(format!("not one error line, last: {err}"));
        }
    }
    let quoted = |text: &str| text.replace(value, "VALUE").replace(raw, "VALUE");
    let (out, err) = (quoted(&out), quoted(&err));
    if let Some(word) = non_finite_word(&out).or_else(|| non_finite_word(&err)) {
        return Some(format!("prints {word:?}: {out}{err}"));
    }
    None
}

/// Numbers inside the values of flags that are not numbers themselves: each `V` is replaced by
/// each value.
const INSIDE: [(&str, &str, &str); 7] = [
    ("plan", "--mesh", "V,2"),
    ("plan", "--mesh", "2,V"),
    ("plan", "--uplink", "2,V,5"),
    ("plan", "--uplink", "2,10,V"),
    ("plan", "--uplink", "V,10,5"),
    ("train", "--lr-schedule", "step:V"),
    ("train", "--lr-schedule", "plateau:V"),
];

#[test]
fn every_numeric_flag_of_every_command_is_bounded() {
    let fixtures = Fixtures::new();
    // (command, flag, the flag's value, the number in it)
    let mut cases: Vec<(String, String, String, &str)> = Vec::new();
    for (command, flag) in numeric_flags() {
        for value in VALUES {
            cases.push((command.clone(), flag.clone(), value.to_string(), value));
        }
    }
    for (command, flag, template) in INSIDE {
        for value in VALUES {
            cases.push((command.to_string(), flag.to_string(), template.replace('V', value), value));
        }
    }
    // Each base alone succeeds, so a case's refusal is the value's doing (the --uplink cases
    // need the custom profile the plan bases give).
    let mut commands: Vec<&String> = cases.iter().map(|(c, _, _, _)| c).collect();
    commands.dedup();
    for command in commands {
        for (head, base) in fixtures.bases(command) {
            let mut args = head.clone();
            for (f, v) in &base {
                args.push(f.clone());
                args.extend(v.as_ref().map(|v| if v == "FRESH" { fixtures.fresh() } else { v.clone() }));
            }
            let shown: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&owt_within_env(&shown, &[], SECONDS));
        }
    }
    let mut wrong = Vec::new();
    let mut runs = 0;
    for (command, flag, value, raw) in &cases {
        for (head, base) in fixtures.bases(command) {
            let args = fixtures.args(&head, &base, flag, value);
            runs += 1;
            if let Some(why) = violation(&args, value, raw) {
                wrong.push(format!("owt {}: {}", args.join(" "), why.lines().next().unwrap_or("")));
            }
        }
    }
    assert!(runs > 500, "{runs} runs: the flags were not found");
    assert!(wrong.is_empty(), "{} of {runs} runs misbehaved:\n{}", wrong.len(), wrong.join("\n"));
}
