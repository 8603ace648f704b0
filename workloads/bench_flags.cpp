#include "workloads/bench_flags.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <tuple>

#include "common/error.hpp"
#include "workloads/size_parser.hpp"

namespace tristore {

namespace {

std::string default_ssd_directory() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
}

std::uint64_t parse_size_flag(std::string_view flag, const std::string& text) {
  std::uint64_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const Error& error) {
    fail("{}: {}", flag, error.what());
  }
  // A fraction of a byte rounds down to 0, which these flags take as "none" or "the default":
  // not what was typed, and an error about 0 would not show what was.
  if (bytes == 0 && text.find_first_of("123456789") != std::string::npos)
    fail("{} {}: rounds down to 0 bytes", flag, text);
  return bytes;
}

// Sets the workload named on the command line.
void set_workload(BenchOptions& o, const std::string& name) {
  o.workload_name = name;
  o.workload = name == "tpcc" ? WorkloadKind::kTpcc : WorkloadKind::kYcsb;
  if (name == "ycsb-ro")
    o.ycsb.kind = YcsbKind::kReadOnly;
  else if (name == "ycsb-rw")
    o.ycsb.kind = YcsbKind::kReadWrite;
  else if (name == "ycsb-scan")
    o.ycsb.kind = YcsbKind::kScan;
  else if (name != "tpcc")
    fail("unknown workload '{}' (expected ycsb-ro, ycsb-rw, ycsb-scan or tpcc)", name);
}

// The result file is checked before the run, which may take long, rather than found unwritable
// after it. Without creating it, so that a run that fails leaves no empty file behind;
// write_json still reports what goes wrong later (a full disk, a directory removed meanwhile).
void check_json_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) fail("--json: the path is empty");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) fail("--json {}: is a directory", path);
  if (fs::exists(status)) {
    if (::access(path.c_str(), W_OK) != 0)
      fail("--json {}: cannot write it: {}", path, std::strerror(errno));
    return;
  }
  const fs::path parent = fs::path(path).parent_path();
  const fs::path directory = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(directory, error))
    fail("--json {}: there is no directory {}", path, directory.string());
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    fail("--json {}: cannot create it in {}: {}", path, directory.string(), std::strerror(errno));
}

std::uint64_t physical_ram_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;  // unknown
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes);
}

void check_size(const std::string& flag, const std::string& text) { parse_size_flag(flag, text); }

}  // namespace

CLI::Option* BenchFlags::check_each(CLI::Option* option, Check check) {
  const std::string flag = option->get_name();
  option->check(CLI::Validator(
      [flag, check = std::move(check)](std::string& text) -> std::string {
        try {
          check(flag, text);
        } catch (const Error& error) {  // the message names its flag first, as all others do
          const std::string_view message = error.what();
          if (message.starts_with(flag)) throw;
          fail("{}: {}", flag, message);
        }
        return "";
      },
      ""));
  return option;
}

