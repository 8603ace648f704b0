#pragma once
// How a flush of the mapped NVM file reaches its persistence domain, chosen once per mapping.
// libpmem's pmem_flush (cache-line write-back) is enough only where the mapping is the medium:
// a DAX file (pmem_is_pmem) or tmpfs (the medium is memory; a process crash keeps it). On any
// other file the mapping is the page cache, so a flushed line is not on the disk until the
// page is written back: there a flush must be pmem_msync, or the engine would claim a
// durability it does not have.
#include <string>
#include <string_view>

namespace tristore {

enum class NvmPersistence {
  kPmem,   // pmem_is_pmem: pmem_flush + pmem_drain; survives a power loss
  kTmpfs,  // tmpfs: the same instructions; survives a process crash, not a reboot
  kMsync,  // any other file system: pmem_msync per flush; survives a power loss (slowly)
  kWeak,   // any other file system, msync declined: survives only a process crash
};

// "pmem", "tmpfs", "msync", "weak" (the JSON result's nvm_persistence).
std::string_view nvm_persistence_name(NvmPersistence persistence);

// The mode for a file mapped at `path`: kPmem when libpmem says is_pmem, kTmpfs on tmpfs or
// ramfs, else kMsync, or kWeak when `accept_weak_durability`.
NvmPersistence choose_nvm_persistence(bool is_pmem, const std::string& path,
                                      bool accept_weak_durability);

}  // namespace tristore
