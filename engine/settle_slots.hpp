#pragma once
// Restart (DurableStore::settle_allocations): one pass over the NVM slot headers after redo.
// It returns the slots whose page is in no tree: freed by a durable record, by the log's last
// word on the page (the crash cut the free short); claimed for a new page
// (NvmSlotHeader::kNewPage) that no durable record makes and no durable catalog saved after the
// claim keeps (the crash came before the record of the operation that made it, or before the
// checkpoint that ends a bulk load); marked to go with a catalog that is durable (a bulk load's
// old root, kFreedWithCatalog); or any the caller's `also` names. A page marked to go with a
// catalog that never became durable stays, and the mark goes.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/durable_store.hpp"
#include "nvm/nvm_tier.hpp"

namespace tristore {

inline std::vector<SlotId> settle_slots(
    NvmTier& tier, const LoggedAllocations& logged, std::uint64_t catalog_sequence,
    const std::function<bool(const NvmSlotHeader&)>& also = {}) {
  std::vector<SlotId> in_no_tree;
  for (std::uint64_t id = 0; id < tier.slot_count(); ++id) {
    const auto slot = static_cast<SlotId>(id);
    const NvmSlotHeader& header = tier.header(slot);
    if (header.is_free()) continue;
    const bool catalog_durable = header.lsn < catalog_sequence;  // of a kCatalogBound mark
    if (logged.freed.contains(header.page_id) ||
        (header.new_page() && !catalog_durable && !logged.made.contains(header.page_id)) ||
        (header.freed_with_catalog() && catalog_durable) || (also && also(header)))
      in_no_tree.push_back(slot);
    else if (header.freed_with_catalog())
      tier.keep_page(slot);
  }
  return in_no_tree;
}

}  // namespace tristore
