#!/usr/bin/env bash
# Paper Figure 10: the three optimisations switched on one by one, relative to the basic NVM
# buffer manager, with the NVM cache lines each run reads. YCSB-RO, ~400 MiB of data in
# 512 MiB of NVM behind 64 MiB of DRAM (the paper: 10 GB, 10 GB, 2 GB), 500 ns NVM reads.
# Writes results/fig10_drilldown/*.json and results/plots/fig10_drilldown.png. ~1 minute.
source "$(dirname "$0")/lib.sh"
common=(--workload ycsb-ro --records "$(ycsb_records 400)" --dram 64MiB --nvm 512MiB --ssd 1GiB
  --nvm-read-ns 500 "$@")

results_dir fig10_drilldown
run 1_basic-nvm --arch basic-nvm "${common[@]}"
run 2_3tier-page-grained --arch 3tier --no-cl-grained --no-mini-pages --no-swizzling "${common[@]}"
run 3_plus-cl-grained --arch 3tier --no-mini-pages --no-swizzling "${common[@]}"
run 4_plus-mini-pages --arch 3tier --no-swizzling "${common[@]}"
run 5_plus-swizzling --arch 3tier "${common[@]}"
run 6_nvm-direct --arch nvm-direct "${common[@]}"
echo
table "$out" --relative-to basic-nvm
plot architecture_bars.py "$out" fig10_drilldown --relative-to basic-nvm \
  --title "Drill-down (paper Fig. 10): YCSB-RO, ~400 MiB data, DRAM 64 MiB, NVM 512 MiB"
