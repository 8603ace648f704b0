#!/usr/bin/env bash
# Paper section 5.4.2: the CPU overhead of the optimisations on scans. YCSB-SCAN on leaves
# filled to 100 %, small scans (length uniform in [1, 100]) and full-table scans, on the basic
# NVM buffer manager and on 3tier with the optimisations added one by one. ~256 MiB of data in
# 512 MiB of NVM behind 64 MiB of DRAM. Prints both tables and writes them to
# results/scan_overhead/table.md. ~1.5 minutes.
source "$(dirname "$0")/lib.sh"
records=$((256 * 1024))  # 16 records per 16 KiB leaf at fill factor 1: ~256 MiB
common=(--workload ycsb-scan --fill-factor 1 --records "$records" --dram 64MiB --nvm 512MiB
  --ssd 1GiB --nvm-read-ns 500 "$@")

results_dir scan_overhead
base=$out
for kind in small full; do
  out=$base/$kind
  mkdir -p "$out"
  scan=(--scan-length 100)
  [[ $kind == full ]] && scan=(--full-scan)
  echo "$kind scans"
  run 1_basic-nvm --arch basic-nvm "${scan[@]}" "${common[@]}"
  run 2_3tier-page-grained --arch 3tier --no-cl-grained --no-mini-pages --no-swizzling "${scan[@]}" "${common[@]}"
  run 3_plus-cl-grained --arch 3tier --no-mini-pages --no-swizzling "${scan[@]}" "${common[@]}"
  run 4_plus-mini-pages --arch 3tier --no-swizzling "${scan[@]}" "${common[@]}"
  run 5_plus-swizzling --arch 3tier "${scan[@]}" "${common[@]}"
done
{
  echo "# Scan overhead (paper section 5.4.2), throughput in scans/s"
  for kind in small full; do
    echo
    echo "## $kind scans"
    echo
    table "$base/$kind" --relative-to basic-nvm --markdown
  done
} >"$base/table.md"
cat "$base/table.md"
