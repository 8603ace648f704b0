// Runs the tristore-bench binary as a user would: bad flags and impossible sizes must end in a
// one-line error and exit status 2, never a crash; a good run writes the JSON result.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdint>
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

  // Files inside the test's own directory, those of 3tier (the default architecture).
  std::string files() const { return nvm_file() + " " + ssd_file(); }
  std::string nvm_file() const { return "--nvm-path '" + (dir_ / "x.nvm").string() + "'"; }
  std::string ssd_file() const { return "--ssd-path '" + (dir_ / "x.ssd").string() + "'"; }
  // The files `args`' architecture has: a path for a tier it lacks is refused.
  std::string files_of(const std::string& args) const {
    if (args.find("main-memory") != std::string::npos) return "";
    if (args.find("nvm-direct") != std::string::npos || args.find("basic-nvm") != std::string::npos)
      return nvm_file();
    return files();
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
    const Outcome outcome = run(args + " " + files_of(args));
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
  const Outcome outcome = run(
      "--arch main-memory --records 2000 --ops 500 --warmup 0 --dram 16MiB --json '" + json + "'");
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

// Each of these crashed (SIGFPE), failed with std::bad_alloc, ran on with a bogus result (0
// ops in 0 s) or for ever, or loaded every record before it was refused.
TEST_F(WorkloadsBenchCli, OutOfRangeNumbersAreRefusedBeforeAnythingRuns) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--threads 0", "--threads 0: between 1 and 256"},
      {"--seconds 1e10", "--seconds must be a positive number of seconds up to"},
      {"--warmup 1e300", "--warmup must be a non-negative number of seconds up to"},
      {"--restart --seconds 1 --restart-seconds 1e300", "--restart-seconds must be"},
      {"--micro --records 18446744073709551615", "at most 281474976710656 (2^48)"},
      {"--llc 1TiB --nvm-read-ns 100", "simulated LLC of 1099511627776 bytes: at most"},
      {"--admission-set 18446744073709551615", "admission set of 18446744073709551615 entries"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome =
        run("--records 1000 --seconds 1 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB " + args +
            " " + files());
    EXPECT_EQ(outcome.status, 2) << args << ": " << outcome.err;
    EXPECT_NE(outcome.err.find(expected), std::string::npos) << args << ": " << outcome.err;
    EXPECT_EQ(outcome.err.find('\n'), outcome.err.size() - 1) << args << ": " << outcome.err;
    EXPECT_EQ(outcome.out.find("loading"), std::string::npos) << args << ": refused only then";
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.nvm")) << "nothing was created";
}

// A file named by --nvm-path or --ssd-path that exists holds somebody's data: the bench used to
// replace it without a word (a text file became an SSD file). Now only --replace-files does.
TEST_F(WorkloadsBenchCli, ANamedFileThatExistsIsReplacedOnlyWhenAskedTo) {
  const std::filesystem::path precious = dir_ / "x.ssd";
  std::ofstream(precious) << "user data\n";
  const std::string args =
      "--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB " + files();
  const Outcome refused = run(args);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_EQ(refused.err, "tristore-bench: --ssd-path " + precious.string() +
                             " exists: pass --replace-files to discard what it holds, or name a "
                             "new file\n");
  EXPECT_EQ(read(precious), "user data\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.nvm")) << "nothing was created";

  const Outcome replaced = run(args + " --replace-files");
  EXPECT_EQ(replaced.status, 0) << replaced.err;
  EXPECT_NE(read(precious), "user data\n");
  // A second run over the files the first left needs the flag too.
  EXPECT_EQ(run(args).status, 2);
  EXPECT_EQ(run(args + " --replace-files").status, 0);
}

