#!/usr/bin/env bash
# The default experiment (the README's main command): YCSB-RO on all five architectures with a
# data set that exceeds DRAM and fits NVM, 500 ns injected per NVM line read (the paper's
# setting). Prints a table, writes results/default/*.json and results/plots/default.png.
# main-memory cannot hold data beyond DRAM: it runs with DRAM as large as NVM, as the ceiling.
# Extra arguments go to every tristore-bench run. About 1.5 minutes.
source "$(dirname "$0")/lib.sh"
run_seconds=${RUN_SECONDS:-10}
warmup_seconds=${WARMUP_SECONDS:-2}
dram=128MiB
nvm=1GiB
ssd=2GiB
records=$(ycsb_records 400)  # about 400 MiB of B-tree
common=(--workload ycsb-ro --records "$records" --nvm "$nvm" --ssd "$ssd" --nvm-read-ns 500 "$@")

results_dir default
echo "default experiment: YCSB-RO, $records records (~400MiB), DRAM $dram, NVM $nvm, SSD $ssd,"
echo "500 ns per NVM line read, ${run_seconds}s measured after ${warmup_seconds}s warm-up"
run 1_main-memory --arch main-memory --dram "$nvm" "${common[@]}"
run 2_nvm-direct --arch nvm-direct --dram "$dram" "${common[@]}"
run 3_basic-nvm --arch basic-nvm --dram "$dram" "${common[@]}"
run 4_ssd-bm --arch ssd-bm --dram "$dram" "${common[@]}"
run 5_3tier --arch 3tier --dram "$dram" "${common[@]}"
echo
table "$out"
echo
plot architecture_bars.py "$out" default --title "YCSB-RO, ~400 MiB data, DRAM $dram, NVM $nvm, 500 ns NVM reads"
