#include "tiers/double_write_area.hpp"

#include <algorithm>
#include <cstring>

#include "common/checksum.hpp"
#include "common/error.hpp"
#include "nvm/nvm_page_checksum.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"

namespace tristore {

namespace {
constexpr std::uint32_t kEntryMagic = 0x54445752;  // "RWDT"
constexpr std::uint64_t kUnit = 4096;

std::uint64_t align_line(std::uint64_t bytes) {
  return (bytes + kCacheLineSize - 1) / kCacheLineSize * kCacheLineSize;
}
}  // namespace

struct DoubleWriteArea::EntryHeader {
  std::uint32_t checksum;  // crc32c of the bytes after it: header, indices and lines
  std::uint32_t magic;
  std::uint64_t sequence;   // rises with every entry staged, across opens
  std::uint64_t target_id;  // NVM slot or SSD page id
  PageId page_id;
  Lsn lsn;  // the page's LSN in the staged bytes
  std::uint16_t line_count;
  Target target;
  std::uint8_t reserved[21];

  std::uint64_t size() const {
    static_assert(sizeof(EntryHeader) == kCacheLineSize, "the header is one line");
    return kCacheLineSize + align_line(line_count) + std::uint64_t{line_count} * kCacheLineSize;
  }
};

std::uint64_t DoubleWriteArea::bytes_for(std::uint64_t log_area_bytes) {
  const std::uint64_t least = (2 * kMaxEntryBytes + kUnit - 1) / kUnit * kUnit;
  return std::clamp<std::uint64_t>(log_area_bytes / 16 / kUnit * kUnit, least, 4ull << 20);
}

DoubleWriteArea::DoubleWriteArea(NvmDevice& device, std::span<std::byte> area,
                                 std::function<void()> sync_ssd)
    : device_(device), area_(area), sync_ssd_(std::move(sync_ssd)) {
  if (area_.size() < 2 * kMaxEntryBytes)
    fail("double-write area of {} bytes is too small: it needs {}", area_.size(),
         2 * kMaxEntryBytes);
  scratch_.resize(kMaxEntryBytes);
}

void DoubleWriteArea::stage_nvm_lines(SlotId slot, PageId page_id, Lsn lsn,
                                      std::span<const std::uint8_t> indices,
                                      std::span<const std::byte* const> lines) {
  last_nvm_entry_ = stage(Target::kNvmSlot, slot, page_id, lsn, indices, lines);
}

void DoubleWriteArea::nvm_lines_written() { retire(last_nvm_entry_); }

void DoubleWriteArea::ssd_synced() {
  if (unsynced_ssd_.empty()) return;
  for (const Span& entry : unsynced_ssd_) retire(entry.begin);
  device_.fence();
  unsynced_ssd_.clear();
}

void DoubleWriteArea::retire(std::uint64_t offset) {
  static constexpr std::uint64_t kZero = 0;
  std::byte* at = area_.data() + offset;
  device_.write_double_write(at, &kZero, sizeof(kZero));
  device_.flush(at, sizeof(kZero));
}

void DoubleWriteArea::stage_ssd_page(PageId page_id, Lsn lsn, const std::byte* page) {
  std::uint8_t indices[kLinesPerPage];
  const std::byte* lines[kLinesPerPage];
  for (std::uint32_t i = 0; i < kLinesPerPage; ++i) {
    indices[i] = static_cast<std::uint8_t>(i);
    lines[i] = page + i * kCacheLineSize;
  }
  const std::uint64_t begin = stage(Target::kSsdPage, page_id, page_id, lsn, indices, lines);
  unsynced_ssd_.push_back({begin, head_});
}

std::uint64_t DoubleWriteArea::place(std::uint64_t size) {
  // 1. Entries never wrap: one that does not fit before the end starts the ring again.
  if (head_ + size > area_.size()) head_ = 0;
  const std::uint64_t begin = head_, end = head_ + size;
  // 2. An SSD page staged there may not be durable in place yet: sync before overwriting.
  const bool overlaps = std::any_of(unsynced_ssd_.begin(), unsynced_ssd_.end(),
                                    [&](Span s) { return s.begin < end && begin < s.end; });
  if (overlaps) {
    sync_ssd_();
    ssd_synced();
  }
  head_ = end;
  return begin;
}

std::uint64_t DoubleWriteArea::stage(Target target, std::uint64_t target_id, PageId page_id,
                                     Lsn lsn, std::span<const std::uint8_t> indices,
                                     std::span<const std::byte* const> lines) {
  // 1. Assemble the entry in DRAM: header, indices, lines; the checksum last.
  EntryHeader header{};
  header.magic = kEntryMagic;
  header.sequence = next_sequence_++;
  header.target_id = target_id;
  header.page_id = page_id;
  header.lsn = lsn;
  header.line_count = static_cast<std::uint16_t>(indices.size());
  header.target = target;
  const std::uint64_t size = header.size();
  std::byte* out = scratch_.data();
  std::memset(out + sizeof(header), 0, align_line(indices.size()));
  std::memcpy(out + sizeof(header), indices.data(), indices.size());
  std::byte* line_out = out + sizeof(header) + align_line(indices.size());
  for (std::size_t i = 0; i < lines.size(); ++i)
    std::memcpy(line_out + i * kCacheLineSize, lines[i], kCacheLineSize);
  std::memcpy(out, &header, sizeof(header));
  header.checksum = crc32c(out + sizeof(header.checksum), size - sizeof(header.checksum));
  std::memcpy(out, &header, sizeof(header));
  // 2. Into the ring, durable before the caller writes in place.
  const std::uint64_t begin = place(size);
  std::byte* at = area_.data() + begin;
  device_.write_double_write(at, out, size);
  device_.persist(at, size);
  ++entries_staged_;
  return begin;
}

std::vector<DoubleWriteArea::Found> DoubleWriteArea::scan() const {
  // Entries start on lines; a torn or overwritten one fails its checksum and is skipped line
  // by line, so the entries after it are still found.
  std::vector<Found> found;
  for (std::uint64_t at = 0; at + sizeof(EntryHeader) <= area_.size();) {
    EntryHeader header;
    std::memcpy(&header, area_.data() + at, sizeof(header));
    const bool plausible =
        header.magic == kEntryMagic && header.line_count > 0 &&
        header.line_count <= kLinesPerPage &&
        (header.target == Target::kNvmSlot || header.target == Target::kSsdPage) &&
        at + header.size() <= area_.size();
    if (plausible && crc32c(area_.data() + at + sizeof(header.checksum),
                            header.size() - sizeof(header.checksum)) == header.checksum) {
      found.push_back({at, header.sequence});
      at += header.size();
    } else {
      at += kCacheLineSize;
    }
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.sequence < b.sequence; });
  return found;
}

