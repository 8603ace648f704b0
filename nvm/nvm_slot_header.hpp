#pragma once
// The header of one NVM page slot: what the slot holds (page id, LSN, dirty vs SSD).
// Restart rebuilds the combined page table by scanning these (paper: 100 GB in under 1 s).
//
// Persisted as one 64-byte line of two 32-byte versions. NVM writes are atomic only at 8 bytes,
// so a header is never rewritten in place: an update writes the version that is not current,
// with the next sequence number, and persists it. A crash may tear that version (its checksum
// then fails) but never touches the current one, so open finds the old or the new header, never
// none. A version's place in the line is its sequence number's parity.
//
// Every update is also mirrored into the other place (NvmTier::write_header), so that once it
// is complete both versions say the same: a byte flipped later in either version falls back to
// the other, which holds the same header, never to an older one (a slot that held a page must
// not read as free). The first write of an update goes to the place of the newest version (the
// previous mirror, perhaps not yet fenced); the other place holds the previous update's fenced
// first write, so a crash at any point leaves the old or the new header intact.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/checksum.hpp"
#include "common/types.hpp"

namespace tristore {

using SlotId = std::uint32_t;

// A slot's current header as the engine reads it: NvmTier keeps these in DRAM, so hot paths
// (the NVM clock) never touch NVM or recompute checksums.
struct NvmSlotHeader {
  static constexpr std::uint32_t kDirtyVsSsd = 1;  // the slot holds changes not yet on SSD
  // page_checksum is nvm_page_checksum of the slot's 16 KiB as they are on NVM
  static constexpr std::uint32_t kPageChecksumValid = 2;
  // The slot was claimed for a new page (NvmTier::claim_for_new_page) while the newest saved
  // catalog had sequence number `lsn` (such a slot's LSN says nothing else). Until a catalog
  // saved later is durable, restart keeps the slot only where the log names the page new
  // (DurableStore::settle_allocations). Header writes for the same page keep the claim.
  static constexpr std::uint32_t kNewPage = 4;
  // The slot's page goes once a catalog saved after sequence number `lsn` is durable: a bulk
  // load's old root, which the catalog naming the new root frees (NvmTier::free_with_catalog).
  static constexpr std::uint32_t kFreedWithCatalog = 8;
  static constexpr std::uint32_t kCatalogBound = kNewPage | kFreedWithCatalog;

  PageId page_id = kInvalidPageId;  // kInvalidPageId = free slot
  Lsn lsn = 0;
  std::uint32_t flags = 0;
  std::uint32_t sequence = 0;  // of the persisted version it mirrors
  std::uint32_t page_checksum = 0;

  bool is_free() const { return page_id == kInvalidPageId; }
  bool dirty_vs_ssd() const { return (flags & kDirtyVsSsd) != 0; }
  bool has_page_checksum() const { return (flags & kPageChecksumValid) != 0; }
  bool new_page() const { return (flags & kNewPage) != 0; }
  bool freed_with_catalog() const { return (flags & kFreedWithCatalog) != 0; }
  // What the header says, the sequence aside.
  bool same_content(const NvmSlotHeader& other) const {
    return page_id == other.page_id && lsn == other.lsn && flags == other.flags &&
           page_checksum == other.page_checksum;
  }
  friend bool operator==(const NvmSlotHeader&, const NvmSlotHeader&) = default;
};
static_assert(sizeof(NvmSlotHeader) == 32);

// One persisted version: four 8-byte words, any subset of which a crash may leave new.
struct NvmSlotHeaderVersion {
  PageId page_id;
  Lsn lsn;
  std::uint32_t flags;
  std::uint32_t sequence;
  std::uint32_t page_checksum;  // meaningful with NvmSlotHeader::kPageChecksumValid
  std::uint32_t checksum;       // crc32c of the fields above, seeded with the slot id

  // Seeded with the slot id, so a header line found in another slot's place is not valid.
  std::uint32_t compute_checksum(SlotId slot) const {
    return crc32c(this, offsetof(NvmSlotHeaderVersion, checksum), slot);
  }
  bool valid(SlotId slot, std::size_t place) const {
    return checksum == compute_checksum(slot) && (sequence & 1u) == place;
  }
  NvmSlotHeader header() const { return {page_id, lsn, flags, sequence, page_checksum}; }

  static NvmSlotHeaderVersion make(SlotId slot, const NvmSlotHeader& header) {
    NvmSlotHeaderVersion version{header.page_id,  header.lsn,           header.flags,
                                 header.sequence, header.page_checksum, 0};
    version.checksum = version.compute_checksum(slot);
    return version;
  }
};
static_assert(sizeof(NvmSlotHeaderVersion) == 32);
static_assert(offsetof(NvmSlotHeaderVersion, checksum) == 28, "the checksum covers 28 bytes");

struct alignas(kCacheLineSize) NvmSlotHeaderLine {
  NvmSlotHeaderVersion versions[2];

  static constexpr std::size_t place_of(std::uint32_t sequence) { return sequence & 1u; }
  NvmSlotHeaderVersion& version_for(std::uint32_t sequence) { return versions[place_of(sequence)]; }

  // What open reads of a line: its current header, the valid version with the higher
  // sequence number (compared modulo 2^32; none only when both are corrupt, which no crash can
  // cause), and whether both versions are intact and say the same, as a complete update
  // leaves them. Otherwise open rewrites the other place (NvmTier::load_headers) before any
  // update may overwrite the only intact version. Each checksum is computed once.
  struct Reading {
    std::optional<NvmSlotHeader> current;
    bool mirrored;
  };
  Reading read(SlotId slot) const {
    const bool valid[2] = {versions[0].valid(slot, 0), versions[1].valid(slot, 1)};
    const auto newer = static_cast<std::int32_t>(versions[1].sequence - versions[0].sequence) > 0;
    const std::size_t first = newer ? 1 : 0;
    Reading reading{std::nullopt, false};
    if (valid[first])
      reading.current = versions[first].header();
    else if (valid[1 - first])
      reading.current = versions[1 - first].header();
    reading.mirrored =
        valid[0] && valid[1] && versions[0].header().same_content(versions[1].header());
    return reading;
  }
  std::optional<NvmSlotHeader> current(SlotId slot) const { return read(slot).current; }
  bool mirrored(SlotId slot) const { return read(slot).mirrored; }

  // A freshly formatted slot: free, both versions valid.
  static NvmSlotHeaderLine free_slot(SlotId slot) {
    NvmSlotHeaderLine line;
    NvmSlotHeader header;
    for (std::uint32_t place = 0; place < 2; ++place) {
      header.sequence = place;
      line.versions[place] = NvmSlotHeaderVersion::make(slot, header);
    }
    return line;
  }
};
static_assert(sizeof(NvmSlotHeaderLine) == kCacheLineSize, "one line: one flush per update");

}  // namespace tristore
