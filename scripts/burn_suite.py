#!/usr/bin/env python3
"""Runs Burn's own backend test suite (crates/burn-backend-tests of a Burn checkout at the tag
owt pins, v0.21.0: the tensor, tensor_f16 and autodiff binaries) on Hybrid<Flex>.

owt carries none of Burn's test code: this script copies the suite out of a checkout you give
it into a work folder, points its test backend at Hybrid<Flex> (or at Flex itself, the
baseline) and runs it in each configuration:

  flex     plain Flex, the baseline every configuration is held to
  1rank    Hybrid<Flex> on a 1-rank mesh
  2ranks   2 virtual ranks, every tensor replicated
  2shard0  2 virtual ranks, every created tensor split Shard(0) where its first dimension
           splits (MeshDevice::creating), set as the default mesh (MeshDevice::set_default)

For each it prints the passed, failed and ignored counts, the failing tests, and under the
sharded configuration the ops that ran gathered for want of a sharded rule (the mesh ledger's
fallbacks, by op, summed over the binaries).

  git clone --branch v0.21.0 --depth 1 https://github.com/tracel-ai/burn /tmp/burn
  python3 scripts/burn_suite.py /tmp/burn                    # every configuration
  python3 scripts/burn_suite.py /tmp/burn --configs 2shard0 -- det::   # a filter

Where Burn's suite uses its own Dispatch backend, the copy uses TestBackend = Hybrid<Flex>
(Autodiff<Hybrid<Flex>> for the autodiff binary). The autodiff binary's checkpointing module
runs on the same backend, without checkpointing (Dispatch picks that strategy per device; a
backend type picks it once). Every edit of Burn's files is checked to have applied, so a
different Burn fails here, naming the file, instead of running something else.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARIES = ["tensor", "tensor_f16", "autodiff"]
CONFIGS = ["flex", "1rank", "2ranks", "2shard0"]

CARGO_TOML = """[package]
name = "burn-backend-tests-on-hybrid"
version = "0.0.0"
edition = "2024"
publish = false
autotests = false
autobenches = false

[workspace]

[lib]
name = "burn_backend_tests"
path = "src/lib.rs"

[features]
default = ["std", "flex", "hybrid"]
std = []
flex = []
quantization = []
# TestBackend = Hybrid<Flex>; without it, plain Flex (the baseline).
hybrid = []

[dependencies]
burn = {{ version = "=0.21.0", features = ["flex", "autodiff"] }}
burn-tensor = "=0.21.0"
burn-tensor-testgen = "=0.21.0"
burn-autodiff = {{ version = "=0.21.0", features = ["export_tests"] }}
burn-flex = "=0.21.0"
owt-hybrid = {{ path = "{backend}" }}
num-traits = "0.2"
serial_test = "3"
rand = "0.9"

[dev-dependencies]
ctor = "0.10.1"

{tests}
[profile.dev]
opt-level = 1
[profile.dev.package."*"]
opt-level = 3
debug = false
debug-assertions = false
"""

MESH_SETUP = '''//! Written by owt's scripts/burn_suite.py: the mesh of the configuration in OWT_SUITE.
#[cfg(feature = "hybrid")]
pub fn configure() {
    use burn_flex::FlexDevice;
    use owt_hybrid::{MeshDevice, Placement};
    let mesh = match std::env::var("OWT_SUITE").as_deref() {
        Ok("2ranks") => MeshDevice::virtual_ranks(FlexDevice, 2),
        Ok("2shard0") => MeshDevice::virtual_ranks(FlexDevice, 2).creating(Placement::Shard(0)),
        Ok("1rank") | Err(_) => return,
        Ok(other) => panic!("OWT_SUITE={other}: expected 1rank, 2ranks or 2shard0"),
    };
    MeshDevice::set_default(&mesh).unwrap();
}

/// At exit, with OWT_SUITE_LEDGER=FILE: the default mesh's fallbacks by op, appended to FILE.
#[cfg(feature = "hybrid")]
#[ctor::dtor]
fn report_fallbacks() {
    use std::io::Write;
    let Ok(path) = std::env::var("OWT_SUITE_LEDGER") else { return };
    let mesh = owt_hybrid::MeshDevice::<burn_flex::FlexDevice>::default();
    let binary = std::env::args().next().unwrap_or_default();
    let mut text = format!("# {binary}\n");
    for (op, n) in &mesh.ledger_snapshot().fallbacks {
        text.push_str(&format!("{op}\\t{n}\\n"));
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
'''

INNER = """#[cfg(feature = "hybrid")]
pub type Inner = owt_hybrid::Hybrid<burn_flex::Flex>;
#[cfg(not(feature = "hybrid"))]
pub type Inner = burn_flex::Flex;
"""


def edit(path, old, new, count=1):
    """Replaces `old` (a regex) in `path` by `new`, exactly `count` times, or exits naming it."""
    text = open(path).read()
    out, n = re.subn(old, new, text, flags=re.S)
    if n != count:
        sys.exit(f"burn_suite.py: {path}: expected {count} match(es) of {old!r}, found {n}; is this Burn v0.21.0?")
    open(path, "w").write(out)


def prepare(burn, work):
    """Copies Burn's suite into `work` and points it at Hybrid<Flex>."""
    suite = os.path.join(burn, "crates", "burn-backend-tests")
    if not os.path.isdir(os.path.join(suite, "tests")):
        sys.exit(f"burn_suite.py: {suite}/tests not found: give a checkout of tracel-ai/burn at v0.21.0")
    version = re.search(r'^version = "([^"]+)"', open(os.path.join(burn, "Cargo.toml")).read(), re.M)
    if not version or version.group(1) != "0.21.0":
        sys.exit(f"burn_suite.py: {burn} is Burn {version and version.group(1)}, owt pins 0.21.0")
    for part in ["src", "tests"]:
        shutil.rmtree(os.path.join(work, part), ignore_errors=True)
        shutil.copytree(os.path.join(suite, part), os.path.join(work, part))
    tests = "".join(f'[[test]]\nname = "{b}"\npath = "tests/{b}.rs"\n\n' for b in BINARIES)
    open(os.path.join(work, "Cargo.toml"), "w").write(
        CARGO_TOML.format(backend=os.path.join(REPO, "backend"), tests=tests))
    common = os.path.join(work, "tests", "common")
    open(os.path.join(common, "mesh_setup.rs"), "w").write(MESH_SETUP)
    backend = os.path.join(common, "backend.rs")
    edit(backend, r"let device = burn_dispatch::DispatchDevice::default\(\);",
         '#[cfg(feature = "hybrid")]\n    crate::mesh_setup::configure();\n'
         "    let device = burn_tensor::Device::<TestBackend>::default();")
    shutil.copy(backend, os.path.join(common, "backend_autodiff.rs"))
    edit(backend, r"pub type TestBackend = burn_dispatch::Dispatch;", INNER + "\npub type TestBackend = Inner;")
    edit(os.path.join(common, "backend_autodiff.rs"), r"pub type TestBackend = burn_dispatch::Dispatch;",
         INNER + "\npub type TestBackend = burn_autodiff::Autodiff<Inner>;")
    # The autodiff devices: the backend type says autodiff, the device is the default one.
    edit(os.path.join(common, "autodiff.rs"),
         r"pub fn new\(\) -> burn_dispatch::DispatchDevice \{.*?\n(\s*)\}",
         r"pub fn new() -> burn_tensor::Device<TestBackend> {\n\1    Default::default()\n\1}", count=2)
    for b in BINARIES:
        target = "common/backend_autodiff.rs" if b == "autodiff" else "common/backend.rs"
        edit(os.path.join(work, "tests", f"{b}.rs"), r'#\[path = "common/backend\.rs"\]',
             f'#[path = "common/mesh_setup.rs"]\nmod mesh_setup;\n#[path = "{target}"]')


