#pragma once
// tristore-bench's TPC-C run: the Tpcc driver (workloads/tpcc_driver.hpp) in the bench phases.
#include <nlohmann/json.hpp>

#include <functional>

#include "engine/database.hpp"
#include "workloads/bench_options.hpp"
#include "workloads/bench_phase.hpp"

namespace tristore {

// Loads --warehouses, warms up, measures; the result holds the same fields as a YCSB run plus
// the transactions by type. Throws Error if the database is inconsistent after the run.
nlohmann::json run_tpcc_bench(Database& db, const BenchOptions& options,
                              const ProgressPrinter& progress,
                              const std::function<void()>& before_measured = {});

}  // namespace tristore
