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

# scope: file, package, then the arguments of `cargo test` that pick its guarding targets.
scope() {
  case "$1" in
    shards) echo "backend/src/spec/placement.rs owt-hybrid --lib --tests" ;;
    ledger) echo "backend/src/ledger/counts.rs owt-hybrid --lib --tests" ;;
    op-costs) echo "meta/src/cost.rs owt-meta --lib --tests" ;;
    *) echo "unknown scope $1 (scopes: shards, ledger, op-costs)" >&2; exit 2 ;;
  esac
}

scopes=("$@")
[ ${#scopes[@]} -eq 0 ] && scopes=(shards ledger op-costs)
for name in "${scopes[@]}"; do
  read -r file package test_args <<<"$(scope "$name")"
  out="$HOME/.cache/owt-mutants/$name"
  mkdir -p "$out"
  args=()
  for a in $test_args; do args+=(--cargo-test-arg="$a"); done
  echo "== $name: $file, tests of $package ($test_args)"
  start=$(date +%s)
  cargo mutants --in-place --no-shuffle --file "$file" --package "$package" --test-package "$package" \
    "${args[@]}" --output "$out" ${MUTANTS_ARGS:-} || true
  echo "== $name took $(( $(date +%s) - start )) s; missed mutants (if any):"
  cat "$out/mutants.out/missed.txt" 2>/dev/null || true
done
