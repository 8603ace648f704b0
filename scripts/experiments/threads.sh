#!/usr/bin/env bash
# Scaling with worker threads (--threads 1, 2, 4 on the 2-core machine; 4 oversubscribes):
#   ycsb-dram  YCSB-RO, ~100 MiB of data in DRAM 512 MiB: reads run side by side
#   ycsb-nvm   YCSB-RO, ~400 MiB of data, DRAM 64 MiB, NVM 1 GiB: most reads load lines
#   ycsb-ssd   YCSB-RO, uniform keys, ~160 MiB of data, DRAM 32 MiB (3tier: NVM 48 MiB): most
#              reads read a page from SSD, side by side (tiers/page_loads.cpp)
#   ycsb-rw    YCSB with 50 % updates outside transactions (each durable), data in DRAM
#   tpcc       TPC-C, 2 warehouses in DRAM, a terminal per thread at home in its warehouse
#   tpcc-nvm   the same with DRAM 64 MiB, NVM 256 MiB: changes load pages and lines beside
#              each other (tiers/changer_misses.cpp)
#   ycsb-nvm-lat  ycsb-nvm with 500 ns NVM reads injected (the paper's setting): each thread
#              charges its own misses' latency beside the others
# No NVM latency injected elsewhere (pass --nvm-read-ns 500 to inject it everywhere; then the
# last panel is left out). Writes results/threads/*.json and results/plots/threads.png, and
# without arguments copies the figure to docs/figures/threads.png for the README. ~14 min.
source "$(dirname "$0")/lib.sh"
threads_list=${THREADS:-"1 2 4"}

results_dir threads
for threads in $threads_list; do
  echo "$threads threads"
  for arch in main-memory 3tier basic-nvm ssd-bm nvm-direct; do
    run "ycsb-dram_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload ycsb-ro \
      --records "$(ycsb_records 100)" --dram 512MiB --nvm 1GiB --ssd 1GiB "$@"
  done
  for arch in 3tier basic-nvm nvm-direct; do
    run "ycsb-nvm_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload ycsb-ro \
      --records "$(ycsb_records 400)" --dram 64MiB --nvm 1GiB --ssd 1GiB "$@"
  done
  for arch in 3tier ssd-bm; do
    run "ycsb-ssd_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload ycsb-ro \
      --distribution uniform --records "$(ycsb_records 160)" --dram 32MiB --nvm 48MiB --ssd 1GiB "$@"
  done
  for arch in main-memory 3tier nvm-direct; do
    run "ycsb-rw_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload ycsb-rw \
      --records "$(ycsb_records 100)" --dram 512MiB --nvm 1GiB --ssd 1GiB "$@"
  done
  for arch in main-memory 3tier; do
    run "tpcc_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload tpcc \
      --warehouses 2 --dram 1GiB --nvm 2GiB --ssd 2GiB "$@"
  done
  # (basic-nvm keeps every page in NVM: 256 MiB does not hold the tables' growth.)
  run "tpcc-nvm_3tier_t${threads}" --arch 3tier --threads "$threads" --workload tpcc \
    --warehouses 2 --dram 64MiB --nvm 256MiB --ssd 2GiB "$@"
  # nvm-direct keeps every page in NVM: room for the tables' growth.
  run "tpcc_nvm-direct_t${threads}" --arch nvm-direct --threads "$threads" --workload tpcc \
    --warehouses 2 --dram 1GiB --nvm 4GiB --ssd 2GiB "$@"
  [[ " $* " == *" --nvm-read-ns"* ]] && continue
  for arch in 3tier basic-nvm nvm-direct; do
    run "ycsb-nvm-lat_${arch}_t${threads}" --arch "$arch" --threads "$threads" --workload ycsb-ro \
      --records "$(ycsb_records 400)" --dram 64MiB --nvm 1GiB --ssd 1GiB --nvm-read-ns 500 "$@"
  done
done
plot scaling_plot.py "$out" threads
# The README embeds the figure of a run with the default settings (no arguments).
if [[ $# -eq 0 && -f $root/results/plots/threads.png ]]; then
  cp "$root/results/plots/threads.png" "$root/docs/figures/threads.png"
fi