BenchFlags::BenchFlags(CLI::App& app) : app_(&app) {
  // A flag given twice takes its last value, so scripts can override their defaults; each
  // value is checked (check_each).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  BenchOptions& o = defaults_;
  check_each(app.add_option("--arch", arch_, "3tier|basic-nvm|nvm-direct|ssd-bm|main-memory")
                 ->capture_default_str(),
             [](const std::string&, const std::string& text) { parse_architecture(text); });
  check_each(app.add_option("--workload", workload_, "ycsb-ro|ycsb-rw|ycsb-scan|tpcc")
                 ->capture_default_str(),
             [](const std::string&, const std::string& text) {
               BenchOptions scratch;
               set_workload(scratch, text);
             });
  check_each(
      app.add_option("--dram", dram_, "DRAM buffer budget, e.g. 200MiB")->capture_default_str(),
      check_size);
  check_each(app.add_option("--nvm", nvm_, "NVM capacity, e.g. 1GiB")->capture_default_str(),
             check_size);
  check_each(app.add_option("--ssd", ssd_, "SSD capacity, e.g. 5GiB")->capture_default_str(),
             check_size);
  add_unsigned(app, "--records", o.ycsb.records, "YCSB: number of records", kPositive);
  add_unsigned(app, "--warehouses", o.warehouses, "TPC-C: number of warehouses", kPositive);
  app.add_option("--nvm-path", nvm_path_,
                 "NVM file (default: /dev/shm/tristore-bench-PID.nvm); must not exist, unless "
                 "--replace-files");
  app.add_option("--ssd-path", ssd_path_,
                 "SSD file (default: $TMPDIR/tristore-bench-PID.ssd); must not exist, unless "
                 "--replace-files");
  app.add_flag("--replace-files", replace_files_,
               "discard what existing files named by --nvm-path and --ssd-path hold and start "
               "from new ones");
  add_unsigned(app, "--nvm-read-ns", o.config.nvm_read_ns, "injected latency per NVM line read",
               kNonNegative);
  add_unsigned(app, "--nvm-write-ns", o.config.nvm_write_ns,
               "injected latency per NVM line written", kNonNegative);
  check_each(app.add_option("--llc", llc_, "simulated last-level cache size (0: this machine's)")
                 ->capture_default_str(),
             check_size);
  check_each(app.add_option("--checkpoint-interval", checkpoint_interval_,
                            "checkpoint after this much log, e.g. 32MiB (0: a quarter of the log)")
                 ->capture_default_str(),
             check_size);
  converts_to<int>(
      app.add_option("--numa-node", o.config.numa_node, "bind NVM to this NUMA node (-1: none)")
          ->capture_default_str(),
      "an integer");
  add_unsigned(app, "--admission-set", o.config.admission_set_size,
               "NVM admission set entries (0: engine default)", kNonNegative);
  converts_to<bool>(
      app.add_option(
             "--admit-while-free", o.config.admit_while_nvm_has_free_slots,
             "3tier: admit DRAM evictions to NVM while it has free slots (not in the paper)")
          ->capture_default_str(),
      "on or off");
  add_unsigned(app, "--ssd-write-behind", o.config.ssd_write_behind_pages,
               "SSD page writes queued behind the engine (0: each written before it goes on)",
               kNonNegative);
  app.add_flag("--nvm-weak-durability", o.config.nvm_weak_durability,
               "NVM file neither DAX nor tmpfs: cache-line flushes only, no msync");
  check_each(
      app.add_option("--distribution", distribution_, "YCSB keys: zipf|uniform|scrambled-zipf")
          ->capture_default_str(),
      [](const std::string&, const std::string& text) { parse_distribution(text); });
  converts_to<double>(
      app.add_option("--zipf", o.ycsb.zipf_theta, "Zipf theta for --distribution zipf")
          ->capture_default_str(),
      "a number");
  converts_to<double>(
      app.add_option("--update-ratio", o.ycsb.update_ratio_percent, "ycsb-rw: percent of updates")
          ->capture_default_str(),
      "a number");
  add_unsigned(app, "--scan-length", o.ycsb.max_scan_length,
               "ycsb-scan: scans are of uniform length in [1, N]", kPositive);
  app.add_flag("--full-scan", o.ycsb.full_scan, "ycsb-scan: every scan reads the whole table");
  converts_to<double>(
      app.add_option("--fill-factor", o.ycsb.fill_factor, "B-tree leaf fill after loading")
          ->capture_default_str(),
      "a number");
  app.add_flag("--micro", o.ycsb.micro, "YCSB with 8-byte keys and 8-byte values (paper 5.5)");
  add_unsigned(app, "--seed", o.ycsb.seed, "random seed", kNonNegative);
  add_unsigned(app, "--threads", o.threads,
               "worker threads sharing the database (TPC-C: one terminal each)", kPositive);
  seconds_option_ = converts_to<double>(
      app.add_option("--seconds", o.seconds, "measured phase length")->capture_default_str(),
      "a number");
  ops_option_ = add_unsigned(app, "--ops", o.ops,
                             "measured phase: exactly this many operations instead", kPositive,
                             /*show_default=*/false);
  ops_option_->excludes(seconds_option_);
  converts_to<double>(app.add_option("--warmup", o.warmup_seconds, "seconds of unmeasured warm-up")
                          ->capture_default_str(),
                      "a number");
  app.add_flag("--no-cl-grained", no_cl_grained_, "3tier: load whole pages from NVM");
  app.add_flag("--no-mini-pages", no_mini_pages_, "3tier: no mini pages");
  app.add_flag("--no-swizzling", no_swizzling_, "3tier: no pointer swizzling");
  app.add_flag("--wear", o.config.nvm_wear_counting,
               "count writes per NVM cache line; the JSON gets their distribution");
  app.add_flag("--restart", o.restart,
               "paper Fig. 17: kill -9 the process running the workload after --seconds, reopen, "
               "time recovery, run the same workload again; throughput sampled throughout");
  converts_to<double>(
      app.add_option("--restart-seconds", o.restart_seconds,
                     "--restart: how long the workload runs after the restart (0: --seconds)")
          ->capture_default_str(),
      "a number");
  converts_to<double>(
      app.add_option("--sample-ms", sample_ms_, "--restart: throughput sampling interval")
          ->capture_default_str(),
      "a number");
  app.add_option("--json", o.json_path, "write the result as JSON to this file");
  app.add_flag("--quiet", quiet_, "no progress lines");

  // A switch takes no value: CLI11 read "--full-scan=2" as on, and "--quiet=foo" failed as
  // "Could not convert" (or, given before a plain --quiet, not at all). "true" is what a plain
  // switch holds.
  for (CLI::Option* option : app.get_options())
    if (option->get_expected_max() == 0 && option != app.get_help_ptr())
      check_each(option, [](const std::string& flag, const std::string& text) {
        if (text != "true") fail("{} takes no value, not {}", flag, text);
      });
}

