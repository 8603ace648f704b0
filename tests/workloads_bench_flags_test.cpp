#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "workloads/bench_flags.hpp"

using namespace tristore;

namespace {

// Parses argv as tristore-bench would and returns the validated options.
BenchOptions parse(std::vector<std::string> args) {
  CLI::App app;
  BenchFlags flags(app);
  args.insert(args.begin(), "tristore-bench");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return flags.finish();
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const Error& error) {
    return error.what();
  } catch (const CLI::ParseError& error) {
    return std::string("CLI11: ") + error.what();
  }
  return "";
}

}  // namespace

TEST(WorkloadsBenchFlags, DefaultsAreTheDesignDefaults) {
  const BenchOptions o = parse({});
  EXPECT_EQ(o.config.architecture, Architecture::kThreeTier);
  EXPECT_EQ(o.workload, WorkloadKind::kYcsb);
  EXPECT_EQ(o.ycsb.kind, YcsbKind::kReadOnly);
  EXPECT_EQ(o.config.dram_bytes, 200ULL << 20);
  EXPECT_EQ(o.config.nvm_bytes, 1ULL << 30);
  EXPECT_EQ(o.config.ssd_bytes, 5ULL << 30);
  EXPECT_EQ(o.ycsb.distribution, KeyDistribution::kZipf);
  EXPECT_DOUBLE_EQ(o.ycsb.zipf_theta, 1.0);
  EXPECT_DOUBLE_EQ(o.ycsb.fill_factor, 0.66);
  EXPECT_EQ(o.threads, 1U);
  EXPECT_GT(o.seconds, 0);
  EXPECT_TRUE(o.config.cache_line_grained && o.config.mini_pages && o.config.swizzling);
}

TEST(WorkloadsBenchFlags, EveryFlagReachesTheOptions) {
  const BenchOptions o = parse({"--arch",
                                "3tier",
                                "--workload",
                                "ycsb-rw",
                                "--dram",
                                "64MiB",
                                "--nvm",
                                "512MiB",
                                "--ssd",
                                "2GiB",
                                "--records",
                                "5000",
                                "--nvm-read-ns",
                                "500",
                                "--nvm-write-ns",
                                "700",
                                "--llc",
                                "20MiB",
                                "--zipf",
                                "0.8",
                                "--update-ratio",
                                "25",
                                "--seed",
                                "7",
                                "--ops",
                                "1000",
                                "--warmup",
                                "0.5",
                                "--no-cl-grained",
                                "--no-mini-pages",
                                "--no-swizzling",
                                "--nvm-path",
                                "/dev/shm/x.nvm",
                                "--ssd-path",
                                "/tmp/x.ssd",
                                "--json",
                                "out.json",
                                "--fill-factor",
                                "1",
                                "--quiet",
                                "--wear"});
  EXPECT_EQ(o.ycsb.kind, YcsbKind::kReadWrite);
  EXPECT_EQ(o.config.dram_bytes, 64ULL << 20);
  EXPECT_EQ(o.config.nvm_bytes, 512ULL << 20);
  EXPECT_EQ(o.config.ssd_bytes, 2ULL << 30);
  EXPECT_EQ(o.config.llc_bytes, 20ULL << 20);
  EXPECT_EQ(o.ycsb.records, 5000U);
  EXPECT_EQ(o.config.nvm_read_ns, 500U);
  EXPECT_EQ(o.config.nvm_write_ns, 700U);
  EXPECT_DOUBLE_EQ(o.ycsb.zipf_theta, 0.8);
  EXPECT_DOUBLE_EQ(o.ycsb.update_ratio_percent, 25);
  EXPECT_EQ(o.ycsb.seed, 7U);
  EXPECT_EQ(o.ops, 1000U);
  EXPECT_DOUBLE_EQ(o.warmup_seconds, 0.5);
  EXPECT_FALSE(o.config.cache_line_grained || o.config.mini_pages || o.config.swizzling);
  EXPECT_EQ(o.config.nvm_path, "/dev/shm/x.nvm");
  EXPECT_EQ(o.config.ssd_path, "/tmp/x.ssd");
  EXPECT_FALSE(o.remove_nvm_file || o.remove_ssd_file);
  EXPECT_EQ(o.json_path, "out.json");
  EXPECT_DOUBLE_EQ(o.ycsb.fill_factor, 1.0);
  EXPECT_FALSE(o.progress);
  EXPECT_TRUE(o.config.nvm_wear_counting);
}

