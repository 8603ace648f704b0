#!/usr/bin/env bash
# Paper Figure 17: throughput over time across a crash and restart. For each durable
# architecture tristore-bench --restart runs the workload in a worker process, kills it with
# SIGKILL (kill -9) after the measured phase, reopens the files (page-table rebuild, log
# analysis, redo; undo as the tables open) and runs the same workload again, throughput
# sampled every 100 ms on both sides.
#  1. YCSB-RO, uniform lookups (the paper's workload): ~40 MiB of data, DRAM 32 MiB, NVM
#     256 MiB, 500 ns NVM reads. Lookups leave nothing to redo; what differs is the warm-up:
#     3tier and basic-nvm refill DRAM from NVM, ssd-bm from SSD, nvm-direct has nothing to refill.
#  2. TPC-C, 1 warehouse (TPCC=0 skips it): the crash cuts transactions off, so restart redoes
#     and undoes.
# Writes results/fig17_restart/*.json and results/plots/fig17_restart.png (~2.5 minutes).
source "$(dirname "$0")/lib.sh"
records=$(ycsb_records "${SIZE_MIB:-40}")
before=${BEFORE_SECONDS:-3}
after=${AFTER_SECONDS:-5}
restart=(--restart --seconds "$before" --restart-seconds "$after" --sample-ms 100 --warmup 2)
ycsb=(--workload ycsb-ro --distribution uniform --records "$records" --dram 32MiB --nvm 256MiB
      --ssd 1GiB --nvm-read-ns 500 "${restart[@]}" "$@")
tpcc=(--workload tpcc --warehouses 1 --dram 32MiB --nvm 512MiB --ssd 1GiB --nvm-read-ns 500
      "${restart[@]}" "$@")

results_dir fig17_restart
echo "restart: YCSB-RO uniform, $records records (~${SIZE_MIB:-40}MiB), DRAM 32MiB, NVM 256MiB;"
echo "  ${before} s, kill -9, reopen, ${after} s of the same workload"
for arch in 3tier basic-nvm nvm-direct ssd-bm; do
  run "ycsb_$arch" --arch "$arch" "${ycsb[@]}"
done
if [[ ${TPCC:-1} != 0 ]]; then
  echo "restart: TPC-C, 1 warehouse, DRAM 32MiB, NVM 512MiB"
  for arch in 3tier basic-nvm nvm-direct ssd-bm; do
    run "tpcc_$arch" --arch "$arch" "${tpcc[@]}"
  done
fi
plot restart_plot.py "$out" fig17_restart