DoubleWriteRestore DoubleWriteArea::restore(NvmTier* nvm, SsdPageFile* ssd) {
  DoubleWriteRestore report;
  std::vector<std::byte> page(kPageSize);
  bool ssd_written = false;
  const std::vector<Found> entries = scan();
  for (const Found& found : entries) {
    ++report.entries_found;
    EntryHeader header;
    const std::byte* entry = area_.data() + found.offset;
    std::memcpy(&header, entry, sizeof(header));
    const auto* indices = reinterpret_cast<const std::uint8_t*>(entry + sizeof(header));
    const std::byte* lines = entry + sizeof(header) + align_line(header.line_count);
    Lsn in_place;
    if (header.target == Target::kNvmSlot) {
      // 1. An NVM slot that still holds the page, at the entry's LSN or older.
      if (nvm == nullptr || header.target_id >= nvm->slot_count()) continue;
      const auto slot_id = static_cast<SlotId>(header.target_id);
      if (!nvm->header_valid(slot_id) || nvm->header(slot_id).is_free() ||
          nvm->header(slot_id).page_id != header.page_id)
        continue;
      std::byte* slot = nvm->slot(slot_id);
      std::memcpy(&in_place, slot + offsetof(PageHeader, lsn), sizeof(in_place));
      if (in_place > header.lsn) continue;
      for (std::uint32_t i = 0; i < header.line_count; ++i) {
        std::byte* to = slot + std::uint64_t{indices[i]} * kCacheLineSize;
        device_.write(to, lines + i * kCacheLineSize, kCacheLineSize);
        device_.flush(to, kCacheLineSize);
      }
      device_.fence();
      // The header as a completed write-back leaves it: a checksum of the mended page, and
      // (with SSD) the page newer than its SSD copy.
      const NvmSlotHeader& slot_header = nvm->header(slot_id);
      nvm->write_header(slot_id, header.page_id, slot_header.lsn,
                        slot_header.dirty_vs_ssd() || ssd != nullptr, nvm_page_checksum(slot));
      ++report.nvm_pages_mended;
      continue;
    }
    // 2. An SSD page still allocated, torn (its checksum fails) or at the entry's LSN or older.
    if (ssd == nullptr || header.line_count != kLinesPerPage ||
        header.target_id >= ssd->page_capacity() || !ssd->is_allocated(header.target_id))
      continue;
    bool torn = false;
    try {
      ssd->read(header.target_id, page.data());
      std::memcpy(&in_place, page.data() + offsetof(PageHeader, lsn), sizeof(in_place));
    } catch (const Error&) {
      torn = true;
    }
    if (!torn && in_place > header.lsn) continue;
    for (std::uint32_t i = 0; i < kLinesPerPage; ++i)
      std::memcpy(page.data() + std::uint64_t{indices[i]} * kCacheLineSize,
                  lines + i * kCacheLineSize, kCacheLineSize);
    ssd->write(header.target_id, page.data());
    ssd_written = true;
    ++report.ssd_pages_mended;
  }
  // 3. Done with them: retired, durable, so no later restart replays them over newer writes.
  if (ssd_written) ssd->sync();
  for (const Found& found : entries) retire(found.offset);
  device_.fence();
  return report;
}

}  // namespace tristore
