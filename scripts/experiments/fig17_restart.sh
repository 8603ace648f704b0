#!/usr/bin/env bash
# Paper Figure 17: restart. Each durable architecture runs YCSB-R/W, then crashes without
# flushing (the database is dropped, nothing written back), reopens and recovers, and runs
# lookups until it is back at its pre-restart throughput. Data exceeds DRAM and fits NVM.
# Caveat: the phase after the restart runs lookups only, so it is compared with the pre-crash
# mixed read/write rate and reaches it sooner than a read/write phase would.
# Writes results/fig17_restart/*.json and results/plots/fig17_restart.png.
source "$(dirname "$0")/lib.sh"
records=$(ycsb_records "${SIZE_MIB:-128}")
common=(--workload ycsb-rw --update-ratio 50 --records "$records" --dram 32MiB --nvm 256MiB
        --ssd 1GiB --nvm-read-ns 500 --llc "${LLC:-1MiB}" --restart "$@")

results_dir fig17_restart
echo "restart: YCSB-R/W 50 %, $records records, DRAM 32MiB, NVM 256MiB; crash, reopen, recover"
for arch in 3tier basic-nvm nvm-direct ssd-bm; do
  run "$arch" --arch "$arch" "${common[@]}"
done
"$python" "$root/plots/restart_plot.py" "$out" fig17_restart