// Replacing asked for, but the SSD file cannot be had (not a regular file, or held by another
// engine): refused before the NVM file, which replacing truncates first, is touched.
TEST_F(WorkloadsBenchCli, ReplacingRefusesAnSsdFileItCannotHaveBeforeTheNvmFileChanges) {
  const std::filesystem::path nvm = dir_ / "x.nvm";
  std::ofstream(nvm) << "an NVM file's bytes\n";
  const std::string sizes =
      "--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd "
      "64MiB --replace-files --nvm-path '" +
      nvm.string() + "' ";
  const Outcome device = run(sizes + "--ssd-path /dev/null");
  EXPECT_EQ(device.status, 2) << device.err;
  EXPECT_EQ(device.err, "tristore-bench: SSD file /dev/null is not a regular file\n");
  EXPECT_EQ(read(nvm), "an NVM file's bytes\n");

  const std::filesystem::path held = dir_ / "held.ssd";
  std::ofstream(held) << "another engine's SSD file\n";
  const int fd = ::open(held.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const Outcome in_use = run(sizes + "--ssd-path '" + held.string() + "'");
  ::close(fd);
  EXPECT_EQ(in_use.status, 2) << in_use.err;
  EXPECT_EQ(in_use.err, "tristore-bench: SSD file " + held.string() +
                            " is already open (in use by another engine)\n");
  EXPECT_EQ(read(nvm), "an NVM file's bytes\n");
  EXPECT_EQ(read(held), "another engine's SSD file\n");
}

// The files the bench names itself (a GiB of RAM in /dev/shm by default) used to stay behind
// when Ctrl-C or kill ended a run; the signal still ends it.
TEST_F(WorkloadsBenchCli, FilesItNamedItselfGoWhenASignalEndsTheRun) {
  const std::filesystem::path pid_file = dir_ / "pid", status_file = dir_ / "status";
  const std::string script =
      "cd '" + dir_.string() + "'\nTMPDIR='" + dir_.string() + "' '" + TRISTORE_BENCH_PATH +
      "' --records 2000 --seconds 60 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB --quiet "
      ">/dev/null 2>&1 & pid=$!; echo $pid >pid; "
      "for i in $(seq 200); do [ -e /dev/shm/tristore-bench-$pid.nvm ] && "
      "[ -e tristore-bench-$pid.ssd ] && break; sleep 0.05; done; sleep 0.3; kill -TERM $pid; "
      "wait $pid; echo $? >status";
  const std::filesystem::path script_file = dir_ / "run.sh";
  std::ofstream(script_file) << script << "\n";
  ASSERT_EQ(std::system(("bash '" + script_file.string() + "'").c_str()), 0);
  const std::string pid = read(pid_file).substr(0, read(pid_file).find('\n'));
  EXPECT_EQ(read(status_file), "143\n") << "ended by SIGTERM (128 + 15)";
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/tristore-bench-" + pid + ".nvm"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / ("tristore-bench-" + pid + ".ssd")));
}

// Each of these ran, the flag ignored without a word: a flag given for a run it cannot affect
// is refused, naming the flag and why.
TEST_F(WorkloadsBenchCli, FlagsThatDoNotApplyToTheRunAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--distribution uniform --zipf 0.5",
       "--zipf: applies to --distribution zipf only, not uniform"},
      {"--full-scan", "--full-scan: applies to --workload ycsb-scan only, not ycsb-ro"},
      {"--workload ycsb-scan --full-scan --scan-length 10",
       "--scan-length: --full-scan reads the whole table from its first key"},
      {"--update-ratio 50", "--update-ratio: applies to --workload ycsb-rw only, not ycsb-ro"},
      {"--warehouses 2", "--warehouses: applies to --workload tpcc only, not ycsb-ro"},
      {"--workload tpcc --records 1000", "--records: applies to the YCSB workloads only, not tpcc"},
      {"--arch basic-nvm " + nvm_file() + " " + ssd_file(),
       "--ssd-path: basic-nvm has no SSD tier"},
      {"--arch nvm-direct --ssd-write-behind 0", "--ssd-write-behind: nvm-direct has no SSD tier"},
      {"--arch main-memory " + nvm_file(), "--nvm-path: main-memory has no NVM file"},
      {"--arch main-memory --checkpoint-interval 1MiB",
       "--checkpoint-interval: main-memory is volatile: it keeps no log to checkpoint"},
      {"--arch ssd-bm --wear", "--wear: ssd-bm keeps no pages in NVM (its NVM file holds the log)"},
      {"--arch ssd-bm --admission-set 100",
       "--admission-set: applies to --arch 3tier only, not ssd-bm"},
      {"--replace-files",
       "--replace-files: no --nvm-path or --ssd-path of this run names a file to "
       "replace"},
      {"--sample-ms 50", "--sample-ms: applies to --restart only"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome =
        run("--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB " + args);
    EXPECT_EQ(outcome.status, 2) << args;
    EXPECT_EQ(outcome.err, "tristore-bench: " + expected + "\n") << args;
  }
  // The tier sizes and NVM latencies describe the machine: the experiment scripts give every
  // architecture the same ones.
  const Outcome machine =
      run("--arch main-memory --records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd "
          "64MiB --nvm-read-ns 500 --llc 1MiB --quiet");
  EXPECT_EQ(machine.status, 0) << machine.err;
}

// --dram 0.0001 was refused as "--dram 0: 3tier needs a DRAM budget", and --llc 0.5 ran with
// this machine's LLC (what 0 means): a size that rounds down to 0 bytes is refused as typed.
TEST_F(WorkloadsBenchCli, ASizeThatRoundsDownToZeroBytesIsRefusedAsTyped) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--dram 0.0001", "--dram 0.0001: rounds down to 0 bytes"},
      {"--nvm 0.5B", "--nvm 0.5B: rounds down to 0 bytes"},
      {"--llc 0.5", "--llc 0.5: rounds down to 0 bytes"},
      {"--checkpoint-interval 0.9", "--checkpoint-interval 0.9: rounds down to 0 bytes"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome = run("--records 1000 --ops 10 --warmup 0 " + args + " " + files());
    EXPECT_EQ(outcome.status, 2) << args;
    EXPECT_EQ(outcome.err, "tristore-bench: " + expected + "\n") << args;
  }
  EXPECT_EQ(run("--dram 0 " + files()).err,
            "tristore-bench: --dram 0: 3tier needs a DRAM budget\n");
}

