#!/usr/bin/env bash
# Paper Figure 15: YCSB-R/W throughput as the share of updates grows from 0 to 100 %.
# ~400 MiB of data, NVM 512 MiB, DRAM 100 MiB, 500 ns per NVM line read and written.
# Writes results/fig15_update_ratio/*.json and results/plots/fig15_update_ratio.png. ~2 minutes.
source "$(dirname "$0")/lib.sh"
ratios=${RATIOS:-"0 10 25 50 75 100"}
common=(--workload ycsb-rw --records "$(ycsb_records 400)" --dram 100MiB --nvm 512MiB --ssd 1GiB
  --nvm-read-ns 500 --nvm-write-ns 500 "$@")

results_dir fig15_update_ratio
for ratio in $ratios; do
  echo "updates $ratio %"
  for arch in nvm-direct basic-nvm 3tier; do
    run "${arch}_${ratio}" --arch "$arch" --update-ratio "$ratio" "${common[@]}"
  done
done
plot line_plot.py "$out" fig15_update_ratio --x config.update_ratio_percent \
  --xlabel "update transactions [%]" \
  --title "YCSB-R/W (paper Fig. 15): ~400 MiB data, DRAM 100 MiB, NVM 512 MiB"