// --zipf applies to --distribution zipf only: the other choices get their own test.
TEST(WorkloadsBenchFlags, EveryDistributionIsSelectable) {
  EXPECT_EQ(parse({"--distribution", "uniform"}).ycsb.distribution, KeyDistribution::kUniform);
  EXPECT_EQ(parse({"--distribution", "scrambled-zipf"}).ycsb.distribution,
            KeyDistribution::kScrambledZipf);
  EXPECT_EQ(parse({"--distribution", "zipf", "--zipf", "0.5"}).ycsb.distribution,
            KeyDistribution::kZipf);
}

TEST(WorkloadsBenchFlags, DefaultFilesArePerProcessAndRemoved) {
  const BenchOptions o = parse({});
  EXPECT_NE(o.config.nvm_path.find(std::to_string(::getpid())), std::string::npos);
  EXPECT_NE(o.config.ssd_path.find(std::to_string(::getpid())), std::string::npos);
  EXPECT_TRUE(o.remove_nvm_file && o.remove_ssd_file);
}

TEST(WorkloadsBenchFlags, MicroAndTpccAreSelectable) {
  EXPECT_TRUE(parse({"--micro", "--workload", "ycsb-scan"}).ycsb.micro);
  const BenchOptions tpcc = parse({"--workload", "tpcc", "--warehouses", "3"});
  EXPECT_EQ(tpcc.workload, WorkloadKind::kTpcc);
  EXPECT_EQ(tpcc.warehouses, 3U);
}

TEST(WorkloadsBenchFlags, ImpossibleSettingsAreOneLineErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--threads", "300"}, "--threads"},
      {{"--ssd-write-behind", "5000"}, "--ssd-write-behind 5000: at most 4096"},
      {{"--dram", "0"}, "--dram"},
      {{"--arch", "main-memory", "--dram", "0"}, "--dram"},
      {{"--arch", "basic-nvm", "--nvm", "0"}, "--nvm"},
      {{"--dram", "12XB"}, "--dram"},
      {{"--arch", "4tier"}, "4tier"},
      {{"--workload", "ycsb-x"}, "ycsb-x"},
      {{"--distribution", "normal"}, "normal"},
      {{"--update-ratio", "150"}, "--update-ratio"},
      {{"--zipf", "-1"}, "--zipf"},
      {{"--fill-factor", "0"}, "--fill-factor"},
      {{"--seconds", "0"}, "--seconds"},
      {{"--records", "0"}, "--records"},
      {{"--records", "100000000", "--ssd", "1GiB"}, "--ssd"},
      {{"--arch", "main-memory", "--records", "1000000", "--dram", "100MiB"}, "--dram"},
      {{"--arch", "nvm-direct", "--records", "10000000", "--nvm", "1GiB"}, "--nvm"},
      {{"--arch", "ssd-bm", "--no-swizzling"}, "3tier only"},
      {{"--workload", "tpcc", "--warehouses", "0"}, "--warehouses"},
  };
  for (const auto& [args, mention] : cases) {
    const std::string message = error_of(args);
    EXPECT_NE(message.find(mention), std::string::npos)
        << "args " << testing::PrintToString(args) << " gave '" << message << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// CLI11 wraps a negative number around to a huge unsigned one (--records -5 was refused as
// 18446744073709551611 records) or fails to convert it with no word about the sign.
TEST(WorkloadsBenchFlags, NegativeNumbersForUnsignedFlagsAreErrorsThatSaySo) {
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--records", "positive"},
      {"--warehouses", "positive"},
      {"--scan-length", "positive"},
      {"--threads", "positive"},
      {"--ops", "positive"},
      {"--nvm-read-ns", "non-negative"},
      {"--nvm-write-ns", "non-negative"},
      {"--admission-set", "non-negative"},
      {"--ssd-write-behind", "non-negative"},
      {"--seed", "non-negative"},
  };
  for (const auto& [flag, kind] : flags) {
    const std::string message = error_of({flag, "-5"});
    EXPECT_EQ(message, flag + " must be a " + kind + " integer, not -5");
  }
}

