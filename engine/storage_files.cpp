#include "engine/storage_files.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "emulation/file_lock.hpp"
#include "engine/ssd_generation_witness.hpp"
#include "tiers/double_write_area.hpp"

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

// One file of a database, as error messages name it.
struct StorageFile {
  std::string_view what;  // "NVM", "SSD"
  std::string path;
  bool exists() const {
    std::error_code error;
    return std::filesystem::exists(path, error);
  }
  // Before a create replaces the files: an existing one that is not a regular file, cannot be
  // written or is open in another engine is refused while every file is still untouched (each
  // file is locked only as it is created, and the NVM file is created first).
  void require_replaceable() const {
    if (!exists()) return;
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
      fail("{} file {} is not a regular file", what, path);
    const FileLock probe(path, false, what);
  }
};

bool uses_ssd_file(Architecture arch) {
  return arch == Architecture::kThreeTier || arch == Architecture::kSsdBm;
}

// Every durable architecture has an NVM file (ssd-bm: for the log); main-memory has none.
std::vector<StorageFile> files_of(const Config& config) {
  if (config.architecture == Architecture::kMainMemory) return {};
  std::vector<StorageFile> files{{"NVM", config.nvm_path}};
  if (uses_ssd_file(config.architecture)) files.push_back({"SSD", effective_ssd_path(config)});
  return files;
}

// The absolute path with every existing symlink resolved; empty when that fails.
std::filesystem::path canonical_spelling(const std::string& path) {
  std::error_code error;
  std::filesystem::path result =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path, error), error);
  return error ? std::filesystem::path() : result;
}

// By inode when both exist (hard links, symlinks), else by their canonical paths: one file
// used as both would have the SSD tier overwrite the NVM log.
void require_distinct(const StorageFile& nvm, const StorageFile& ssd) {
  std::error_code error;
  bool same = false;
  if (nvm.exists() && ssd.exists()) {
    same = std::filesystem::equivalent(nvm.path, ssd.path, error) && !error;
  } else {
    const std::filesystem::path spelling = canonical_spelling(nvm.path);
    same = !spelling.empty() && spelling == canonical_spelling(ssd.path);
  }
  if (same)
    fail("the NVM path '{}' and the SSD path '{}' name the same file; a database needs two",
         nvm.path, ssd.path);
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

LogAreaParts split_log_area(std::span<std::byte> area, Architecture architecture) {
  if (architecture == Architecture::kNvmDirect || architecture == Architecture::kMainMemory)
    return {area, {}};
  const std::uint64_t double_write_bytes = DoubleWriteArea::bytes_for(area.size());
  if (double_write_bytes >= area.size())
    fail(
        "log area of {} bytes is too small: its double-write area alone takes {} bytes; give "
        "NVM more room (the log area is an eighth of it)",
        area.size(), double_write_bytes);
  return {area.first(area.size() - double_write_bytes), area.last(double_write_bytes)};
}

bool creates_files(const Config& config) {
  const std::vector<StorageFile> files = files_of(config);
  if (files.size() == 2) require_distinct(files[0], files[1]);
  const std::string_view arch = architecture_name(config.architecture);
  const auto existing = std::ranges::count_if(files, &StorageFile::exists);
  switch (config.open_mode) {
    case OpenMode::kCreateReplacing:
      for (const StorageFile& file : files) file.require_replaceable();
      return true;
    case OpenMode::kCreateNew:
      for (const StorageFile& file : files)
        if (file.exists())
          fail("create-new: {} file {} exists already (open it, or create-replacing discards it)",
               file.what, file.path);
      return true;
    case OpenMode::kOpenExisting:
      for (const StorageFile& file : files)
        if (!file.exists()) fail("open-existing: {} file {} does not exist", file.what, file.path);
      return false;
    case OpenMode::kOpenOrCreate: {
      if (existing == 0) return true;
      if (existing == std::ssize(files)) return false;
      // Half a database: opening it cannot work, and creating would destroy the half there is.
      const StorageFile& present = files[0].exists() ? files[0] : files[1];
      const StorageFile& missing = files[0].exists() ? files[1] : files[0];
      fail("{} database incomplete: {} file {} exists but {} file {} does not", arch, present.what,
           present.path, missing.what, missing.path);
    }
  }
  fail("unknown open mode {}", static_cast<int>(config.open_mode));
}

std::unique_ptr<NvmTier> open_nvm_tier(const Config& config, bool create, std::uint64_t database_id,
                                       std::uint64_t log_bytes) {
  require_directory(config.nvm_path, "NVM");
  NvmTierOptions options;
  options.device.path = config.nvm_path;
  options.device.size_bytes = create ? config.nvm_bytes : 0;
  options.device.create = create;
  options.device.numa_node = config.numa_node;
  options.device.read_ns = config.nvm_read_ns;
  options.device.write_ns = config.nvm_write_ns;
  options.device.llc_bytes = config.llc_bytes;
  options.device.wear_counting = config.nvm_wear_counting;
  options.device.crash_simulation = config.nvm_crash_simulation;
  options.device.accept_weak_durability = config.nvm_weak_durability;
  options.log_bytes = log_bytes != 0 ? log_bytes : nvm_log_bytes(config.nvm_bytes);
  options.database_id = database_id;
  options.architecture = architecture_name(config.architecture);
  return create ? NvmTier::create(options) : NvmTier::open(options);
}

std::unique_ptr<NvmTier> open_log_tier(const Config& config, bool create) {
  const std::uint64_t log_bytes = nvm_log_bytes(config.nvm_bytes);
  Config log_only = config;
  log_only.nvm_bytes = NvmLayout::compute(1, log_bytes).end;
  return open_nvm_tier(log_only, create, 0, log_bytes);
}

std::unique_ptr<SsdPageFile> open_ssd_file(const Config& config, bool create,
                                           std::uint64_t database_id, NvmTier* witness) {
  if (config.ssd_write_behind_pages > Config::kMaxSsdWriteBehindPages)
    fail("ssd_write_behind_pages {}: at most {} pages", config.ssd_write_behind_pages,
         Config::kMaxSsdWriteBehindPages);
  std::string path = effective_ssd_path(config);
  require_directory(path, "SSD");
  SsdOptions options;
  options.path = path;
  options.size_bytes = create ? config.ssd_bytes : 0;
  options.create = create;
  options.database_id = database_id;
  options.architecture = architecture_name(config.architecture);
  options.crash_simulation = config.ssd_crash_simulation;
  options.write_behind_pages = config.ssd_write_behind_pages;
  if (witness != nullptr) {
    if (!create) options.durable_generation = read_ssd_generation_witness(*witness);
    options.on_generation_durable = [witness](std::uint64_t generation) {
      record_ssd_generation_witness(*witness, generation);
    };
  }
  return create ? SsdPageFile::create(options) : SsdPageFile::open(options);
}

}  // namespace tristore
