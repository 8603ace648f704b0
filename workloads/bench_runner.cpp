#include "workloads/bench_runner.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "common/error.hpp"
#include "engine/database.hpp"
#include "workloads/bench_report.hpp"
#include "workloads/bench_restart.hpp"
#include "workloads/bench_tpcc.hpp"
#include "workloads/bench_wear.hpp"
#include "workloads/size_parser.hpp"
#include "workloads/tree_size_estimate.hpp"
#include "workloads/ycsb_workload.hpp"

namespace tristore {

namespace {

// Removes the files the driver named itself, however the run ends: also when Ctrl-C, kill or a
// closed terminal ends it (the NVM file is a GiB of RAM in /dev/shm), whose signal then ends
// the process as it would have.
class DefaultFilesRemover {
 public:
  explicit DefaultFilesRemover(const BenchOptions& options) : options_(options) {
    if (options.remove_nvm_file) keep(options.config.nvm_path, 0);
    if (options.remove_ssd_file) keep(options.config.ssd_path, 1);
    struct sigaction action {};
    action.sa_handler = &remove_and_end;
    sigemptyset(&action.sa_mask);
    // A signal ignored from the start (nohup, a background job) stays ignored.
    for (std::size_t i = 0; i < std::size(kEndingSignals); ++i) {
      struct sigaction before {};
      ::sigaction(kEndingSignals[i], nullptr, &before);
      caught_[i] = before.sa_handler != SIG_IGN;
      if (caught_[i]) ::sigaction(kEndingSignals[i], &action, nullptr);
    }
  }
  ~DefaultFilesRemover() {
    for (std::size_t i = 0; i < std::size(kEndingSignals); ++i)
      if (caught_[i]) std::signal(kEndingSignals[i], SIG_DFL);
    std::error_code ignored;
    if (options_.remove_nvm_file) std::filesystem::remove(options_.config.nvm_path, ignored);
    if (options_.remove_ssd_file) std::filesystem::remove(options_.config.ssd_path, ignored);
  }
  DefaultFilesRemover(const DefaultFilesRemover&) = delete;
  DefaultFilesRemover& operator=(const DefaultFilesRemover&) = delete;

 private:
  static constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP};
  // The paths where a signal handler may read them (it may not allocate).
  static inline std::array<std::array<char, 4096>, 2> paths_{};
  static void keep(const std::string& path, std::size_t which) {
    if (path.size() < paths_[which].size())
      std::memcpy(paths_[which].data(), path.c_str(), path.size() + 1);
  }
  static void remove_and_end(int signal) {
    for (const auto& path : paths_)
      if (path[0] != '\0') ::unlink(path.data());
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }

  const BenchOptions& options_;
  std::array<bool, std::size(kEndingSignals)> caught_{};
};

nlohmann::json run_ycsb_bench(Database& db, const BenchOptions& options,
                              const ProgressPrinter& progress,
                              const std::function<void()>& before_measured) {
  const PhaseLimit warmup{options.warmup_seconds, 0};
  const PhaseLimit measured{options.seconds, options.ops};
  const YcsbResult ycsb =
      run_ycsb(db, options.ycsb, warmup, measured, progress, options.threads, before_measured);
  nlohmann::json result;
  result["load"] = phase_json(ycsb.load);
  result["load"]["memory"] = memory_json(ycsb.memory_after_load);
  result["warmup"] = phase_json(ycsb.warmup);
  add_measured_json(result, ycsb.measured);
  result["data_bytes"] = tree_bytes(ycsb.memory_after_load);
  result["data_bytes_estimated"] =
      estimated_tree_bytes(options.ycsb.records, ycsb_key_bytes(options.ycsb),
                           ycsb_value_bytes(options.ycsb), options.ycsb.fill_factor);
  result["operations"] = {{"lookups", ycsb.lookups},
                          {"updates", ycsb.updates},
                          {"scans", ycsb.scans},
                          {"scanned_records", ycsb.scanned_records},
                          {"not_found", ycsb.not_found}};
  if (ycsb.not_found != 0)
    fail("ycsb: {} operations did not find a loaded key: the engine lost records", ycsb.not_found);
  return result;
}

}  // namespace

nlohmann::json run_bench(const BenchOptions& options) {
  // 1. Validate again: callers other than the command line build options by hand.
  validate(options);

  // 2. Open the database on files the run owns; a restart run opens it in a worker process.
  const ProgressPrinter progress(options.progress);
  const DefaultFilesRemover remover(options);
  progress.message(fmt::format(
      "tristore-bench: {} on {} (dram {}, nvm {}, ssd {})", options.workload_name,
      architecture_name(options.config.architecture), format_size(options.config.dram_bytes),
      format_size(options.config.nvm_bytes), format_size(options.config.ssd_bytes)));
  if (options.restart) {
    nlohmann::json result = run_restart_bench(options);
    result["config"] = config_json(options);
    result["durable"] = true;
    return result;
  }
  std::unique_ptr<Database> db = Database::open(options.config);

  // 3. Load, warm up, measure; NVM wear (when counted) over the measured phase only.
  std::optional<WearDelta> wear;
  const auto snapshot_wear = [&db, &wear] {
    if (const WearCounters* counters = db->nvm_wear()) wear.emplace(*counters);
  };
  nlohmann::json result = options.workload == WorkloadKind::kTpcc
                              ? run_tpcc_bench(*db, options, progress, snapshot_wear)
                              : run_ycsb_bench(*db, options, progress, snapshot_wear);
  if (wear) result["wear"] = wear->json(*db->nvm_wear());

  // 4. Describe the run.
  result["config"] = config_json(options);
  result["memory"] = memory_json(db->memory_usage());
  result["memory"]["peak_rss_bytes"] = peak_rss_bytes();
  result["durable"] = options.config.architecture != Architecture::kMainMemory;
  result["nvm_is_pmem"] = db->nvm_is_pmem();
  result["nvm_persistence"] = db->nvm_persistence();
  db.reset();  // closes (and flushes) before the files are removed
  return result;
}

std::string summary_line(const nlohmann::json& result) {
  const nlohmann::json& counters = result.at("counters");
  return fmt::format(
      "{} {}: {:.0f} ops/s ({} ops in {:.2f} s), nvm lines read {}, ssd pages read {} written {}",
      result.at("config").at("arch").get<std::string>(),
      result.at("config").at("workload").get<std::string>(),
      result.at("throughput_ops_s").get<double>(), result.at("ops").get<std::uint64_t>(),
      result.at("seconds").get<double>(), counters.at("nvm_lines_read").get<std::uint64_t>(),
      counters.at("ssd_pages_read").get<std::uint64_t>(),
      counters.at("ssd_pages_written").get<std::uint64_t>());
}

}  // namespace tristore
