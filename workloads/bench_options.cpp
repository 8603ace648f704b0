#include "workloads/bench_options.hpp"

#include <cmath>

#include "common/error.hpp"
#include "workloads/size_parser.hpp"
#include "workloads/tree_size_estimate.hpp"

namespace tristore {

bool uses_dram(Architecture arch) { return arch != Architecture::kNvmDirect; }

bool uses_nvm(Architecture arch) {
  return arch == Architecture::kThreeTier || arch == Architecture::kBasicNvm ||
         arch == Architecture::kNvmDirect;
}

bool uses_ssd(Architecture arch) {
  return arch == Architecture::kThreeTier || arch == Architecture::kSsdBm;
}

namespace {

constexpr double kMaxSeconds = 1e6;  // about 11 days: a phase's clock cannot overflow
constexpr std::uint64_t kMaxMicroRecords = std::uint64_t{1} << 48;

// The tier that holds every page of the architecture, so bounds the data set: 3tier and
// ssd-bm give every page an SSD home.
void check_data_fits(const BenchOptions& options, std::uint64_t data_bytes) {
  const Config& config = options.config;
  const std::string_view arch = architecture_name(config.architecture);
  std::uint64_t capacity = 0;
  std::string_view flag;
  switch (config.architecture) {
    case Architecture::kMainMemory:
      capacity = config.dram_bytes;
      flag = "--dram";
      break;
    case Architecture::kNvmDirect:
    case Architecture::kBasicNvm:
      capacity = config.nvm_bytes;
      flag = "--nvm";
      break;
    case Architecture::kSsdBm:
    case Architecture::kThreeTier:
      capacity = config.ssd_bytes;
      flag = "--ssd";
      break;
  }
  if (data_bytes > capacity)
    fail("--records {} needs about {} of B-tree pages, more than {} {} that {} keeps them in",
         options.ycsb.records, human_size(data_bytes), flag, human_size(capacity), arch);
}

}  // namespace

void validate(const BenchOptions& options) {
  const Config& config = options.config;
  const Architecture arch = config.architecture;

  // 1. What the driver supports.
  if (options.threads == 0 || options.threads > 256)
    fail("--threads {}: between 1 and 256", options.threads);
  if (options.config.ssd_write_behind_pages > Config::kMaxSsdWriteBehindPages)
    fail("--ssd-write-behind {}: at most {} pages", options.config.ssd_write_behind_pages,
         Config::kMaxSsdWriteBehindPages);
  if (!(options.seconds > 0 && options.seconds <= kMaxSeconds))
    fail("--seconds must be a positive number of seconds up to {}, not {}", kMaxSeconds,
         options.seconds);
  if (!(options.warmup_seconds >= 0 && options.warmup_seconds <= kMaxSeconds))
    fail("--warmup must be a non-negative number of seconds up to {}, not {}", kMaxSeconds,
         options.warmup_seconds);

  // 2. A restart run (paper Figure 17) crashes a durable database after a timed phase.
  if (options.restart) {
    if (arch == Architecture::kMainMemory)
      fail("--restart: main-memory is volatile, there is nothing to restart from");
    if (options.ops != 0) fail("--restart runs for --seconds, not --ops");
    if (config.nvm_wear_counting) fail("--restart and --wear cannot be combined");
    if (!(options.restart_seconds >= 0 && options.restart_seconds <= kMaxSeconds))
      fail("--restart-seconds must be a non-negative number of seconds up to {}, not {}",
           kMaxSeconds, options.restart_seconds);
    if (!(options.sample_seconds >= 0.001 && options.sample_seconds <= 1))
      fail("--sample-ms must lie in [1, 1000], not {}", options.sample_seconds * 1000);
  }

  // 3. Budgets the architecture needs.
  if (uses_dram(arch) && config.dram_bytes == 0)
    fail("--dram 0: {} needs a DRAM budget", architecture_name(arch));
  if (uses_nvm(arch) && config.nvm_bytes == 0)
    fail("--nvm 0: {} needs NVM", architecture_name(arch));
  if (uses_ssd(arch) && config.ssd_bytes == 0)
    fail("--ssd 0: {} needs an SSD", architecture_name(arch));
  if (config.architecture != Architecture::kThreeTier &&
      (!config.cache_line_grained || !config.mini_pages || !config.swizzling))
    fail("--no-cl-grained, --no-mini-pages and --no-swizzling apply to --arch 3tier only");

  // 4. The workload's own settings.
  if (options.workload == WorkloadKind::kTpcc) {
    if (options.warehouses == 0) fail("--warehouses must be at least 1");
    if (options.ycsb.micro) fail("--micro applies to the YCSB workloads only");
    return;
  }
  const YcsbOptions& ycsb = options.ycsb;
  if (ycsb.records == 0) fail("--records must be at least 1");
  if (!ycsb.micro && ycsb.records > (std::uint64_t{1} << 32))
    fail("--records {} exceeds the 4-byte YCSB key space (use --micro for 8-byte keys)",
         ycsb.records);
  // Far beyond any SSD, and small enough that the size estimate below cannot overflow.
  if (ycsb.records > kMaxMicroRecords)
    fail("--records {}: at most {} (2^48)", ycsb.records, kMaxMicroRecords);
  if (!(ycsb.zipf_theta >= 0) || !std::isfinite(ycsb.zipf_theta))
    fail("--zipf must be a finite number >= 0, not {}", ycsb.zipf_theta);
  if (!(ycsb.update_ratio_percent >= 0 && ycsb.update_ratio_percent <= 100))
    fail("--update-ratio must be a percentage in [0, 100], not {}", ycsb.update_ratio_percent);
  if (!(ycsb.fill_factor > 0 && ycsb.fill_factor <= 1))
    fail("--fill-factor must lie in (0, 1], not {}", ycsb.fill_factor);
  if (ycsb.max_scan_length == 0) fail("--scan-length must be at least 1");

  // 5. The data must fit the tier that holds it.
  check_data_fits(options, estimated_tree_bytes(ycsb.records, ycsb_key_bytes(ycsb),
                                                ycsb_value_bytes(ycsb), ycsb.fill_factor));
}

}  // namespace tristore
