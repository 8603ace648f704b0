#!/usr/bin/env bash
# Paper Figure 16: writes per NVM cache line, sorted, under YCSB-R/W with 100 % updates.
# Needs per-line wear counters in tristore-bench's JSON ("wear"); the engine does not expose
# them through Database yet, so this experiment is skipped with a note until it does.
source "$(dirname "$0")/lib.sh"
out=$root/results/tmp
mkdir -p "$out"
"$bench" --arch 3tier --workload ycsb-rw --update-ratio 100 --records 1000 --ops 100 --warmup 0 \
  --dram 16MiB --nvm 64MiB --ssd 64MiB --quiet --json "$out/wear_probe.json" "$@" >/dev/null
if ! "$python" -c "import json,sys; sys.exit(0 if 'wear' in json.load(open('$out/wear_probe.json')) else 1)"; then
  echo "note: skipped: tristore-bench reports no per-line NVM wear counters yet (paper Fig. 16)"
  exit 0
fi
echo "error: wear counters appeared in the JSON; extend fig16_wear.sh to plot them" >&2
exit 1
