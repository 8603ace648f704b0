#!/usr/bin/env bash
# Paper Figure 12: YCSB-RO throughput as the injected NVM latency per cache line grows
# (the paper: 165-1800 ns). ~400 MiB of data, NVM 512 MiB, DRAM 100 MiB (the paper's 1:5).
# Writes results/fig12_nvm_latency/*.json and results/plots/fig12_nvm_latency.png. ~2 minutes.
source "$(dirname "$0")/lib.sh"
latencies=${LATENCIES_NS:-"0 165 300 500 1000 1800"}
common=(--workload ycsb-ro --records "$(ycsb_records 400)" --dram 100MiB --nvm 512MiB --ssd 1GiB "$@")

results_dir fig12_nvm_latency
for ns in $latencies; do
  echo "NVM latency $ns ns"
  for arch in nvm-direct basic-nvm 3tier; do
    run "${arch}_${ns}" --arch "$arch" --nvm-read-ns "$ns" --nvm-write-ns "$ns" "${common[@]}"
  done
done
plot line_plot.py "$out" fig12_nvm_latency --x config.nvm_read_ns --xlabel "NVM latency [ns]" \
  --title "YCSB-RO (paper Fig. 12): ~400 MiB data, DRAM 100 MiB, NVM 512 MiB"