void BenchFlags::refuse_flags_that_do_not_apply(const BenchOptions& o) const {
  // A flag the run would ignore means the user expects something the run does not do. The tier
  // sizes and the NVM emulation's latencies and LLC describe the machine: every architecture
  // accepts them, as the experiment scripts give all five the same machine.
  const auto refuse_if = [this](bool ignored, const char* flag, std::string_view why) {
    if (ignored && app_->count(flag) > 0) fail("{}: {}", flag, why);
  };
  const Architecture arch = o.config.architecture;
  const std::string_view arch_name = architecture_name(arch);

  // 1. The architecture's tiers and mechanisms.
  const std::string no_nvm_file = fmt::format("{} has no NVM file", arch_name);
  for (const char* flag : {"--nvm-path", "--numa-node", "--nvm-weak-durability"})
    refuse_if(arch == Architecture::kMainMemory, flag, no_nvm_file);
  refuse_if(arch == Architecture::kMainMemory, "--checkpoint-interval",
            "main-memory is volatile: it keeps no log to checkpoint");
  refuse_if(!uses_nvm(arch), "--wear",
            arch == Architecture::kSsdBm
                ? "ssd-bm keeps no pages in NVM (its NVM file holds the log)"
                : "main-memory has no NVM");
  const std::string no_ssd = fmt::format("{} has no SSD tier", arch_name);
  for (const char* flag : {"--ssd-path", "--ssd-write-behind"})
    refuse_if(!uses_ssd(arch), flag, no_ssd);
  const std::string three_tier_only =
      fmt::format("applies to --arch 3tier only, not {}", arch_name);
  for (const char* flag : {"--admission-set", "--admit-while-free", "--no-cl-grained",
                           "--no-mini-pages", "--no-swizzling"})
    refuse_if(arch != Architecture::kThreeTier, flag, three_tier_only);
  const bool names_a_file_it_uses = (arch != Architecture::kMainMemory && !nvm_path_.empty()) ||
                                    (uses_ssd(arch) && !ssd_path_.empty());
  refuse_if(!names_a_file_it_uses, "--replace-files",
            "no --nvm-path or --ssd-path of this run names a file to replace");

  // 2. The workload's settings.
  if (o.workload == WorkloadKind::kTpcc) {
    for (const char* flag : {"--records", "--micro", "--distribution", "--zipf", "--update-ratio",
                             "--scan-length", "--full-scan", "--fill-factor"})
      refuse_if(true, flag, "applies to the YCSB workloads only, not tpcc");
  } else {
    refuse_if(true, "--warehouses",
              fmt::format("applies to --workload tpcc only, not {}", workload_));
    refuse_if(o.ycsb.kind != YcsbKind::kReadWrite, "--update-ratio",
              fmt::format("applies to --workload ycsb-rw only, not {}", workload_));
    for (const char* flag : {"--scan-length", "--full-scan"})
      refuse_if(o.ycsb.kind != YcsbKind::kScan, flag,
                fmt::format("applies to --workload ycsb-scan only, not {}", workload_));
    const bool full_scan = o.ycsb.kind == YcsbKind::kScan && o.ycsb.full_scan;
    for (const char* flag : {"--scan-length", "--distribution", "--zipf"})
      refuse_if(full_scan, flag, "--full-scan reads the whole table from its first key");
    refuse_if(o.ycsb.distribution != KeyDistribution::kZipf, "--zipf",
              fmt::format("applies to --distribution zipf only, not {}", distribution_));
  }

  // 3. The restart experiment's settings.
  for (const char* flag : {"--restart-seconds", "--sample-ms"})
    refuse_if(!o.restart, flag, "applies to --restart only");
}

