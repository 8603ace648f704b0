# Shared by the experiment scripts (sourced, not run). Each experiment writes one JSON per
# tristore-bench run into results/<experiment>/ (and its progress log beside it), then plots.
#
# Environment: TRISTORE_BENCH (the binary; default build/workloads/tristore-bench),
# RUN_SECONDS / WARMUP_SECONDS (measured phase and warm-up per run), LLC (simulated last-level
# cache), PYTHON, PLOT_ONLY=1 (keep results/<experiment>/ and only draw the figure again).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench=${TRISTORE_BENCH:-$root/build/workloads/tristore-bench}
run_seconds=${RUN_SECONDS:-3}
warmup_seconds=${WARMUP_SECONDS:-1}
# The simulated last-level cache in front of NVM, scaled with the data as DRAM is: the paper has
# 20 MB of L3 for 2 GB of DRAM and 10 GB of data; these scripts use ~1/20 of those sizes.
llc=${LLC:-1MiB}
# Debian's python3 carries python3-matplotlib; another python3 first on PATH may not.
python=${PYTHON:-$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3)}

if [[ ! -x $bench ]]; then
  echo "error: $bench is not built (run: bash scripts/build.sh build)" >&2
  exit 1
fi

# results_dir NAME: a fresh results/NAME directory, its path in $out (PLOT_ONLY: kept as is).
results_dir() {
  out=$root/results/$1
  [[ ${PLOT_ONLY:-0} == 1 ]] && return
  rm -rf "$out"
  mkdir -p "$out"
}

# ycsb_records MIB: YCSB records whose B-tree is about MIB MiB at fill factor 0.66 (10 records
# of 1004 bytes per 16 KiB leaf).
ycsb_records() { echo $(($1 * 640)); }

# run FILE ARGS...: one tristore-bench run into $out/FILE.json, progress in $out/FILE.log.
# A failed run is reported and skipped, so one architecture's failure does not end the sweep.
run() {
  local name=$1
  shift
  [[ ${PLOT_ONLY:-0} == 1 ]] && return
  if "$bench" --seconds "$run_seconds" --warmup "$warmup_seconds" --llc "$llc" \
    --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1; then
    echo "  $name: $(tail -n 1 "$out/$name.log")"
  else
    echo "  $name: FAILED: $(tail -n 1 "$out/$name.log")"
    rm -f "$out/$name.json"
  fi
}

# plot SCRIPT ARGS...: runs plots/SCRIPT with Debian's python; a missing matplotlib is a note.
plot() {
  local script=$1
  shift
  if "$python" -c "import matplotlib" 2>/dev/null; then
    "$python" "$root/plots/$script" "$@"
  else
    echo "note: no matplotlib for $python (apt-get install python3-matplotlib); skipping the plot"
  fi
}

# table ARGS...: the text table of a results directory (plain python, no matplotlib).
table() { "$python" "$root/plots/results_table.py" "$@"; }
