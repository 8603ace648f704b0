#!/usr/bin/env bash
# Paper Figure 8: YCSB-RO throughput for growing data sizes across the DRAM, NVM and SSD areas.
# Scaled down: DRAM 64 MiB, NVM 256 MiB, SSD 1 GiB (the paper: 2, 10, 50 GB); data 32-512 MiB.
# An architecture runs only where its data fits (main-memory: DRAM; nvm-direct and basic-nvm:
# NVM). Writes results/fig08_data_size/*.json and results/plots/fig08_data_size.png. ~4 minutes.
source "$(dirname "$0")/lib.sh"
dram_mib=64
nvm_mib=256
sizes=${SIZES_MIB:-"32 48 96 128 192 224 320 384 512"}
common=(--workload ycsb-ro --dram ${dram_mib}MiB --nvm ${nvm_mib}MiB --ssd 1GiB --nvm-read-ns 500 "$@")

results_dir fig08_data_size
for size in $sizes; do
  records=$(ycsb_records "$size")
  echo "data ~${size}MiB ($records records)"
  # A tree needs some headroom beyond its pages (inner nodes, the log, metadata): 7/8.
  if ((size * 8 <= dram_mib * 7)); then
    run "main-memory_${size}" --arch main-memory --records "$records" "${common[@]}"
  fi
  if ((size * 8 <= nvm_mib * 7)); then
    run "nvm-direct_${size}" --arch nvm-direct --records "$records" "${common[@]}"
    run "basic-nvm_${size}" --arch basic-nvm --records "$records" "${common[@]}"
  fi
  run "ssd-bm_${size}" --arch ssd-bm --records "$records" "${common[@]}"
  run "3tier_${size}" --arch 3tier --records "$records" "${common[@]}"
done
plot line_plot.py "$out" fig08_data_size --x data_bytes --x-scale mib --xlabel "data size [MiB]" \
  --capacity-lines --log-y --title "YCSB-RO (paper Fig. 8): DRAM ${dram_mib} MiB, NVM ${nvm_mib} MiB"
