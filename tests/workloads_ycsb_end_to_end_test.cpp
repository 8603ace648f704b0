// Small complete tristore-bench runs, in process: every YCSB workload on main-memory and 3tier
// (and the micro table), checking that operations ran and that the JSON has the contract's
// fields (docs/design.md section 9).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/error.hpp"
#include "tests/test_support.hpp"
#include "workloads/bench_runner.hpp"

using namespace tristore;

namespace {

// One known seed by default: every run does the same work unless asked otherwise.
std::uint64_t test_seed() { return testing_support::test_seed(42); }

// Options for a quick run on files of this test alone, removed afterwards.
class SmallRun {
 public:
  SmallRun(Architecture arch, YcsbKind kind, bool micro) {
    options.config.architecture = arch;
    options.config.dram_bytes = 16 * kMiB;
    options.config.nvm_bytes = 64 * kMiB;
    options.config.ssd_bytes = 128 * kMiB;
    options.config.nvm_path = files_.nvm;
    options.config.ssd_path = files_.ssd;
    options.workload = WorkloadKind::kYcsb;
    options.workload_name = std::string(ycsb_kind_name(kind));
    options.ycsb.kind = kind;
    options.ycsb.micro = micro;
    options.ycsb.records = 3000;
    options.ycsb.seed = test_seed();
    options.ops = 2000;
    options.warmup_seconds = 0;
    options.progress = false;
  }
  SmallRun(const SmallRun&) = delete;
  SmallRun& operator=(const SmallRun&) = delete;

  BenchOptions options;

 private:
  testing_support::DatabaseFiles files_{"tristore-ycsb-e2e"};
};

void expect_contract_fields(const nlohmann::json& result) {
  for (const char* field : {"config", "throughput_ops_s", "ops", "seconds", "data_bytes",
                            "counters", "load", "warmup", "memory", "operations"})
    EXPECT_TRUE(result.contains(field)) << field;
  for (const char* counter :
       {"nvm_lines_read", "nvm_lines_written", "ssd_pages_read", "ssd_pages_written",
        "page_table_lookups", "mini_page_promotions", "nvm_admissions"})
    EXPECT_TRUE(result.at("counters").contains(counter)) << counter;
  for (const char* setting :
       {"arch", "workload", "dram_bytes", "nvm_bytes", "ssd_bytes", "nvm_read_ns", "nvm_write_ns",
        "threads", "cache_line_grained", "mini_pages", "swizzling", "seed"})
    EXPECT_TRUE(result.at("config").contains(setting)) << setting;
  for (const char* derived : {"log_bytes_per_op", "log_records_per_op", "nvm_data_lines_written"})
    EXPECT_TRUE(result.at("derived").contains(derived)) << derived;
  EXPECT_GT(result.at("data_bytes").get<std::uint64_t>(), 0U);
  EXPECT_GT(result.at("seconds").get<double>(), 0);
  EXPECT_GT(result.at("throughput_ops_s").get<double>(), 0);
  // The NVM file of these runs is on tmpfs: libpmem must not take it for persistent memory.
  EXPECT_FALSE(result.at("nvm_is_pmem").get<bool>());
  const bool has_nvm = result.at("config").at("arch") != "main-memory";
  EXPECT_EQ(result.at("nvm_persistence").get<std::string>(), has_nvm ? "tmpfs" : "none");
}

}  // namespace

class WorkloadsYcsbEndToEnd
    : public testing::TestWithParam<std::tuple<Architecture, YcsbKind, bool>> {};