TEST(WorkloadsBenchFlags, OpsZeroIsAnErrorNotTenSeconds) {
  EXPECT_EQ(error_of({"--ops", "0"}), "--ops must be at least 1");
  EXPECT_EQ(parse({"--ops", "1"}).ops, 1U);
}

TEST(WorkloadsBenchFlags, UnknownFlagsAndSecondsWithOpsAreParseErrors) {
  EXPECT_THROW(parse({"--frobnicate"}), CLI::ParseError);
  EXPECT_THROW(parse({"--seconds", "3", "--ops", "10"}), CLI::ParseError);
  EXPECT_EQ(error_of({"--records", "many"}), "--records must be a positive integer, not many");
}

TEST(WorkloadsBenchFlags, ALaterFlagOverridesAnEarlierOne) {
  const BenchOptions o =
      parse({"--seconds", "3", "--dram", "1GiB", "--seconds", "7", "--dram", "2GiB"});
  EXPECT_DOUBLE_EQ(o.seconds, 7);
  EXPECT_EQ(o.config.dram_bytes, 2ULL << 30);
}

// Every value of a flag given twice is checked, though the last is kept: a bad earlier value
// was dropped unseen, a bad last one named with the other ("Could not convert: --threads = 2,x").
TEST(WorkloadsBenchFlags, EachValueOfAFlagGivenTwiceIsChecked) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--threads", "2", "--threads", "x"}, "--threads must be a positive integer, not x"},
      {{"--threads", "x", "--threads", "2"}, "--threads must be a positive integer, not x"},
      {{"--zipf", "abc", "--zipf", "0.5"}, "--zipf must be a number, not abc"},
      {{"--numa-node", "q", "--numa-node", "0"}, "--numa-node must be an integer, not q"},
      {{"--admit-while-free", "maybe", "--admit-while-free", "on"},
       "--admit-while-free must be on or off, not maybe"},
      {{"--dram", "12XB", "--dram", "1GiB"},
       "--dram: invalid size '12XB': unknown unit 'xb' (use B, KiB, MiB, GiB or TiB)"},
      {{"--arch", "4tier", "--arch", "3tier"},
       "--arch: unknown architecture '4tier' (expected 3tier, basic-nvm, nvm-direct, ssd-bm or "
       "main-memory)"},
      {{"--workload", "ycsb-x", "--workload", "ycsb-ro"},
       "--workload: unknown workload 'ycsb-x' (expected ycsb-ro, ycsb-rw, ycsb-scan or tpcc)"},
      {{"--distribution", "pareto"},
       "--distribution: unknown distribution 'pareto' (expected zipf, uniform or "
       "scrambled-zipf)"},
  };
  for (const auto& [args, expected] : cases)
    EXPECT_EQ(error_of(args), expected) << testing::PrintToString(args);
}

TEST(WorkloadsBenchFlags, FullScanIsSelectable) {
  EXPECT_TRUE(parse({"--workload", "ycsb-scan", "--full-scan"}).ycsb.full_scan);
  EXPECT_FALSE(parse({"--workload", "ycsb-scan"}).ycsb.full_scan);
}

TEST(WorkloadsBenchFlags, DataThatFitsItsTierIsAccepted) {
  // 100k YCSB records are ~160 MiB of pages: fit 1 GiB of NVM and 200 MiB of DRAM.
  EXPECT_NO_THROW(parse({"--arch", "nvm-direct", "--records", "100000"}));
  EXPECT_NO_THROW(parse({"--arch", "main-memory", "--records", "100000"}));
  EXPECT_NO_THROW(parse({"--micro", "--records", "10000000", "--arch", "basic-nvm"}));
}

TEST(WorkloadsBenchFlags, AdmitWhileFreeAndWeakDurabilityReachTheConfig) {
  const BenchOptions defaults = parse({});
  EXPECT_TRUE(defaults.config.admit_while_nvm_has_free_slots);
  EXPECT_FALSE(defaults.config.nvm_weak_durability);
  const BenchOptions o = parse({"--admit-while-free", "off", "--nvm-weak-durability"});
  EXPECT_FALSE(o.config.admit_while_nvm_has_free_slots);
  EXPECT_TRUE(o.config.nvm_weak_durability);
  EXPECT_TRUE(parse({"--admit-while-free", "on"}).config.admit_while_nvm_has_free_slots);
}
