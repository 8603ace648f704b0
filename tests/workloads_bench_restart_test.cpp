// tristore-bench --restart (paper Figure 17) run as a user would, on tiny configurations: the
// worker process must really die of SIGKILL, the database must really be reopened and
// recovered, and the JSON must hold a consistent account of both sides of the crash.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/test_support.hpp"
#include "tests/workloads_bench_support.hpp"

namespace {

using Outcome = tristore::testing_support::BenchOutcome;
using tristore::testing_support::kNvmBase;
using tristore::testing_support::kSsdBase;
using tristore::testing_support::read_file;
using tristore::testing_support::TempDir;

class WorkloadsBenchRestart : public testing::Test {
 protected:
  static std::string read(const std::filesystem::path& path) { return read_file(path); }
  // The architectures take turns on the same files; each is given those it has (a path for a
  // tier it lacks is refused).
  Outcome run(const std::string& args) const {
    const auto has = [&args](const char* arch) { return args.find(arch) != std::string::npos; };
    std::string files;
    if (!has("main-memory"))
      files += " --replace-files --nvm-path '" + (nvm_dir_.path / "x.nvm").string() + "'";
    if (!has("main-memory") && !has("basic-nvm") && !has("nvm-direct"))
      files += " --ssd-path '" + (dir_.path / "x.ssd").string() + "'";
    return tristore::testing_support::run_bench(args + files, dir_.path);
  }

  // A restart run of 0.4 s before the crash and 0.4 s after, sampled every 50 ms.
  nlohmann::json restart_run(const std::string& args) const {
    const std::string json = (dir_.path / "result.json").string();
    const Outcome outcome = run(args +
                                " --seconds 0.4 --restart-seconds 0.4 --warmup 0.1 --sample-ms 50 "
                                "--restart --quiet --json '" +
                                json + "'");
    EXPECT_EQ(outcome.status, 0) << args << ": " << outcome.err;
    if (outcome.status != 0) return nullptr;
    return nlohmann::json::parse(read(json));
  }

  TempDir dir_{kSsdBase, "tristore-bench-restart"};  // SSD file, outputs
  TempDir nvm_dir_{kNvmBase, "tristore-bench-restart"};
};

// The sum of a field over a series' points (of the numbers themselves for "").
double sum_of(const nlohmann::json& series, std::string_view field) {
  double sum = 0;
  for (const nlohmann::json& point : series)
    sum += (field.empty() ? point : point.at(field)).get<double>();
  return sum;
}

// What every restart result must satisfy, whatever the architecture and workload.
void expect_consistent_restart(const nlohmann::json& result, const std::string& what) {
  SCOPED_TRACE(what);
  const nlohmann::json& restart = result.at("restart");

  // 1. A real process crash: SIGKILL, and the worker is gone.
  EXPECT_EQ(restart.at("crash").at("method"), "sigkill");
  EXPECT_FALSE(restart.at("crash").at("power_failure_simulated").get<bool>());
  const pid_t worker = restart.at("crash").at("worker_pid").get<pid_t>();
  EXPECT_GT(worker, 0);
  EXPECT_NE(worker, ::getpid());
  EXPECT_EQ(::kill(worker, 0), -1);

  // 2. Both series are there, on one time axis: before the kill < 0 < after the restart.
  const nlohmann::json& before = restart.at("series").at("before_crash");
  const nlohmann::json& after = restart.at("series").at("after_restart");
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(after.empty());
  for (const nlohmann::json& point : before) EXPECT_LT(point.at("t_s").get<double>(), 0);
  const double first_op_at = restart.at("crash_to_reopen_seconds").get<double>() +
                             restart.at("recovery_seconds").get<double>();
  for (const nlohmann::json& point : after)
    EXPECT_GT(point.at("t_s").get<double>() - point.at("seconds").get<double>(),
              first_op_at - 1e-3);
  EXPECT_GE(sum_of(before, "seconds"), 0.4);
  EXPECT_GE(sum_of(after, "seconds"), 0.4);
  EXPECT_GT(sum_of(after, "ops"), 0);

  // 3. The measured phase is the pre-crash series, and its rate is what the threshold uses.
  EXPECT_EQ(result.at("ops").get<double>(), sum_of(before, "ops"));
  EXPECT_NEAR(result.at("seconds").get<double>(), sum_of(before, "seconds"), 1e-9);
  const double pre_rate = result.at("throughput_ops_s").get<double>();
  EXPECT_GT(pre_rate, 0);
  EXPECT_DOUBLE_EQ(restart.at("pre_crash_throughput_ops_s").get<double>(), pre_rate);
  EXPECT_DOUBLE_EQ(restart.at("threshold_fraction").get<double>(), 0.9);

  // 4. Every thread ran on both sides of the crash, and the threads' operations add up.
  const auto threads = result.at("config").at("threads").get<std::size_t>();
  for (const nlohmann::json* by_thread :
       {&result.at("ops_by_thread"), &restart.at("after_restart_ops_by_thread")}) {
    ASSERT_EQ(by_thread->size(), threads);
    for (const nlohmann::json& ops : *by_thread) EXPECT_GT(ops.get<double>(), 0);
  }
  EXPECT_EQ(sum_of(result.at("ops_by_thread"), ""), sum_of(before, "ops"));
  EXPECT_EQ(sum_of(restart.at("after_restart_ops_by_thread"), ""), sum_of(after, "ops"));

  // 5. The phases fit in the time they were measured in.
  const nlohmann::json& phases = restart.at("phases");
  for (const auto& [name, seconds] : phases.items()) EXPECT_GE(seconds.get<double>(), 0) << name;
  const double reopen = restart.at("reopen_seconds").get<double>();
  const double recovery = restart.at("recovery_seconds").get<double>();
  EXPECT_NEAR(recovery, reopen + restart.at("table_open_seconds").get<double>(), 1e-3);
  EXPECT_LE(phases.at("page_table_rebuild_seconds").get<double>() +
                phases.at("log_open_seconds").get<double>() +
                phases.at("analysis_seconds").get<double>() +
                phases.at("redo_seconds").get<double>(),
            reopen);
  double named = 0;
  for (const char* phase : {"page_table_rebuild_seconds", "log_open_seconds", "analysis_seconds",
                            "redo_seconds", "undo_seconds"})
    named += phases.at(phase).get<double>();
  EXPECT_LE(named, recovery);
  EXPECT_NEAR(named + phases.at("other_seconds").get<double>(), recovery, 1e-9);

  // 6. The threshold times, when reached, belong to an interval that reached the rate.
  for (const char* field : {"seconds_to_threshold", "seconds_to_threshold_smoothed",
                            "seconds_to_half", "seconds_to_warm_reads"}) {
    const nlohmann::json& seconds = restart.at(field);
    if (seconds.is_null()) continue;
    EXPECT_GE(seconds.get<double>(), restart.at("recovery_seconds").get<double>()) << field;
  }
  if (!restart.at("seconds_to_threshold").is_null()) {
    const double at = restart.at("seconds_to_threshold").get<double>() +
                      restart.at("crash_to_reopen_seconds").get<double>();
    bool found = false;
    for (const nlohmann::json& point : after)
      if (std::abs(point.at("t_s").get<double>() - at) < 1e-6)
        found = point.at("ops_s").get<double>() >= 0.9 * pre_rate;
    EXPECT_TRUE(found);
  }
}

}  // namespace

