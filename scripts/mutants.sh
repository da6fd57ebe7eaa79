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

# A scope sets FILES (comma-separated), PACKAGE (whose tests guard them), TESTS (the arguments
# of `cargo test` that pick those targets, comma-separated; after a `--`, test-name filters),
# and optionally FEATURES (the package's, for tests that need them), EXAMINE (a regex: only
# the mutants it matches) and EXCLUDE (a regex of mutants left out unbuilt: whole-function
# replacements by constructors the type does not have, `ConvNet::new()`,
# `Tensor::from_iter([..])`, cargo-mutants' guesses that cannot compile). The target choice
# (before the `--`) goes to the build as well as the tests, so a mutant builds only the test
# targets its scope runs.
UNBUILDABLE='with \(?(ConvNet|StepOutcome|Tensor|FloatTensor|SgdStepped|GroupedStep|Entry|Param|BatchNorm|Conv2d|Linear|TensorData)::(new|from|from_iter)\('
ALL="shards ledger op-costs cost-model batch-norm input import accumulation schedule precision step sgd momentum"
scope() {
  EXAMINE="" EXCLUDE="" FEATURES=""
  case "$1" in
    shards) FILES=backend/src/spec/placement.rs PACKAGE=owt-hybrid TESTS=--lib,--tests ;;
    ledger) FILES=backend/src/ledger/counts.rs PACKAGE=owt-hybrid TESTS=--lib,--tests ;;
    op-costs) FILES=meta/src/cost.rs PACKAGE=owt-meta TESTS=--lib,--tests ;;
    cost-model) FILES=backend/src/analysis/cost_model.rs PACKAGE=owt-hybrid TESTS=--lib ;;
    batch-norm) FILES=models/src/batch_norm.rs PACKAGE=owt-models TESTS=--lib,--tests EXCLUDE=$UNBUILDABLE ;;
    input) FILES=models/src/input_transform.rs PACKAGE=owt-models TESTS=--lib,--tests EXCLUDE=$UNBUILDABLE ;;
    import) FILES=models/src/torchvision.rs PACKAGE=owt-models TESTS=--lib,--tests EXCLUDE=$UNBUILDABLE ;;
    # The step's loss weighting: accumulated micro-batches and per-chunk FC updates, against
    # the tests that compare them with one batch and with the hand-written reference, and
    # those of what a micro-batch also does (the overlapped sync, the loss scale). cargo-mutants
    # 27.1.0 examines `in_precision`'s two field deletions whatever the regexes say: the
    # mixed-precision tests guard them.
    accumulation)
      FILES=src/train/step.rs PACKAGE=owt EXAMINE='::micro_batch|in per_chunk_step$' EXCLUDE=$UNBUILDABLE
      TESTS=--test,parallel_training,--test,owt,--,accumulation::,per_chunk_updates_equal,overlap::,mixed_precision:: ;;
    # The optimizer's rules: the learning rate of each epoch and its scaling with the batch,
    # the loss scale and the precisions, against their unit tests and PyTorch's figures (the
    # refusal of a precision a backend lacks needs wgpu's).
    schedule)
      FILES=src/train/schedule.rs PACKAGE=owt EXCLUDE=$UNBUILDABLE
      TESTS=--lib,--test,parallel_training,--,schedule::,optimizer_vs_torch:: ;;
    precision)
      FILES=src/train/precision.rs PACKAGE=owt FEATURES=wgpu EXCLUDE=$UNBUILDABLE
      TESTS=--lib,--test,parallel_training,--,precision::,optimizer_vs_torch:: ;;
    # The rest of the step: the FC update's names, the correct and top-k counts, a step's
    # outcome read back, the chunks of a per-chunk step, the gradient norms. cargo-mutants
    # examines `in_precision`'s two field deletions here too, whatever the regexes say: the
    # accumulation scope's mixed-precision tests catch them.
    step)
      FILES=src/train/step.rs PACKAGE=owt EXCLUDE="$UNBUILDABLE|::micro_batch|in per_chunk_step\$"
      TESTS=--lib,--test,parallel_training,--,step::,per_chunk,gradient_norms,accumulation:: ;;
    # The run's SGD (grouped on CubeCL, Burn's per parameter elsewhere) against Burn's SGD on
    # wgpu (lavapipe) and PyTorch's figures; its momentum in a checkpoint, against resumed runs
    # (whole on one device, sliced over a 2-D mesh's nodes).
    sgd)
      FILES=src/train/run_sgd.rs PACKAGE=owt FEATURES=wgpu EXCLUDE=$UNBUILDABLE
      TESTS=--test,owt,--test,parallel_training,--,grouped_sgd::,optimizer_vs_torch:: ;;
    momentum)
      FILES=src/train/momentum.rs PACKAGE=owt EXCLUDE=$UNBUILDABLE
      TESTS=--test,owt,--test,parallel_training,--test,training,--,checkpoints_resume,resume_continues_exactly,a_two_dimensional_,a_plan_naming_one_layer ;;
    *) echo "unknown scope $1 (scopes: $ALL)" >&2; exit 2 ;;
  esac
}

scopes=("$@")
[ ${#scopes[@]} -eq 0 ] && read -r -a scopes <<<"$ALL"
for name in "${scopes[@]}"; do
  scope "$name"
  out="$HOME/.cache/owt-mutants/$name"
  mkdir -p "$out"
  args=()
  for f in ${FILES//,/ }; do args+=(--file "$f"); done
  filters=""
  for a in ${TESTS//,/ }; do
    [ "$a" = -- ] && filters=1
    if [ -n "$filters" ]; then args+=(--cargo-test-arg="$a"); else args+=(--cargo-arg="$a"); fi
  done
  [ -n "$FEATURES" ] && args+=(--features "$FEATURES")
  [ -n "$EXAMINE" ] && args+=(--re "$EXAMINE")
  [ -n "$EXCLUDE" ] && args+=(--exclude-re "$EXCLUDE")
  echo "== $name: $FILES, tests of $PACKAGE (${TESTS//,/ })"
  start=$(date +%s)
  cargo mutants --in-place --no-shuffle --package "$PACKAGE" --test-package "$PACKAGE" \
    "${args[@]}" --output "$out" ${MUTANTS_ARGS:-} || true
  echo "== $name took $(( $(date +%s) - start )) s; missed mutants (if any):"
  cat "$out/mutants.out/missed.txt" 2>/dev/null || true
done
