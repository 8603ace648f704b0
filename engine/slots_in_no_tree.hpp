#pragma once
// Restart (DurableStore::settle_allocations): the NVM slots whose page is in no tree after
// redo: freed by a durable record, by the log's last word on the page (the crash cut the free
// short); or claimed for a new page (NvmSlotHeader::kNewPage) that no durable record makes and
// no durable catalog saved after the claim keeps (the crash came before the record of the
// operation that made it, or before the checkpoint that ends a bulk load).
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
         !logged.made.contains(header.page_id)))
      slots.push_back(static_cast<SlotId>(id));
  }
  return slots;
}

}  // namespace tristore
