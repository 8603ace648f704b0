#!/usr/bin/env bash
# Paper Figure 13: YCSB-RO throughput for DRAM from a few percent of NVM up to all of it.
# NVM 512 MiB, ~400 MiB of data, 500 ns NVM reads. Writes results/fig13_dram_size/*.json and
# results/plots/fig13_dram_size.png. ~2.5 minutes.
source "$(dirname "$0")/lib.sh"
drams=${DRAM_MIB:-"16 32 64 128 256 384 512"}
common=(--workload ycsb-ro --records "$(ycsb_records 400)" --nvm 512MiB --ssd 1GiB --nvm-read-ns 500 "$@")

results_dir fig13_dram_size
for dram in $drams; do
  echo "DRAM $dram MiB"
  for arch in nvm-direct basic-nvm 3tier; do
    run "${arch}_${dram}" --arch "$arch" --dram "${dram}MiB" "${common[@]}"
  done
done
plot line_plot.py "$out" fig13_dram_size --x config.dram_bytes --x-scale percent-of-nvm \
  --xlabel "DRAM size [% of NVM]" --title "YCSB-RO (paper Fig. 13): ~400 MiB data, NVM 512 MiB"
