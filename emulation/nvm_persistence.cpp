#include "emulation/nvm_persistence.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace tristore {

std::string_view nvm_persistence_name(NvmPersistence persistence) {
  switch (persistence) {
    case NvmPersistence::kPmem:
      return "pmem";
    case NvmPersistence::kTmpfs:
      return "tmpfs";
    case NvmPersistence::kMsync:
      return "msync";
    case NvmPersistence::kWeak:
      return "weak";
  }
  return "?";
}

NvmPersistence choose_nvm_persistence(bool is_pmem, const std::string& path,
                                      bool accept_weak_durability) {
  if (is_pmem) return NvmPersistence::kPmem;
  struct statfs file_system {};
  if (::statfs(path.c_str(), &file_system) != 0)
    fail("cannot tell the file system of NVM file {}: {}", path, std::strerror(errno));
  if (file_system.f_type == TMPFS_MAGIC || file_system.f_type == RAMFS_MAGIC)
    return NvmPersistence::kTmpfs;
  return accept_weak_durability ? NvmPersistence::kWeak : NvmPersistence::kMsync;
}

}  // namespace tristore
