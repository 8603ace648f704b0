#pragma once
// tristore-bench --restart: paper Figure 17, throughput over time across a crash and restart.
//
// 1. A worker process (fork) opens a new database, loads, warms up and runs the workload on
//    --threads threads, sending its throughput every --sample-ms.
// 2. After --seconds of samples the parent kills it with SIGKILL, mid-operation (on every
//    thread): no flush, no close; NVM and SSD keep what had reached them (a process crash; on
//    tmpfs-backed NVM not a power failure).
// 3. The parent reopens the files (page-table rebuild, log analysis, redo), opens the tables
//    (the losers' undo), runs the same workload on as many threads for --restart-seconds,
//    sampled the same way, and then checks the data (TPC-C's consistency conditions, every
//    YCSB record found): Error if recovery lost or broke anything.
// The JSON holds the recovery phases, both throughput series on one time axis (0 = the kill),
// the time from the reopen until an interval reaches 90 % of the pre-crash rate, and the time
// until the reads per operation are back to the pre-crash ones.
#include <nlohmann/json.hpp>

#include "workloads/bench_options.hpp"

namespace tristore {

// A sampling interval counts as recovered at this fraction of the pre-crash rate: intervals
// of a steady run scatter by a few percent around their mean (the JSON reports how many
// pre-crash intervals reached it), so 100 % would time noise, not warm-up.
inline constexpr double kRecoveredFraction = 0.9;
// Where intervals scatter more (checkpoints under updates, a busy machine), the JSON also has
// the time until the mean over this window reaches the fraction.
inline constexpr double kSmoothingSeconds = 0.5;
// Counters do not depend on the machine's load: the JSON also has the time until an interval
// reads no more from NVM and SSD per operation than the pre-crash run, within this margin.
inline constexpr double kWarmReadsTolerance = 0.1;

nlohmann::json run_restart_bench(const BenchOptions& options);

}  // namespace tristore