// A flag given twice keeps its last value (the experiment scripts override their defaults so),
// but every value is checked: "--threads 2 --threads x" said "Could not convert: --threads =
// 2,x", and "--threads x --threads 2" ran without a word about the x.
TEST_F(WorkloadsBenchCli, EachValueOfAFlagGivenTwiceIsCheckedAndNamedAlone) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--threads 2 --threads x", "--threads must be a positive integer, not x"},
      {"--threads x --threads 2", "--threads must be a positive integer, not x"},
      {"--seconds 1 --seconds soon", "--seconds must be a number, not soon"},
      {"--update-ratio lots --update-ratio 50", "--update-ratio must be a number, not lots"},
      {"--dram 12XB --dram 16MiB",
       "--dram: invalid size '12XB': unknown unit 'xb' (use B, KiB, MiB, GiB or TiB)"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome =
        run("--workload ycsb-rw --records 1000 --warmup 0 --dram 16MiB --nvm "
            "16MiB --ssd 64MiB " +
            args + " " + files());
    EXPECT_EQ(outcome.status, 2) << args;
    EXPECT_EQ(outcome.err, "tristore-bench: " + expected + "\n") << args;
    EXPECT_EQ(outcome.out.find("loading"), std::string::npos) << args;
  }
  const Outcome last_wins =
      run("--records 1000 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB "
          "--seconds 100 --seconds 0.1 --quiet " +
          files());
  EXPECT_EQ(last_wins.status, 0) << last_wins.err;
}

// A --json path that cannot be written was reported only after the whole run. It is checked
// before anything loads, and not created then (a failed run leaves no empty file).
TEST_F(WorkloadsBenchCli, AJsonPathThatCannotBeWrittenIsRefusedBeforeTheRun) {
  const std::string missing = (dir_ / "missing" / "result.json").string();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"'" + missing + "'",
       "--json " + missing + ": there is no directory " + (dir_ / "missing").string()},
      {"'" + dir_.string() + "'", "--json " + dir_.string() + ": is a directory"},
      {"''", "--json: the path is empty"},
  };
  const std::filesystem::path locked = dir_ / "locked";
  std::filesystem::create_directory(locked);
  std::filesystem::permissions(
      locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() != 0)  // root writes there all the same
    cases.push_back({"'" + (locked / "r.json").string() + "'",
                     "--json " + (locked / "r.json").string() + ": cannot create it in " +
                         locked.string() + ": Permission denied"});
  for (const auto& [json, expected] : cases) {
    const Outcome outcome =
        run("--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB --json " +
            json + " " + files());
    EXPECT_EQ(outcome.status, 2) << json;
    EXPECT_EQ(outcome.err, "tristore-bench: " + expected + "\n") << json;
    EXPECT_EQ(outcome.out.find("loading"), std::string::npos) << json << ": refused only then";
  }
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);

  // A run that fails after the check leaves no file behind.
  const std::string json = (dir_ / "result.json").string();
  const Outcome failed =
      run("--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd "
          "64MiB --json '" +
          json + "' --nvm-path /dev/null --ssd-path '" + (dir_ / "x.ssd").string() +
          "' --replace-files");
  EXPECT_NE(failed.status, 0);
  EXPECT_FALSE(std::filesystem::exists(json));
}

// A DRAM budget beyond the machine's RAM was accepted: it cannot fit.
TEST_F(WorkloadsBenchCli, ADramBudgetBeyondTheMachinesRamIsRefused) {
  const auto ram = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                   static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
  const std::string too_much = std::to_string(ram + 1024 * 1024);
  for (const char* arch : {"main-memory", "3tier"}) {
    const Outcome outcome =
        run(std::string("--arch ") + arch + " --records 1000 --ops 10 --warmup 0 --dram " +
            too_much + " " + files_of(arch));
    EXPECT_EQ(outcome.status, 2) << arch << ": " << outcome.err;
    const std::string start = "tristore-bench: --dram " + too_much + ": more than this machine's ";
    EXPECT_EQ(outcome.err.rfind(start, 0), 0U) << outcome.err;
    EXPECT_TRUE(outcome.err.ends_with(" of RAM\n")) << outcome.err;
    EXPECT_EQ(outcome.err.find('\n'), outcome.err.size() - 1) << outcome.err;
  }
}

// "--full-scan=2" ran as --full-scan, "--quiet=foo --quiet" ran quietly, "--quiet=foo" said
// "Could not convert: --quiet = foo": a switch given a value is refused, naming it.
TEST_F(WorkloadsBenchCli, ASwitchGivenAValueIsRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--workload ycsb-scan --full-scan=2", "--full-scan takes no value, not 2"},
      {"--quiet=foo --quiet", "--quiet takes no value, not foo"},
      {"--wear=no", "--wear takes no value, not no"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome outcome =
        run("--records 1000 --ops 10 --warmup 0 --dram 16MiB --nvm 16MiB --ssd 64MiB " + args +
            " " + files());
    EXPECT_EQ(outcome.status, 2) << args;
    EXPECT_EQ(outcome.err, "tristore-bench: " + expected + "\n") << args;
  }
}
