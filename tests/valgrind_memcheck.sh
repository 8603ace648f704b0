#!/usr/bin/env bash
# valgrind_memcheck.sh BUILD_DIR SOURCE_DIR: the buffer manager under valgrind memcheck with
# the debug-mode poisoning on (ctest -L valgrind runs it).
#
# Builds BUILD_DIR with -DTRISTORE_VALGRIND=ON (memcheck client requests mark every
# non-resident cache line of a frame or mini page no-access; no -march=native, whose AVX-512
# valgrind 3.19 cannot run; -O1 -g, assertions on), then
#  1. runs buffer-manager tests under memcheck, which must report no error: no code path reads
#     a line it did not make resident, and nothing reads uninitialised or freed memory;
#  2. runs tiers_valgrind_poison_test under memcheck: its deliberate reads of non-resident
#     lines must each be reported.
# By default step 1 is a short subset (a few minutes, for every CI run). TRISTORE_VALGRIND_FULL=1
# runs the whole of tiers_buffer_manager_test, btree_buffer_manager_test,
# tiers_write_back_test and tiers_nvm_eviction_test (about 3 minutes on 2 cores after the build).
# TRISTORE_VALGRIND_POISON=0 builds without the client requests, to see step 2 fail.
set -euo pipefail
build=${1:?usage: valgrind_memcheck.sh BUILD_DIR SOURCE_DIR}
source=${2:?usage: valgrind_memcheck.sh BUILD_DIR SOURCE_DIR}
jobs=${TRISTORE_VALGRIND_JOBS:-2}

if [[ ${TRISTORE_VALGRIND_POISON:-1} == 0 ]]; then
  mode=(-DTRISTORE_VALGRIND=OFF -DTRISTORE_NATIVE=OFF)
else
  mode=(-DTRISTORE_VALGRIND=ON)
fi
if [[ ${TRISTORE_VALGRIND_FULL:-0} == 1 ]]; then
  clean_tests=(tiers_buffer_manager_test btree_buffer_manager_test tiers_write_back_test
               tiers_nvm_eviction_test)
  filter='*'
else
  clean_tests=(tiers_buffer_manager_test)
  # Mini pages (load, promote, write back), swizzling and eviction, admission, reopen.
  filter='*MiniPage*:*Swizzled*:*AdmissionSet*:*ReopenAfterFlush*:*WithoutMiniPages*'
fi

cmake -S "$source" -B "$build" "${mode[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${clean_tests[@]}" tiers_valgrind_poison_test

memcheck=(valgrind --tool=memcheck -q --error-exitcode=1)
for test in "${clean_tests[@]}"; do
  echo "== $test under memcheck (must be clean)"
  "${memcheck[@]}" "$build/tests/$test" --gtest_color=no --gtest_brief=1 "--gtest_filter=$filter"
done

echo "== tiers_valgrind_poison_test under memcheck (each bad read must be reported)"
# No --error-exitcode: these errors are wanted; the test counts them itself.
output=$(valgrind --tool=memcheck -q "$build/tests/tiers_valgrind_poison_test" --gtest_color=no 2>&1) ||
  { echo "$output"; exit 1; }
echo "$output" | grep -E "Invalid read|PASSED|FAILED|SKIPPED" || true
if grep -q "SKIPPED" <<<"$output"; then
  echo "error: the bad-access test was skipped (not under valgrind?)" >&2
  exit 1
fi
