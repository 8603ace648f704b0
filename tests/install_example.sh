#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs examples/ against it
# with find_package(tristore): what an embedder does.
set -euo pipefail
build=${1:?build dir}
source=${2:?source dir}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source/examples" -B "$scratch/example" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example" -j 2 >/dev/null
cd "$scratch"
TMPDIR=$scratch "$scratch/example/basic_usage"
