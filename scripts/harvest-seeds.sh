#!/usr/bin/env bash
# Turns the caches.tar.gz a GPU run left (scripts/gpu-run.sh, kept under benches/gpu/<date>/)
# into kernel-cache seeds: the autotune results of each device class in it are copied to
# kernel-cache/<class>/autotune/, and cuDNN's algorithm choices (cudnn-algorithms.json) beside
# them, where build.rs builds them into the next owt (see kernel-cache/README.md). Compiled
# kernels are not seeds (they depend on the driver).
# Refuses a class whose autotune results exceed 2 MiB (they are built into every binary; the
# lavapipe seeds are about 100 KB) and a class that already has seeds, unless --replace.
#
# Usage: scripts/harvest-seeds.sh CACHES.tar.gz [--replace]
set -euo pipefail
tarball=${1:?usage: scripts/harvest-seeds.sh CACHES.tar.gz [--replace]}
replace=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
limit=$(( 2 * 1024 * 1024 ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
found=0
# The cache is <owt version>/<class>/autotune/...: one class per directory holding autotune/.
while IFS= read -r dir; do
    class=$(basename "$(dirname "$dir")")
    size=$(du -sb "$dir" | cut -f1)
    target="$root/kernel-cache/$class/autotune"
    if [ "$size" -gt "$limit" ]; then
        echo "harvest-seeds: $class: $size bytes of autotune results, over the 2 MiB a seed may take; not copied" >&2
        exit 1
    fi
    if [ -e "$target" ] && [ "$replace" != --replace ]; then
        echo "harvest-seeds: $target exists; pass --replace to take the new results instead" >&2
        exit 1
    fi
    rm -rf "$target"
    mkdir -p "$(dirname "$target")"
    cp -r "$dir" "$target"
    echo "harvest-seeds: $class: $(find "$target" -type f | wc -l) files, $size bytes -> kernel-cache/$class/autotune"
    # cuDNN's algorithm choices (owt_hybrid::cudnn::algorithm_cache), where the run had cuDNN.
    if [ -f "$(dirname "$dir")/cudnn-algorithms.json" ]; then
        cp "$(dirname "$dir")/cudnn-algorithms.json" "$root/kernel-cache/$class/cudnn-algorithms.json"
        echo "harvest-seeds: $class: cudnn-algorithms.json -> kernel-cache/$class/"
    fi
    found=$(( found + 1 ))
done < <(find "$work" -mindepth 3 -maxdepth 3 -type d -name autotune | sort)
if [ "$found" = 0 ]; then
    echo "harvest-seeds: no <version>/<class>/autotune directory in $tarball" >&2
    exit 1
fi
