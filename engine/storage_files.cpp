#include "engine/storage_files.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/error.hpp"

namespace tristore {

namespace {

// A clearer message than the mapping or open call would give.
void require_directory(const std::string& path, std::string_view what) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code error;
  if (!std::filesystem::is_directory(parent, error))
    fail("{} path '{}': directory '{}' does not exist", what, path, parent.string());
}

}  // namespace

std::string effective_ssd_path(const Config& config) {
  if (!config.ssd_path.empty()) return config.ssd_path;
  const char* tmpdir = std::getenv("TMPDIR");
  std::string directory = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  return directory + "/tristore.ssd";
}

std::uint64_t nvm_log_bytes(std::uint64_t nvm_bytes) {
  return std::clamp<std::uint64_t>(nvm_bytes / 8 / 4096 * 4096, 64 * 1024, 128 * kMiB);
}

std::unique_ptr<NvmTier> open_nvm_tier(const Config& config, std::uint64_t database_id,
                                       std::uint64_t log_bytes) {
  require_directory(config.nvm_path, "NVM");
  NvmTierOptions options;
  options.device.path = config.nvm_path;
  options.device.size_bytes = config.create ? config.nvm_bytes : 0;
  options.device.create = config.create;
  options.device.numa_node = config.numa_node;
  options.device.read_ns = config.nvm_read_ns;
  options.device.write_ns = config.nvm_write_ns;
  options.device.llc_bytes = config.llc_bytes;
  options.device.wear_counting = config.nvm_wear_counting;
  options.device.crash_simulation = config.nvm_crash_simulation;
  options.device.accept_weak_durability = config.nvm_weak_durability;
  options.log_bytes = log_bytes != 0 ? log_bytes : nvm_log_bytes(config.nvm_bytes);
  options.database_id = database_id;
  return config.create ? NvmTier::create(options) : NvmTier::open(options);
}

std::unique_ptr<NvmTier> open_log_tier(const Config& config) {
  const std::uint64_t log_bytes = nvm_log_bytes(config.nvm_bytes);
  Config log_only = config;
  log_only.nvm_bytes = NvmLayout::compute(1, log_bytes).end;
  return open_nvm_tier(log_only, 0, log_bytes);
}

std::unique_ptr<SsdPageFile> open_ssd_file(const Config& config, std::uint64_t database_id) {
  std::string path = effective_ssd_path(config);
  require_directory(path, "SSD");
  SsdOptions options;
  options.path = path;
  options.size_bytes = config.create ? config.ssd_bytes : 0;
  options.create = config.create;
  options.database_id = database_id;
  options.crash_simulation = config.ssd_crash_simulation;
  return config.create ? SsdPageFile::create(options) : SsdPageFile::open(options);
}

}  // namespace tristore
