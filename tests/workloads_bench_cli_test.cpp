// Runs the tristore-bench binary as a user would: bad flags and impossible sizes must end in a
// one-line error and exit status 2, never a crash; a good run writes the JSON result.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/workloads_bench_support.hpp"

namespace {

using Outcome = tristore::testing_support::BenchOutcome;
using tristore::testing_support::read_file;

class WorkloadsBenchCli : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tristore-bench-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string read(const std::filesystem::path& path) { return read_file(path); }
  Outcome run(const std::string& args) const {
    return tristore::testing_support::run_bench(args, dir_);
  }

  // Small sizes and files inside the test's own directory.
  std::string files() const {
    return "--nvm-path '" + (dir_ / "x.nvm").string() + "' --ssd-path '" +
           (dir_ / "x.ssd").string() + "'";
  }

  std::filesystem::path dir_;
};

}  // namespace

TEST_F(WorkloadsBenchCli, BadFlagsGiveOneLineErrorsAndStatusTwo) {
  const std::vector<std::string> bad = {
      "--threads 257",
      "--dram 0",
      "--arch 4tier",
      "--workload ycsb-z",
      "--frobnicate",
      "--dram 12XB",
      "--records lots",
      "--seconds 1 --ops 5",
      "--update-ratio 101",
      "--records 100000000 --ssd 1GiB",
      "--arch main-memory --records 1000000 --dram 64MiB",
      "--arch nvm-direct --nvm 200KiB --records 100",
  };
  for (const std::string& args : bad) {
    const Outcome outcome = run(args + " " + files());
    EXPECT_EQ(outcome.status, 2) << args << ": " << outcome.err;
    ASSERT_FALSE(outcome.err.empty()) << args;
    EXPECT_EQ(outcome.err.find('\n'), outcome.err.size() - 1) << args << ": " << outcome.err;
    EXPECT_EQ(outcome.err.rfind("tristore-bench: ", 0), 0U) << args << ": " << outcome.err;
  }
}

TEST_F(WorkloadsBenchCli, HelpListsTheFlagsAndSucceeds) {
  const Outcome outcome = run("--help");
  EXPECT_EQ(outcome.status, 0);
  for (const char* flag :
       {"--arch", "--workload", "--dram", "--nvm", "--ssd", "--records", "--warehouses",
        "--nvm-read-ns", "--zipf", "--update-ratio", "--threads", "--seconds", "--ops", "--warmup",
        "--no-cl-grained", "--no-mini-pages", "--no-swizzling", "--json", "--distribution"})
    EXPECT_NE(outcome.out.find(flag), std::string::npos) << flag;
}

TEST_F(WorkloadsBenchCli, ARunWritesItsJsonAndPrintsProgress) {
  const std::string json = (dir_ / "result.json").string();
  const Outcome outcome =
      run("--arch main-memory --records 2000 --ops 500 --warmup 0 --dram 16MiB --json '" + json +
          "' " + files());
  ASSERT_EQ(outcome.status, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("loading 2000 records"), std::string::npos) << outcome.out;
  const nlohmann::json result = nlohmann::json::parse(read(json));
  EXPECT_EQ(result.at("ops"), 500);
  EXPECT_EQ(result.at("config").at("arch"), "main-memory");
  EXPECT_GT(result.at("throughput_ops_s").get<double>(), 0);
}

// Each of these ran (--ops 0: for 10 s) or failed with a misleading message.
TEST_F(WorkloadsBenchCli, ZeroOpsNegativeCountsAndOneFileForTwoTiersSaySo) {
  const std::string same = (dir_ / "same.file").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--ops 0 " + files(), "tristore-bench: --ops must be at least 1\n"},
      {"--records -5 " + files(), "tristore-bench: --records must be a positive integer, not -5\n"},
      {"--nvm-read-ns -1 " + files(),
       "tristore-bench: --nvm-read-ns must be a non-negative integer, not -1\n"},
      {"--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB --nvm-path '" +
           same + "' --ssd-path '" + same + "'",
       "tristore-bench: the NVM path '" + same + "' and the SSD path '" + same +
           "' name the same file; a database needs two\n"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome = run(args);
    EXPECT_EQ(outcome.status, 2) << args;
    EXPECT_EQ(outcome.err, expected) << args;
  }
}
