#!/usr/bin/env bash
# Paper Figure 9: TPC-C throughput for a growing number of warehouses across the DRAM, NVM and
# SSD areas. One warehouse is ~120 MiB of B-tree after loading, and it grows as New-Orders
# insert. Scaled down: DRAM 256 MiB, NVM 768 MiB, SSD 2 GiB (the paper: 2, 10, 50 GB),
# WAREHOUSES (default 1-7). An architecture runs only where the loaded data fits its tier.
# Writes results/fig09_tpcc_data_size/*.json and results/plots/fig09_tpcc_data_size.png.
# ~4 minutes.
source "$(dirname "$0")/lib.sh"
warehouses=${WAREHOUSES:-"1 2 3 4 5 6 7"}
dram_mib=256
nvm_mib=768
warehouse_mib=120
common=(--workload tpcc --dram ${dram_mib}MiB --nvm ${nvm_mib}MiB --ssd 2GiB --nvm-read-ns 500 "$@")

results_dir fig09_tpcc_data_size
for w in $warehouses; do
  echo "$w warehouses (~$((w * warehouse_mib)) MiB)"
  # Headroom for the rows the run inserts: 3/4 of the tier.
  if ((w * warehouse_mib * 4 <= dram_mib * 3)); then
    run "main-memory_${w}" --arch main-memory --warehouses "$w" "${common[@]}"
  fi
  if ((w * warehouse_mib * 4 <= nvm_mib * 3)); then
    run "nvm-direct_${w}" --arch nvm-direct --warehouses "$w" "${common[@]}"
    run "basic-nvm_${w}" --arch basic-nvm --warehouses "$w" "${common[@]}"
  fi
  run "ssd-bm_${w}" --arch ssd-bm --warehouses "$w" "${common[@]}"
  run "3tier_${w}" --arch 3tier --warehouses "$w" "${common[@]}"
done
plot line_plot.py "$out" fig09_tpcc_data_size --x data_bytes --x-scale mib \
  --xlabel "data size after loading [MiB]" --ylabel "throughput [transactions/s]" \
  --capacity-lines --title "TPC-C (paper Fig. 9): DRAM ${dram_mib} MiB, NVM ${nvm_mib} MiB, 1-7 warehouses"
