#pragma once
// Tiny NVM and SSD files for buffer-manager tests: NVM under /dev/shm, SSD in a mkdtemp
// directory under /tmp, both removed on destruction. reopen() closes and opens them again.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "nvm/nvm_layout.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"

namespace tristore::testing {

// The buffer-managed configurations every tiers test runs: 3tier, its three switches off one
// by one, basic-nvm and ssd-bm.
struct Architecture {
  const char* name;
  bool nvm;
  bool ssd;
  bool cache_line_grained;
  bool mini_pages;
  bool swizzling;
};

inline constexpr Architecture kArchitectures[] = {
    {"three_tier", true, true, true, true, true},
    {"no_cl_grained", true, true, false, false, true},
    {"no_mini_pages", true, true, true, false, true},
    {"no_swizzling", true, true, true, true, false},
    {"basic_nvm", true, false, false, false, false},
    {"ssd_bm", false, true, false, false, false},
};

// The test-name suffix of a parameter that has a `name` (an Architecture, a configuration):
//   INSTANTIATE_TEST_SUITE_P(All, Suite, ::testing::ValuesIn(kArchitectures), ParamName{});
struct ParamName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return std::string(info.param.name);
  }
};

class TestTiers {
 public:
  static constexpr std::uint64_t kLogBytes = 4096;

  // before_read: SsdOptions::before_read of the SSD file; before_page_read:
  // NvmTierOptions::before_page_read of the NVM file.
  TestTiers(const std::string& tag, std::uint64_t nvm_slots, std::uint64_t ssd_pages,
            std::function<void(PageId)> before_read = {},
            std::function<void(SlotId)> before_page_read = {})
      : before_read_(std::move(before_read)), before_page_read_(std::move(before_page_read)) {
    static int serial = 0;
    const std::string unique =
        tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    if (nvm_slots > 0) nvm_path_ = "/dev/shm/tristore-test-" + unique + ".nvm";
    if (ssd_pages > 0) {
      std::string pattern = "/tmp/tristore-test-" + unique + "-XXXXXX";
      dir_ = mkdtemp(pattern.data());
      ssd_path_ = dir_ + "/pages.ssd";
    }
    nvm_slots_ = nvm_slots;
    ssd_pages_ = ssd_pages;
    open(true);
  }
  ~TestTiers() {
    nvm.reset();
    ssd.reset();
    if (!nvm_path_.empty()) std::filesystem::remove(nvm_path_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void reopen() {
    nvm.reset();
    ssd.reset();
    open(false);
  }
  NvmTierOptions nvm_options(bool create) const {
    NvmTierOptions options;
    options.device.path = nvm_path_;
    options.device.size_bytes = create ? NvmLayout::compute(nvm_slots_, kLogBytes).end : 0;
    options.device.create = create;
    options.log_bytes = kLogBytes;
    options.before_page_read = before_page_read_;
    return options;
  }

  std::unique_ptr<NvmTier> nvm;
  std::unique_ptr<SsdPageFile> ssd;

 private:
  void open(bool create) {
    if (nvm_slots_ > 0)
      nvm = create ? NvmTier::create(nvm_options(true)) : NvmTier::open(nvm_options(false));
    if (ssd_pages_ > 0) {
      SsdOptions options;
      options.path = ssd_path_;
      options.create = create;
      options.before_read = before_read_;
      // Superblock page, two bitmap copies, then the pages.
      options.size_bytes = create ? (ssd_pages_ + 3) * kPageSize : 0;
      ssd = create ? SsdPageFile::create(options) : SsdPageFile::open(options);
    }
  }

  std::function<void(PageId)> before_read_;
  std::function<void(SlotId)> before_page_read_;
  std::string nvm_path_, dir_, ssd_path_;
  std::uint64_t nvm_slots_ = 0, ssd_pages_ = 0;
};

}  // namespace tristore::testing
