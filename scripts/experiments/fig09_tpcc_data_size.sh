#!/usr/bin/env bash
# Paper Figure 9: TPC-C throughput for a growing number of warehouses across the DRAM, NVM and
# SSD areas. Scaled down: DRAM 64 MiB, NVM 256 MiB, SSD 2 GiB; WAREHOUSES (default 1-4).
# Writes results/fig09_tpcc_data_size/*.json and results/plots/fig09_tpcc_data_size.png.
source "$(dirname "$0")/lib.sh"
warehouses=${WAREHOUSES:-"1 2 3 4"}
common=(--workload tpcc --dram 64MiB --nvm 256MiB --ssd 2GiB --nvm-read-ns 500 "$@")

results_dir fig09_tpcc_data_size
for w in $warehouses; do
  echo "$w warehouses"
  for arch in main-memory nvm-direct basic-nvm ssd-bm 3tier; do
    run "${arch}_${w}" --arch "$arch" --warehouses "$w" "${common[@]}"
  done
done
plot line_plot.py "$out" fig09_tpcc_data_size --x data_bytes --x-scale mib \
  --xlabel "data size [MiB]" --ylabel "throughput [transactions/s]" --capacity-lines \
  --title "TPC-C (paper Fig. 9): DRAM 64 MiB, NVM 256 MiB"
