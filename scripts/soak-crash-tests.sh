#!/usr/bin/env bash
# soak-crash-tests.sh [SEEDS] [BUILD_DIR] [JOBS]: runs every crash test (ctest label "crash")
# once per fresh random seed, SEEDS seeds each (default 300), JOBS at a time (default: cores;
# the crash tests sleep while their children run, so more jobs than cores is fine). Builds the
# tests first (scripts/test.sh's build, build-test/, unless BUILD_DIR is given and built).
# Every failing run's output is kept under BUILD_DIR/soak/ with its seed in the file name;
# replay one with TRISTORE_SEED=<seed> BUILD_DIR/tests/<test>.
# About 25 s of CPU per seed for all of them: 300 seeds take about an hour on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${1:-300}
build=${2:-$root/build-test}
jobs=${3:-$(nproc)}
if [[ ! -d $build/tests ]]; then
  bash "$root/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O3 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF
fi
mapfile -t tests < <(cd "$build" && ctest -L crash -N | sed -n 's/^ *Test *#[0-9]*: *//p')
if ((${#tests[@]} == 0)); then
  echo "error: no crash tests found in $build" >&2
  exit 1
fi
out="$build/soak"
rm -rf "$out"
mkdir -p "$out"
echo "soak: ${#tests[@]} crash tests x $seeds fresh seeds, $jobs at a time; failures in $out"

run_one() {  # test seed
  local log="$2/$1-$3.log"
  if TRISTORE_SEED=$3 "$4/tests/$1" >"$log" 2>&1; then
    rm -f "$log"
    echo pass
  else
    echo "FAILED: TRISTORE_SEED=$3 $4/tests/$1" >&2
    echo fail
  fi
}
export -f run_one

for ((i = 0; i < seeds; ++i)); do
  for test in "${tests[@]}"; do
    echo "$test $(od -An -N8 -tu8 /dev/urandom | tr -d ' ')"
  done
done | xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "'"$out"'" "$1" "'"$build"'"' >"$out/results"

passed=$(grep -c '^pass$' "$out/results" || true)
failed=$(grep -c '^fail$' "$out/results" || true)
echo "soak: $passed passed, $failed failed"
((failed == 0))
