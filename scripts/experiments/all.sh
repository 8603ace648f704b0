#!/usr/bin/env bash
# Every experiment, one after another (about 25 minutes on 2 cores). Arguments go to each run.
set -euo pipefail
here=$(dirname "$0")
for experiment in default fig08_data_size fig09_tpcc_data_size fig10_drilldown scan_overhead \
  fig12_nvm_latency fig13_dram_size fig15_update_ratio fig16_wear fig17_restart threads; do
  echo "== $experiment"
  bash "$here/$experiment.sh" "$@"
done