TEST_F(WorkloadsBenchRestart, YcsbReadWriteOnEveryDurableArchitectureReportsBothSidesOfTheCrash) {
  for (const char* arch : {"3tier", "basic-nvm", "nvm-direct", "ssd-bm"}) {
    const nlohmann::json result =
        restart_run(std::string("--arch ") + arch +
                    " --workload ycsb-rw --records 3000 --dram 4MiB --nvm 64MiB --ssd 64MiB");
    ASSERT_FALSE(result.is_null()) << arch;
    EXPECT_EQ(result.at("config").at("arch"), arch);
    EXPECT_TRUE(result.at("config").at("restart").get<bool>());
    expect_consistent_restart(result, arch);
    EXPECT_EQ(result.at("restart").at("check").at("records_not_found"), 0) << arch;
  }
}

TEST_F(WorkloadsBenchRestart, TpccRestartIsConsistentAfterRecovery) {
  const nlohmann::json result =
      restart_run("--arch basic-nvm --workload tpcc --warehouses 1 --dram 32MiB --nvm 512MiB");
  ASSERT_FALSE(result.is_null());
  expect_consistent_restart(result, "tpcc");
  EXPECT_EQ(result.at("restart").at("check").at("tpcc_consistency_conditions_violated"), 0);
}

// The crash comes amid transactions on three threads (more than this machine's cores), on a
// tree beyond DRAM; after recovery the three run again, and TPC-C's consistency conditions
// must hold (the run fails otherwise).
TEST_F(WorkloadsBenchRestart, TpccOnThreeThreadsIsConsistentAfterRecovery) {
  for (const char* arch : {"3tier", "ssd-bm"}) {
    const nlohmann::json result =
        restart_run(std::string("--arch ") + arch +
                    " --workload tpcc --warehouses 2 --threads 3 --dram 32MiB --nvm 64MiB");
    ASSERT_FALSE(result.is_null()) << arch;
    EXPECT_EQ(result.at("config").at("threads"), 3) << arch;
    expect_consistent_restart(result, arch);
    EXPECT_EQ(result.at("restart").at("check").at("tpcc_consistency_conditions_violated"), 0);
  }
}

TEST_F(WorkloadsBenchRestart, ImpossibleRestartRunsGiveOneLineErrors) {
  for (const char* args : {"--restart --arch main-memory --records 100 --dram 16MiB",
                           "--restart --ops 100 --records 100", "--restart --sample-ms 0",
                           "--restart --wear --records 100", "--restart --restart-seconds -1"}) {
    const Outcome outcome = run(args);
    EXPECT_EQ(outcome.status, 2) << args << ": " << outcome.err;
    EXPECT_EQ(outcome.err.find('\n'), outcome.err.size() - 1) << args << ": " << outcome.err;
  }
}
