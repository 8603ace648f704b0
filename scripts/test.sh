#!/usr/bin/env bash
# The whole test suite: an optimised build with assertions on (-O3, as the Release build of the
# main command, so optimiser-only warnings and miscompilations show up here), then every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" "$root/build-test" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O3 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF -DTRISTORE_WERROR=ON

# Debug mode (AddressSanitizer poisoning of non-resident cache lines): the death tests that
# prove a read of a line never made resident is caught, and the B-tree over the buffer
# manager, which must never make such a read.
poison_tests=(tiers_poison_test btree_buffer_manager_test tiers_buffer_manager_test)
cmake -S "$root" -B "$root/build-poison" -DTRISTORE_POISON=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF -DTRISTORE_WERROR=ON \
  >/dev/null
cmake --build "$root/build-poison" -j "$(nproc)" --target "${poison_tests[@]}"
(cd "$root/build-poison" && ctest --output-on-failure -j "$(nproc)" -R "^($(IFS='|'; echo "${poison_tests[*]}"))\$")

# ThreadSanitizer: the tests that run several threads against one log (many appenders, group
# commit, checkpoints beside appends), against one database (every architecture, more
# threads than cores), side by side through ResidentReads and beside changes through
# ResidentWrites (optimistic leaf reads, pages loaded beside changes and checkpoints beside
# them) and nvm-direct's through NvmDirectWrites, main-memory's leaves split beside changes
# (btree_splits_beside_test) and removes look at a leaf's neighbours beside them
# (btree_removes_beside_test), splits taking log room side by side (engine_split_room_test),
# thread slots given back and taken again, threads
# cut by the NVM crash simulator, threads charging the simulated LLC, TPC-C terminals on
# threads of their own, nvm-direct pages checked at their first fix beside changes, readers
# reading pages from SSD (or copying them from a page-grained
# NVM tier) side by side, and SSD writes behind the
# engine on writer threads, page table lookups beside its writer, and scans and reads beside
# transactions that remove, change and abort rows (and scans whose visit drops a transaction;
# a change outside transactions failing midway beside a reader of its row),
# and the operation latch's changers in slots of their own beside readers and the exclusive
# holder (engine_operation_latch_test), and the live undo count's credits beside each other
# (engine_live_undo_count_test) must show no data race.
tsan_tests=(engine_log_manager_test engine_threads_test tiers_resident_reads_test
  tiers_resident_writes_test tiers_nvm_direct_writes_test engine_threads_crash_simulator_test
  emulation_nvm_device_test workloads_tpcc_transactions_test tiers_page_loads_test
  ssd_write_behind_queue_test tiers_changer_misses_test common_shared_spin_latch_test
  btree_splits_beside_test btree_removes_beside_test common_thread_slot_test
  engine_split_room_test tiers_building_blocks_test engine_isolation_test
  engine_operation_latch_test engine_live_undo_count_test)
tsan_filters=('*Concurrent*:*OutOfOrder*' '*' '*Threads*:*LetGo*:*Retired*' '*Threads*' '*Threads*'
  '*' '*Threads*' '*Threads*' '*' '*' '*' '*' '*' '*Threads*' '*' '*Threads*'
  '*Racing*' '*ScansBeside*:*Intermediate*:*AScan*:*Dropped*:*FailsMidway*' '*' '*Threads*')
cmake -S "$root" -B "$root/build-tsan" -DTRISTORE_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DTRISTORE_BUILD_BENCHMARKS=OFF -DTRISTORE_WERROR=ON \
  >/dev/null
cmake --build "$root/build-tsan" -j "$(nproc)" --target "${tsan_tests[@]}"
for i in "${!tsan_tests[@]}"; do
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    "$root/build-tsan/tests/${tsan_tests[$i]}" --gtest_filter="${tsan_filters[$i]}" --gtest_color=no
done

cd "$root/build-test"
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
