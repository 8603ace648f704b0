// How an NVM file is persisted (emulation/nvm_persistence.hpp): cache-line flushes on tmpfs and
// on real persistent memory, pmem_msync on a disk file system such as ext4, where a flushed
// line would otherwise sit in the page cache. tests/CMakeLists.txt runs this file twice: as is,
// and with PMEM_IS_PMEM_FORCE=1, under which libpmem calls every mapping persistent memory and
// the flush path must be taken on the disk file too.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "emulation/nvm_device.hpp"
#include "emulation/nvm_persistence.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using testing_support::kNvmBase;
using testing_support::kSsdBase;
using testing_support::TempDir;

bool pmem_forced() {
  const char* force = std::getenv("PMEM_IS_PMEM_FORCE");
  return force != nullptr && std::strcmp(force, "1") == 0;
}

bool on_memory_file_system(const std::string& directory) {
  struct statfs file_system {};
  if (::statfs(directory.c_str(), &file_system) != 0) return false;
  return file_system.f_type == TMPFS_MAGIC || file_system.f_type == RAMFS_MAGIC;
}

NvmDeviceOptions options_for(const std::string& path, bool accept_weak = false) {
  NvmDeviceOptions options;
  options.path = path;
  options.size_bytes = 1 << 20;
  options.create = true;
  options.accept_weak_durability = accept_weak;
  return options;
}

// Writes a line and persists it; returns the msync calls that took.
std::uint64_t persist_one_line(NvmDevice& device) {
  const std::uint64_t before = device.msync_calls();
  // Filled by memcpy: GCC 12 with AVX-512 warns (array-bounds) on a string initialiser here.
  std::array<char, 64> line{};
  std::memcpy(line.data(), "persisted", sizeof "persisted");
  device.write(device.base() + 4096, line.data(), line.size());
  device.persist(device.base() + 4096, line.size());
  return device.msync_calls() - before;
}

TEST(EmulationNvmPersistence, ATmpfsFileIsFlushedWithCacheLineInstructions) {
  TempDir directory(kNvmBase);
  NvmDevice device(options_for(directory.file("tmpfs.nvm")));
  EXPECT_EQ(device.persistence(), pmem_forced() ? NvmPersistence::kPmem : NvmPersistence::kTmpfs);
  EXPECT_EQ(persist_one_line(device), 0u);
}

TEST(EmulationNvmPersistence, ADiskFileIsPersistedWithMsyncUnlessPmemIsForced) {
  if (on_memory_file_system(kSsdBase)) GTEST_SKIP() << kSsdBase << " is not a disk file system";
  TempDir directory(kSsdBase);
  NvmDevice device(options_for(directory.file("disk.nvm")));
  if (pmem_forced()) {
    EXPECT_TRUE(device.is_pmem());
    EXPECT_EQ(device.persistence(), NvmPersistence::kPmem);
    EXPECT_EQ(persist_one_line(device), 0u) << "PMEM_IS_PMEM_FORCE=1: the flush path";
  } else {
    EXPECT_FALSE(device.is_pmem());
    EXPECT_EQ(device.persistence(), NvmPersistence::kMsync);
    EXPECT_EQ(persist_one_line(device), 1u) << "one persist, one msync";
    EXPECT_EQ(nvm_persistence_name(device.persistence()), "msync");
  }
}

TEST(EmulationNvmPersistence, WeakDurabilityOnADiskFileFlushesWithoutMsync) {
  if (on_memory_file_system(kSsdBase)) GTEST_SKIP() << kSsdBase << " is not a disk file system";
  if (pmem_forced()) GTEST_SKIP() << "PMEM_IS_PMEM_FORCE=1 makes every file pmem";
  TempDir directory(kSsdBase);
  NvmDevice device(options_for(directory.file("weak.nvm"), /*accept_weak=*/true));
  EXPECT_EQ(device.persistence(), NvmPersistence::kWeak);
  EXPECT_EQ(persist_one_line(device), 0u);
}

}  // namespace
}  // namespace tristore
