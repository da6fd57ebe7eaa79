#!/usr/bin/env bash
# Mutation testing of owt's numeric core with cargo-mutants (version pinned below): each
# mutant is one small wrong change to one function (a `+` made `-`, a result replaced by a
# constant); the tests that guard that code must fail on it. One scope at a time, each a file
# with the test targets that guard it, so a run fits a 2-core machine; the book's testing
# chapter records each scope's count (caught over tried) and time.
#
#   scripts/mutants.sh [SCOPE...]     scopes below; none: all of them, in turn
#
# MUTANTS_ARGS adds arguments of cargo-mutants' own: `MUTANTS_ARGS=--iterate` tests only what
# the scope's last run did not catch (after adding tests for its survivors).
#
# Mutants are made in this checkout (--in-place: the build cache is reused, so each mutant is
# an incremental build); do not edit it while a run goes on. Results, with each mutant's log,
# under $HOME/.cache/owt-mutants/SCOPE/mutants.out.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=27.1.0
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}"
if ! cargo mutants --version 2>/dev/null | grep -qx "cargo-mutants $VERSION"; then
  cargo install --locked cargo-mutants --version "$VERSION" --quiet
fi

# A scope: its files (comma-separated), the package whose tests guard them, the arguments of
# `cargo test` that pick those targets, and (optional) a regex of mutants left out unbuilt:
# whole-function replacements by constructors the type does not have (`ConvNet::new()`,
# `Tensor::from_iter([..])`), cargo-mutants' guesses that cannot compile.
UNBUILDABLE='with \(?(ConvNet|StepOutcome|Tensor|FloatTensor|SgdStepped|GroupedStep|Entry|Param|BatchNorm|Conv2d|Linear|TensorData)::(new|from|from_iter)\('
scope() {
  case "$1" in
    shards) echo "backend/src/spec/placement.rs owt-hybrid --lib,--tests" ;;
    ledger) echo "backend/src/ledger/counts.rs owt-hybrid --lib,--tests" ;;
    op-costs) echo "meta/src/cost.rs owt-meta --lib,--tests" ;;
    cost-model) echo "backend/src/analysis/cost_model.rs owt-hybrid --lib,--tests" ;;
    batch-norm) echo "models/src/batch_norm.rs owt-models --lib,--tests $UNBUILDABLE" ;;
    input) echo "models/src/input_transform.rs owt-models --lib,--tests $UNBUILDABLE" ;;
    import) echo "models/src/torchvision.rs owt-models --lib,--tests $UNBUILDABLE" ;;
    step) echo "src/train/step.rs owt --test,parallel_training,--test,training $UNBUILDABLE" ;;
    optimizer) echo "src/train/run_sgd.rs,src/train/momentum.rs,src/train/schedule.rs,src/train/precision.rs owt --lib,--test,parallel_training,--test,training $UNBUILDABLE" ;;
    *) echo "unknown scope $1 (scopes: $ALL)" >&2; exit 2 ;;
  esac
}
ALL="shards ledger op-costs cost-model batch-norm input import step optimizer"

scopes=("$@")
[ ${#scopes[@]} -eq 0 ] && read -r -a scopes <<<"$ALL"
for name in "${scopes[@]}"; do
  read -r files package test_args exclude <<<"$(scope "$name")"
  out="$HOME/.cache/owt-mutants/$name"
  mkdir -p "$out"
  args=()
  for f in ${files//,/ }; do args+=(--file "$f"); done
  for a in ${test_args//,/ }; do args+=(--cargo-test-arg="$a"); done
  [ -n "$exclude" ] && args+=(--exclude-re "$exclude")
  echo "== $name: $files, tests of $package (${test_args//,/ })"
  start=$(date +%s)
  cargo mutants --in-place --no-shuffle --package "$package" --test-package "$package" \
    "${args[@]}" --output "$out" ${MUTANTS_ARGS:-} || true
  echo "== $name took $(( $(date +%s) - start )) s; missed mutants (if any):"
  cat "$out/mutants.out/missed.txt" 2>/dev/null || true
done
