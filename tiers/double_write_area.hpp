#pragma once
// Torn-write protection for pages written back in place (docs/durability.md): before the
// buffer manager overwrites a page's lines in its NVM slot, or a page on SSD, it stages the
// same bytes here, durable, and only then writes them in place. Redo replays tuple-level
// changes, which need the page exactly as some LSN left it; a crash in the middle of an
// in-place write leaves a mix of old and new lines, and restore() mends it from the staged
// copy before anything else reads the page.
//
// The area is a ring of entries in NVM, carved from the end of the log area. An entry:
//   [EntryHeader: 64 B][line indices: line_count bytes, padded to 64][line_count lines]
// Once its in-place write is durable an entry is retired (its checksum and magic zeroed): an
// NVM entry once the lines and the slot header that describes them are (the next fence makes
// the retirement durable, and no later write to the slot comes before a fence; restore writes
// a mended page's header too), SSD entries after the next SSD sync (the ring syncs the SSD
// itself before it overwrites one not synced yet). So the intact entries at a crash are those
// whose write may be torn, plus at most one whose write is complete and which, replayed,
// writes the same bytes again.
//
// Restore replays the intact entries, oldest first (a page staged twice ends as staged last),
// onto a target that still holds the page, then retires them all.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/page_format.hpp"
#include "common/types.hpp"
#include "emulation/nvm_device.hpp"
#include "nvm/nvm_slot_header.hpp"

namespace tristore {

class NvmTier;
class SsdPageFile;

struct DoubleWriteRestore {
  std::uint64_t entries_found = 0;     // intact entries in the area
  std::uint64_t nvm_pages_mended = 0;  // entries written back to their NVM slot
  std::uint64_t ssd_pages_mended = 0;  // entries written back to SSD
};

class DoubleWriteArea {
 public:
  // The largest entry: a whole page with its header and indices.
  static constexpr std::uint64_t kMaxEntryBytes = kCacheLineSize + kLinesPerPage + kPageSize;
  // The bytes a log area of log_area_bytes gives up to the ring: a sixteenth, at least two
  // whole pages' entries, at most 4 MiB, in 4 KiB units.
  static std::uint64_t bytes_for(std::uint64_t log_area_bytes);

  // area: the ring's NVM bytes. sync_ssd: makes every SSD write so far durable (null without
  // SSD). Call restore() before staging anything in an area that may hold entries.
  DoubleWriteArea(NvmDevice& device, std::span<std::byte> area, std::function<void()> sync_ssd);

  // Stages lines of a page about to be written to its NVM slot, line_count of them: lines[i]
  // (64 bytes) goes to line indices[i]. Returns once the entry is durable.
  void stage_nvm_lines(SlotId slot, PageId page_id, Lsn lsn, std::span<const std::uint8_t> indices,
                       std::span<const std::byte* const> lines);
  // Stages a whole page about to be written to SSD.
  void stage_ssd_page(PageId page_id, Lsn lsn, const std::byte* page);
  // The lines staged last are durable in place, and so is the slot header that describes them
  // (its checksum): their entry is retired.
  void nvm_lines_written();
  // Every SSD write so far is durable (the caller synced): their entries are retired.
  void ssd_synced();

  // Restart, before the page table is rebuilt: mends torn in-place writes. nvm or ssd null:
  // entries for that tier are skipped (the architecture has none).
  DoubleWriteRestore restore(NvmTier* nvm, SsdPageFile* ssd);

  std::uint64_t entries_staged() const { return entries_staged_; }

 private:
  enum class Target : std::uint8_t { kNvmSlot = 1, kSsdPage = 2 };
  struct EntryHeader;
  struct Found {
    std::uint64_t offset;
    std::uint64_t sequence;
  };

  std::uint64_t place(std::uint64_t size);
  void retire(std::uint64_t offset);  // zeroes the entry's first word and flushes it
  // Returns the entry's offset in the ring.
  std::uint64_t stage(Target target, std::uint64_t target_id, PageId page_id, Lsn lsn,
                      std::span<const std::uint8_t> indices,
                      std::span<const std::byte* const> lines);
  std::vector<Found> scan() const;

  NvmDevice& device_;
  std::span<std::byte> area_;
  std::function<void()> sync_ssd_;
  std::uint64_t head_ = 0;  // where the next entry goes
  std::uint64_t last_nvm_entry_ = 0;
  std::uint64_t next_sequence_ = 1;
  std::uint64_t entries_staged_ = 0;
  struct Span {
    std::uint64_t begin, end;
  };
  std::vector<Span> unsynced_ssd_;  // entries whose SSD write may not be durable yet
  std::vector<std::byte> scratch_;  // one entry, assembled before it is copied to NVM
};

}  // namespace tristore
