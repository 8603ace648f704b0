#!/usr/bin/env bash
# The admission shortcut "admit straight to NVM while it has free slots" (not in the paper)
# on and off, on the Fig. 8 configuration: YCSB-RO, DRAM 64 MiB, NVM 256 MiB, 500 ns NVM reads,
# 3tier, data sizes beyond DRAM. Prints throughput and, over load + warm-up + measured phase,
# the SSD pages written and read and the NVM admissions, and writes results/admit_while_free/
# table.md. ~3 minutes.
source "$(dirname "$0")/lib.sh"
sizes=${SIZES_MIB:-"96 192 320 512"}
common=(--arch 3tier --workload ycsb-ro --dram 64MiB --nvm 256MiB --ssd 1GiB --nvm-read-ns 500 "$@")

results_dir admit_while_free
for size in $sizes; do
  echo "data ~${size}MiB"
  for setting in true false; do
    run "${size}_${setting}" --records "$(ycsb_records "$size")" --admit-while-free "$setting" \
      "${common[@]}"
  done
done
"$python" - "$out" <<'PY' | tee "$out/table.md"
import json, pathlib, sys
rows = []
def order(path):  # by size, the shortcut on first
    size, setting = path.stem.split("_")
    return int(size), setting != "true"
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json"), key=order):
    r = json.load(open(path))
    total = {k: r["load"]["counters"][k] + r["warmup"]["counters"][k] + r["counters"][k]
             for k in ("ssd_pages_written", "ssd_pages_read", "nvm_admissions")}
    rows.append((path.stem.split("_")[0], "on" if r["config"]["admit_while_free"] else "off",
                 r["throughput_ops_s"], r["counters"]["ssd_pages_read"] / max(r["ops"], 1), total))
print("| data [MiB] | admit while free | ops/s (measured) | SSD pages read per op (measured) "
      "| SSD pages written (all phases) | SSD pages read (all phases) | NVM admissions (all phases) |")
print("|---:|---|---:|---:|---:|---:|---:|")
for size, setting, ops, ssd_per_op, t in rows:
    print(f"| {size} | {setting} | {ops:,.0f} | {ssd_per_op:.3f} | {t['ssd_pages_written']:,} "
          f"| {t['ssd_pages_read']:,} | {t['nvm_admissions']:,} |")
PY