def run(work, target, config, extra):
    """Runs the suite in one configuration; returns (counts by binary, failures, fallbacks)."""
    env = dict(os.environ, CARGO_TARGET_DIR=target, RUST_BACKTRACE="0")
    cmd = ["cargo", "test", "--no-fail-fast"]
    if config == "flex":
        cmd += ["--no-default-features", "--features", "std,flex"]
    else:
        env["OWT_SUITE"] = config
    ledger = os.path.join(work, f"ledger-{config}.tsv")
    if os.path.exists(ledger):
        os.remove(ledger)
    env["OWT_SUITE_LEDGER"] = ledger
    for b in BINARIES:
        cmd += ["--test", b]
    cmd += extra
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    text = out.stdout + out.stderr
    binaries = re.findall(r"Running tests/(\w+)\.rs", text)
    results = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", text)
    counts = dict(zip(binaries, [tuple(map(int, r)) for r in results]))
    failures = sorted(set(re.findall(r"^test (\S+) \.\.\. FAILED", text, re.M)))
    if not counts:
        sys.exit(f"burn_suite.py: {config}: no test results; cargo said:\n{text[-4000:]}")
    fallbacks = collections.defaultdict(collections.Counter)  # by binary, then op
    binary = None
    if os.path.exists(ledger):
        for line in open(ledger):
            if line.startswith("# "):
                binary = os.path.basename(line[2:].strip()).rsplit("-", 1)[0]
                continue
            op, n = line.split("\t")
            fallbacks[binary][op] += int(n)
    return counts, failures, fallbacks


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("burn", help="a checkout of tracel-ai/burn at v0.21.0")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ", ".join(CONFIGS))
    p.add_argument("--work", default=os.path.expanduser("~/.cache/owt-burn-suite"),
                   help="where the suite is copied and built (default ~/.cache/owt-burn-suite)")
    p.add_argument("--top", type=int, default=15, help="how many gathered ops to list (default 15)")
    p.epilog = "Arguments after -- go to cargo test (a filter: -- det::)."
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    configs = a.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"burn_suite.py: --configs {c}: expected one of {', '.join(CONFIGS)}")
    os.makedirs(a.work, exist_ok=True)
    prepare(os.path.abspath(a.burn), a.work)
    target = os.path.join(a.work, "target")
    failed = False
    for c in configs:
        counts, failures, fallbacks = run(a.work, target, c, extra)
        line = ", ".join(f"{b} {p} passed {f} failed {i} ignored" for b, (p, f, i) in counts.items())
        print(f"{c}: {line}")
        for name in failures:
            print(f"  FAILED {name}")
        failed |= bool(failures)
        if c == "2shard0":
            for b in BINARIES:
                ops = fallbacks.get(b, collections.Counter())
                print(f"  {b}: {sum(ops.values())} ops ran gathered; the most:")
                for op, n in ops.most_common(a.top):
                    print(f"    {n:>5} {op}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
