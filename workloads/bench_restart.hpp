#pragma once
// tristore-bench --restart (paper Figure 17): after the measured phase the database is dropped
// as if the process had crashed (no flush), reopened, and its recovery phases timed; then
// point lookups run in short intervals until their throughput reaches the pre-restart one.
#include <nlohmann/json.hpp>

#include "workloads/bench_options.hpp"

namespace tristore {

// options.config as the run used it; pre_restart_ops_s: the measured phase's throughput.
nlohmann::json measure_restart(const BenchOptions& options, double pre_restart_ops_s);

}  // namespace tristore
