#pragma once
// A latch word per page, outside the pages, for changes of leaf entries side by side on the
// architectures whose pages have no frame header to hold one (tiers/main_memory_writes.hpp,
// tiers/nvm_direct_writes.hpp). Mapped as zeros (unlatched) and touched only where used; each
// word a cache line apart, so that threads latching neighbouring pages share no written line.
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/error.hpp"

namespace tristore {

class LatchWords {
 public:
  // `owner` names the architecture in the error if the words cannot be mapped.
  LatchWords(std::uint64_t count, std::string_view owner) : count_(count) {
    void* memory = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED)
      fail("{}: cannot map the latches of {} pages: {}", owner, count, std::strerror(errno));
    lines_ = static_cast<Line*>(memory);
  }
  LatchWords(const LatchWords&) = delete;
  LatchWords& operator=(const LatchWords&) = delete;
  ~LatchWords() { munmap(lines_, bytes()); }

  std::uint64_t& operator[](std::uint64_t page) { return lines_[page].word; }

 private:
  struct alignas(64) Line {
    std::uint64_t word;
  };
  static_assert(sizeof(Line) == 64);
  std::uint64_t bytes() const { return count_ * sizeof(Line); }

  std::uint64_t count_;
  Line* lines_;
};

}  // namespace tristore