BenchOptions BenchFlags::finish() const {
  BenchOptions o = defaults_;

  // 0 is the value "no --ops" has, which runs for --seconds instead: refuse it when given.
  if (o.ops == 0 && ops_option_->count() > 0) fail("--ops must be at least 1");

  // 1. Names and sizes.
  o.config.architecture = parse_architecture(arch_);
  set_workload(o, workload_);
  o.ycsb.distribution = parse_distribution(distribution_);
  o.config.dram_bytes = parse_size_flag("--dram", dram_);
  // A DRAM budget is memory the run may fill: more than the machine has cannot fit, and would
  // fail (or summon the OOM killer) only once the data grew that far.
  if (const std::uint64_t ram = physical_ram_bytes(); ram != 0 && o.config.dram_bytes > ram)
    fail("--dram {}: more than this machine's {} of RAM", dram_, human_size(ram));
  o.config.nvm_bytes = parse_size_flag("--nvm", nvm_);
  o.config.ssd_bytes = parse_size_flag("--ssd", ssd_);
  o.config.llc_bytes = parse_size_flag("--llc", llc_);
  o.config.checkpoint_interval_bytes =
      parse_size_flag("--checkpoint-interval", checkpoint_interval_);
  o.config.cache_line_grained = !no_cl_grained_;
  o.config.mini_pages = !no_mini_pages_;
  o.config.swizzling = !no_swizzling_;
  o.progress = !quiet_;
  o.sample_seconds = sample_ms_ / 1000;
  refuse_flags_that_do_not_apply(o);

  // 2. Files: per-process defaults, removed afterwards; named files are the user's to keep.
  const auto pid = static_cast<long>(::getpid());
  o.remove_nvm_file = nvm_path_.empty();
  o.config.nvm_path =
      nvm_path_.empty() ? fmt::format("/dev/shm/tristore-bench-{}.nvm", pid) : nvm_path_;
  o.remove_ssd_file = ssd_path_.empty();
  o.config.ssd_path = ssd_path_.empty() ? (std::filesystem::path(default_ssd_directory()) /
                                           fmt::format("tristore-bench-{}.ssd", pid))
                                              .string()
                                        : ssd_path_;
  // An experiment starts from new files. A named file that exists holds somebody's data: it is
  // replaced only when that is asked for by name, and the engine refuses it otherwise
  // (create-new), should it appear meanwhile.
  const Architecture arch = o.config.architecture;
  const bool nvm_file = arch != Architecture::kMainMemory;
  const bool ssd_file = uses_ssd(arch);
  for (const auto& [used, flag, path] : {std::tuple{nvm_file, "--nvm-path", nvm_path_},
                                         std::tuple{ssd_file, "--ssd-path", ssd_path_}}) {
    std::error_code error;
    if (used && !replace_files_ && !path.empty() && std::filesystem::exists(path, error))
      fail("{} {} exists: pass --replace-files to discard what it holds, or name a new file", flag,
           path);
  }
  if (app_->count("--json") > 0) check_json_path(o.json_path);
  o.config.open_mode = replace_files_ || (nvm_path_.empty() && ssd_path_.empty())
                           ? OpenMode::kCreateReplacing
                           : OpenMode::kCreateNew;

  // 3. Everything else.
  validate(o);
  return o;
}

}  // namespace tristore
