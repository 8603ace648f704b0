#!/usr/bin/env bash
# Paper Figure 16: writes per NVM cache line of the data area (pages, slot headers), sorted,
# after a write-only YCSB run (100 % updates of one field), counted over the measured phase;
# the log area's and double-write area's line writes are printed beside them. ~400 MiB of data, NVM 512 MiB,
# DRAM 100 MiB; OPS operations (default 500 000; the paper: 10 million transactions).
# Writes results/fig16_wear/*.json and results/plots/fig16_wear.png. ~1 minute.
source "$(dirname "$0")/lib.sh"
ops=${OPS:-500000}
common=(--workload ycsb-rw --update-ratio 100 --records "$(ycsb_records 400)" --dram 100MiB
  --nvm 512MiB --ssd 1GiB --nvm-read-ns 500 --nvm-write-ns 500 --wear --ops "$ops" "$@")

results_dir fig16_wear
for arch in nvm-direct basic-nvm 3tier; do
  [[ ${PLOT_ONLY:-0} == 1 ]] && break
  if "$bench" --arch "$arch" --warmup "$warmup_seconds" --llc "$llc" --json "$out/$arch.json" "${common[@]}" \
    >"$out/$arch.log" 2>&1; then
    echo "  $arch: $(tail -n 1 "$out/$arch.log")"
  else
    echo "  $arch: FAILED: $(tail -n 1 "$out/$arch.log")"
    rm -f "$out/$arch.json"
  fi
done
"$python" - "$out" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    result = json.load(open(path))
    wear, counters = result["wear"], result["counters"]
    print(f"  {path.stem:<11} data area: total writes {wear['total_writes']:>10,}  lines written "
          f"{wear['lines_written']:>9,}  most writes to one line {wear['max_writes']:>7,};  "
          f"beside it, log {counters['nvm_log_lines_written']:>10,}  double-write "
          f"{counters.get('nvm_double_write_lines_written', 0):>10,}")
PY
plot wear_plot.py "$out" fig16_wear
