#pragma once
// Everything one tristore-bench run is told, validated (docs/design.md section 9).
#include <cstdint>
#include <string>

#include "engine/config.hpp"
#include "workloads/ycsb_workload.hpp"

namespace tristore {

enum class WorkloadKind { kYcsb, kTpcc };

struct BenchOptions {
  Config config;
  WorkloadKind workload = WorkloadKind::kYcsb;
  std::string workload_name = "ycsb-ro";  // as spelled on the command line
  YcsbOptions ycsb;
  std::uint32_t warehouses = 1;
  std::uint32_t threads = 1;
  double warmup_seconds = 2;
  double seconds = 10;
  std::uint64_t ops = 0;  // non-zero: the measured phase runs exactly this many operations
  std::string json_path;  // empty: no JSON file
  bool progress = true;
  // Paper Figure 17 (workloads/bench_restart.hpp): a worker process runs the workload and is
  // killed with SIGKILL after the measured phase; the database is reopened and the same
  // workload runs restart_seconds more, throughput sampled every sample_seconds throughout.
  bool restart = false;
  double restart_seconds = 0;  // 0: as long as the measured phase
  double sample_seconds = 0.1;
  // Files the driver named itself (per process, so parallel runs do not collide); it removes
  // them when the run ends.
  bool remove_nvm_file = false;
  bool remove_ssd_file = false;
};

// Whether the architecture keeps data in DRAM, NVM, SSD.
bool uses_dram(Architecture arch);
bool uses_nvm(Architecture arch);
bool uses_ssd(Architecture arch);

// Throws Error (one line) when the options cannot work: an unsupported thread count, a zero
// budget the architecture needs, a data set larger than the tier that must hold it, values out
// of range.
void validate(const BenchOptions& options);

}  // namespace tristore
