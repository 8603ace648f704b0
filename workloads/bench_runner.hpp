#pragma once
// One tristore-bench run: open the database, load, warm up, measure, and describe it as JSON
// (docs/design.md section 9). Throws Error (one line) when the run cannot happen.
#include <nlohmann/json.hpp>

#include "workloads/bench_options.hpp"

namespace tristore {

nlohmann::json run_bench(const BenchOptions& options);

// The one-line summary tristore-bench prints at the end.
std::string summary_line(const nlohmann::json& result);

}  // namespace tristore
