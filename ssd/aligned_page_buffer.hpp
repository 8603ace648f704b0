#pragma once
// Heap memory aligned for O_DIRECT (4 KiB: the largest logical block size we expect).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace tristore {

inline constexpr std::size_t kDirectIoAlignment = 4096;

inline bool is_direct_io_aligned(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kDirectIoAlignment == 0;
}

class AlignedPageBuffer {
 public:
  explicit AlignedPageBuffer(std::size_t bytes)
      : bytes_(bytes),
        data_(static_cast<std::byte*>(
            ::operator new[](bytes, std::align_val_t{kDirectIoAlignment}))) {}
  ~AlignedPageBuffer() { ::operator delete[](data_, std::align_val_t{kDirectIoAlignment}); }
  AlignedPageBuffer(const AlignedPageBuffer&) = delete;
  AlignedPageBuffer& operator=(const AlignedPageBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::byte* data_;
};

}  // namespace tristore
