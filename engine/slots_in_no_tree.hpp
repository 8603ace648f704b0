#pragma once
// Restart (DurableStore::settle_allocations): the NVM slots whose page is in no tree after
// redo: freed by a durable record, by the log's last word on the page (the crash cut the free
// short); claimed for a new page (NvmSlotHeader::kNewPage) that no durable record makes and
// no durable catalog saved after the claim keeps (the crash came before the record of the
// operation that made it, or before the checkpoint that ends a bulk load); or marked to go
// with a catalog that is durable (a bulk load's old root, kFreedWithCatalog).
#include <cstdint>
#include <vector>

#include "engine/durable_store.hpp"
#include "nvm/nvm_tier.hpp"

namespace tristore {

inline std::vector<SlotId> slots_in_no_tree(const NvmTier& tier, const LoggedAllocations& logged,
                                            std::uint64_t catalog_sequence) {
  std::vector<SlotId> slots;
  for (std::uint64_t id = 0; id < tier.slot_count(); ++id) {
    const NvmSlotHeader& header = tier.header(static_cast<SlotId>(id));
    if (header.is_free()) continue;
    if (logged.freed.contains(header.page_id) ||
        (header.new_page() && header.lsn >= catalog_sequence &&
         !logged.made.contains(header.page_id)) ||
        (header.freed_with_catalog() && header.lsn < catalog_sequence))
      slots.push_back(static_cast<SlotId>(id));
  }
  return slots;
}

// The slots marked to go with a catalog that never became durable keep their page
// (NvmSlotHeader::kFreedWithCatalog): the mark goes.
inline void keep_pages_of_lost_catalog(NvmTier& tier, std::uint64_t catalog_sequence) {
  for (std::uint64_t id = 0; id < tier.slot_count(); ++id) {
    const NvmSlotHeader& header = tier.header(static_cast<SlotId>(id));
    if (!header.is_free() && header.freed_with_catalog() && header.lsn >= catalog_sequence)
      tier.keep_page(static_cast<SlotId>(id));
  }
}

}  // namespace tristore