TEST_P(WorkloadsYcsbEndToEnd, RunsTheRequestedOperationsAndReportsTheContractFields) {
  const auto [arch, kind, micro] = GetParam();
  SmallRun run(arch, kind, micro);
  if (kind == YcsbKind::kReadWrite) run.options.ycsb.update_ratio_percent = 50;
  const nlohmann::json result = run_bench(run.options);

  expect_contract_fields(result);
  for (const char* setting : {"records", "zipf_theta", "distribution", "fill_factor", "micro"})
    EXPECT_TRUE(result.at("config").contains(setting)) << setting;
  EXPECT_EQ(result.at("ops"), 2000);
  EXPECT_EQ(result.at("config").at("arch"), std::string(architecture_name(arch)));
  EXPECT_EQ(result.at("config").at("micro"), micro);
  EXPECT_EQ(result.at("load").at("ops"), 3000);
  const nlohmann::json& ops = result.at("operations");
  EXPECT_EQ(ops.at("not_found"), 0);
  switch (kind) {
    case YcsbKind::kReadOnly:
      EXPECT_EQ(ops.at("lookups"), 2000);
      EXPECT_EQ(ops.at("updates"), 0);
      break;
    case YcsbKind::kReadWrite:
      EXPECT_EQ(ops.at("lookups").get<int>() + ops.at("updates").get<int>(), 2000);
      EXPECT_NEAR(ops.at("updates").get<double>(), 1000, 150);
      break;
    case YcsbKind::kScan:
      EXPECT_EQ(ops.at("scans"), 2000);
      // Lengths are uniform in [1, 100]; scans near the last key stop early.
      EXPECT_GT(ops.at("scanned_records").get<double>(), 2000 * 30.0);
      EXPECT_LE(ops.at("scanned_records").get<double>(), 2000 * 100.0);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ArchitecturesAndWorkloads, WorkloadsYcsbEndToEnd,
    testing::Combine(testing::Values(Architecture::kMainMemory, Architecture::kThreeTier),
                     testing::Values(YcsbKind::kReadOnly, YcsbKind::kReadWrite, YcsbKind::kScan),
                     testing::Bool()),
    [](const auto& info) {
      std::string name = std::string(architecture_name(std::get<0>(info.param))) + "_" +
                         std::string(ycsb_kind_name(std::get<1>(info.param))) +
                         (std::get<2>(info.param) ? "_micro" : "");
      for (char& c : name)
        if (c == '-') c = '_';
      return name;
    });

TEST(WorkloadsYcsbEndToEndPhases, LoadWritesAreNotCountedInTheMeasuredPhase) {
  // nvm-direct writes every loaded line to NVM; a read-only run afterwards writes none.
  SmallRun run(Architecture::kNvmDirect, YcsbKind::kReadOnly, false);
  const nlohmann::json result = run_bench(run.options);
  EXPECT_GT(result.at("load").at("counters").at("nvm_lines_written").get<std::uint64_t>(), 0U);
  EXPECT_EQ(result.at("counters").at("nvm_lines_written").get<std::uint64_t>(), 0U);
  EXPECT_GT(result.at("counters").at("nvm_lines_read").get<std::uint64_t>(), 0U);
}

TEST(WorkloadsYcsbEndToEndPhases, UpdatesReportTheirLogPerOperationAndDataAreaWrites) {
  // Every autocommit update logs its undo, its redo and its commit; a read-only run logs none.
  SmallRun run(Architecture::kNvmDirect, YcsbKind::kReadWrite, false);
  run.options.ycsb.update_ratio_percent = 100;
  const nlohmann::json result = run_bench(run.options);
  const nlohmann::json& counters = result.at("counters");
  const nlohmann::json& derived = result.at("derived");
  EXPECT_EQ(derived.at("log_records_per_op").get<double>(),
            counters.at("log_records").get<double>() / 2000);
  EXPECT_GE(derived.at("log_records_per_op").get<double>(), 3.0);
  EXPECT_EQ(derived.at("log_bytes_per_op").get<double>(),
            counters.at("log_bytes_written").get<double>() / 2000);
  // nvm-direct updates its pages in place: both areas are written, the data area apart.
  const auto lines = counters.at("nvm_lines_written").get<std::uint64_t>();
  const auto log_lines = counters.at("nvm_log_lines_written").get<std::uint64_t>();
  EXPECT_GT(log_lines, 0U);
  EXPECT_LT(log_lines, lines);
  EXPECT_EQ(derived.at("nvm_data_lines_written").get<std::uint64_t>(), lines - log_lines);

  SmallRun read_only(Architecture::kNvmDirect, YcsbKind::kReadOnly, false);
  const nlohmann::json reads = run_bench(read_only.options);
  EXPECT_EQ(reads.at("counters").at("log_records"), 0);
  EXPECT_EQ(reads.at("derived").at("log_bytes_per_op"), 0.0);
}

TEST(WorkloadsYcsbEndToEndPhases, FullScansVisitTheWholeTable) {
  SmallRun run(Architecture::kMainMemory, YcsbKind::kScan, false);
  run.options.ycsb.full_scan = true;
  run.options.ops = 5;
  const nlohmann::json result = run_bench(run.options);
  EXPECT_EQ(result.at("operations").at("scanned_records"), 5 * 3000);
}

TEST(WorkloadsYcsbEndToEndPhases, ImpossibleOptionsAreErrorsBeforeAnyFileIsMade) {
  SmallRun run(Architecture::kMainMemory, YcsbKind::kReadOnly, false);
  run.options.threads = 300;
  EXPECT_THROW(run_bench(run.options), Error);
  run.options.threads = 1;
  run.options.ycsb.records = 1'000'000;  // ~1.5 GiB of pages in 16 MiB of DRAM
  EXPECT_THROW(run_bench(run.options), Error);
}

// --threads 4: the operations are split between the threads, every one finds its key, and the
// result reports each thread's share.
TEST(WorkloadsYcsbEndToEndPhases, FourThreadsShareTheOperationsAndFindEveryKey) {
  SmallRun run(Architecture::kThreeTier, YcsbKind::kReadWrite, false);
  run.options.config.dram_bytes = 2 * kMiB;
  run.options.threads = 4;
  const nlohmann::json result = run_bench(run.options);
  EXPECT_EQ(result.at("ops"), 2000);
  EXPECT_EQ(result.at("operations").at("not_found"), 0);
  const auto by_thread = result.at("ops_by_thread").get<std::vector<std::uint64_t>>();
  EXPECT_EQ(by_thread, std::vector<std::uint64_t>(4, 500));
  EXPECT_EQ(result.at("throughput_by_thread_ops_s").size(), 4u);
  EXPECT_EQ(result.at("config").at("threads"), 4);
}

TEST(WorkloadsYcsbEndToEndPhases, ThreeTierBeyondDramReadsNvmLinesInEveryWorkload) {
  for (YcsbKind kind : {YcsbKind::kReadOnly, YcsbKind::kReadWrite, YcsbKind::kScan}) {
    SmallRun run(Architecture::kThreeTier, kind, false);
    run.options.config.dram_bytes = 2 * kMiB;
    run.options.ycsb.records = 20'000;  // ~32 MiB of pages: most live in NVM
    const nlohmann::json result = run_bench(run.options);
    EXPECT_EQ(result.at("ops"), 2000) << ycsb_kind_name(kind);
    EXPECT_EQ(result.at("operations").at("not_found"), 0) << ycsb_kind_name(kind);
    EXPECT_GT(result.at("counters").at("nvm_lines_read").get<std::uint64_t>(), 0U)
        << ycsb_kind_name(kind);
  }
}

TEST(WorkloadsYcsbEndToEndPhases, WearCountsTheMeasuredPhaseWritesOnly) {
  SmallRun run(Architecture::kNvmDirect, YcsbKind::kReadWrite, false);
  run.options.config.nvm_wear_counting = true;
  run.options.ycsb.update_ratio_percent = 100;
  const nlohmann::json result = run_bench(run.options);
  ASSERT_TRUE(result.contains("wear"));
  const nlohmann::json& wear = result.at("wear");
  // Every update writes at least its field's lines in place; loading wrote many more lines,
  // which must not appear here.
  EXPECT_GE(wear.at("total_writes").get<std::uint64_t>(), 2000U);
  EXPECT_LT(wear.at("lines_written").get<std::uint64_t>(), wear.at("lines").get<std::uint64_t>());
  std::uint64_t lines = 0;
  std::uint64_t writes = 0;
  std::uint64_t previous = ~std::uint64_t{0};
  for (const auto& run_of_lines : wear.at("sorted_runs")) {
    const auto count = run_of_lines.at(0).get<std::uint64_t>();
    EXPECT_LT(count, previous) << "runs sorted by writes, most first";
    previous = count;
    lines += run_of_lines.at(1).get<std::uint64_t>();
    writes += count * run_of_lines.at(1).get<std::uint64_t>();
  }
  EXPECT_EQ(lines, wear.at("lines_written").get<std::uint64_t>());
  EXPECT_EQ(writes, wear.at("total_writes").get<std::uint64_t>());
  EXPECT_EQ(wear.at("max_writes").get<std::uint64_t>(),
            wear.at("sorted_runs").at(0).at(0).get<std::uint64_t>());
}

TEST(WorkloadsYcsbEndToEndPhases, NoWearWithoutTheFlag) {
  SmallRun run(Architecture::kNvmDirect, YcsbKind::kReadWrite, false);
  EXPECT_FALSE(run_bench(run.options).contains("wear"));
}

TEST(WorkloadsYcsbEndToEndPhases, TpccThroughTheDriverCountsTransactionsByType) {
  SmallRun run(Architecture::kMainMemory, YcsbKind::kReadOnly, false);
  run.options.workload = WorkloadKind::kTpcc;
  run.options.workload_name = "tpcc";
  run.options.warehouses = 1;
  run.options.config.dram_bytes = 512 * kMiB;
  run.options.ops = 500;
  const nlohmann::json result = run_bench(run.options);
  expect_contract_fields(result);
  EXPECT_EQ(result.at("ops"), 500);
  EXPECT_EQ(result.at("config").at("warehouses"), 1);
  std::uint64_t transactions = 0;
  for (const char* type : {"new_order", "payment", "order_status", "delivery", "stock_level"})
    transactions += result.at("operations").at(type).get<std::uint64_t>();
  EXPECT_EQ(transactions, 500U);
  EXPECT_GT(result.at("data_bytes").get<std::uint64_t>(), 50 * kMiB);  // ~120 MiB of B-tree
}
