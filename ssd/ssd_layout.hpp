#pragma once
// Where things lie in an SSD page file of a given size (see ssd_page_file.hpp for the picture).
#include <cstdint>

#include "common/types.hpp"

namespace tristore {

struct SsdLayout {
  static constexpr std::uint64_t kBitsPerBitmapPage = kPageSize * 8;
  // Two bits per data page in each bitmap copy: allocated, then claimed for a new page since
  // the last catalog (SsdPageFile::confirm_claims), each in its half of the copy.
  static constexpr std::uint64_t kDataPagesPerBitmapPage = kBitsPerBitmapPage / 2;
  static constexpr std::uint64_t kSuperblockCopySize = 4096;
  static constexpr std::uint64_t kMinPages = 4;  // superblock, two bitmap copies, one data page

  std::uint64_t size_bytes = 0;     // as requested at create
  std::uint64_t page_capacity = 0;  // data pages
  std::uint64_t bitmap_pages = 0;   // per bitmap copy

  // The most data pages that fit in size_bytes with their bitmaps; page_capacity 0 when too small.
  static constexpr SsdLayout for_size(std::uint64_t size_bytes) {
    SsdLayout layout;
    layout.size_bytes = size_bytes;
    std::uint64_t pages = size_bytes / kPageSize;
    if (pages < kMinPages) return layout;
    // N data pages need B = ceil(N / per_page) bitmap pages per copy and 1 + 2B + N <= pages.
    std::uint64_t bitmap_pages =
        (pages - 1 + kDataPagesPerBitmapPage + 1) / (kDataPagesPerBitmapPage + 2);
    layout.bitmap_pages = bitmap_pages;
    layout.page_capacity = pages - 1 - 2 * bitmap_pages;
    return layout;
  }

  constexpr std::uint64_t file_size() const {
    return (data_start_page() + page_capacity) * kPageSize;
  }
  constexpr std::uint64_t bitmap_offset(unsigned copy) const {
    return (1 + copy * bitmap_pages) * kPageSize;
  }
  constexpr std::uint64_t bitmap_bytes() const { return bitmap_pages * kPageSize; }
  // Where, in a copy, the claims half begins (the allocation half is before it).
  constexpr std::uint64_t claims_offset_in_copy() const { return bitmap_bytes() / 2; }
  static constexpr std::uint64_t superblock_offset(unsigned copy) {
    return copy * kSuperblockCopySize;
  }
  constexpr std::uint64_t page_offset(PageId id) const {
    return (data_start_page() + id) * kPageSize;
  }

 private:
  constexpr std::uint64_t data_start_page() const { return 1 + 2 * bitmap_pages; }
};

static_assert(SsdLayout::for_size(4 * kPageSize).page_capacity == 1);
static_assert(SsdLayout::for_size(3 * kPageSize).page_capacity == 0);
static_assert(SsdLayout::for_size((1 + 2 + SsdLayout::kDataPagesPerBitmapPage) * kPageSize)
                  .bitmap_pages == 1);
static_assert(SsdLayout::for_size((1 + 2 + SsdLayout::kDataPagesPerBitmapPage) * kPageSize)
                  .page_capacity == SsdLayout::kDataPagesPerBitmapPage);
static_assert(SsdLayout::for_size((2 + 2 + SsdLayout::kDataPagesPerBitmapPage) * kPageSize)
                  .bitmap_pages == 2);
// Each half of a copy holds a bit for every data page.
static_assert(SsdLayout::for_size((1 + 2 + SsdLayout::kDataPagesPerBitmapPage) * kPageSize)
                      .claims_offset_in_copy() *
                  8 ==
              SsdLayout::kDataPagesPerBitmapPage);

}  // namespace tristore
