#!/usr/bin/env bash
# The whole test suite: an optimised build with assertions on, then every ctest test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" "$root/build-test" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF
cd "$root/build-test"
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
