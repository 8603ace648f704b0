#!/usr/bin/env bash
# Regenerates the nine figures of the paper's evaluation that the README embeds, and copies them
# into docs/figures/: Fig. 8, 9, 10, 12, 13, 15, 16, 17 (PNG) and the scan-overhead table
# (section 5.4.2, Markdown). Takes about 15-20 minutes on the 2-vCPU development machine with
# the default RUN_SECONDS=2 and WARMUP_SECONDS=1, loading the data sets dominating (measured
# 2026-11-23: 843 s at load average 7-8, 1140 s at 1-10 with builds beside it). Each
# experiment's duration and the load average before it go to results/all_figures/timings.txt,
# for the figure captions.
#
# Environment as for every experiment script (lib.sh): RUN_SECONDS, WARMUP_SECONDS, LLC, ...;
# PLOT_ONLY=1 redraws the figures from the results already in results/. Arguments go to every
# tristore-bench run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export RUN_SECONDS=${RUN_SECONDS:-2} WARMUP_SECONDS=${WARMUP_SECONDS:-1}
figures=$root/docs/figures
log=$root/results/all_figures/timings.txt
mkdir -p "$figures" "$(dirname "$log")"
[[ ${PLOT_ONLY:-0} == 1 ]] || : >"$log"

started=$SECONDS
for experiment in fig08_data_size fig09_tpcc_data_size fig10_drilldown scan_overhead \
  fig12_nvm_latency fig13_dram_size fig15_update_ratio fig16_wear fig17_restart; do
  echo "== $experiment"
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  begin=$SECONDS
  if [[ $experiment == scan_overhead ]]; then
    # A full-table scan takes about a second here: a 2 s run would count one or two.
    RUN_SECONDS=${SCAN_RUN_SECONDS:-6} bash "$here/$experiment.sh" "$@"
  else
    bash "$here/$experiment.sh" "$@"
  fi
  if [[ $experiment == scan_overhead ]]; then
    cp "$root/results/scan_overhead/table.md" "$figures/scan_overhead.md"
  elif [[ -f $root/results/plots/$experiment.png ]]; then
    cp "$root/results/plots/$experiment.png" "$figures/$experiment.png"
  fi
  [[ ${PLOT_ONLY:-0} == 1 ]] ||
    echo "$experiment: $((SECONDS - begin)) s, load average before: $load" >>"$log"
done
echo "all figures: $((SECONDS - started)) s; timings in $log"
