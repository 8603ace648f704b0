#pragma once
// For the crash tests of pages in no tree (engine_allocation_crash_test,
// engine_bulk_load_crash_test): rows of 240 bytes that carry their key, a check of a table's
// rows, and a walk of a closed database's files without the engine that counts the pages of
// its trees beside the pages in use.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "emulation/crash_simulator.hpp"
#include "engine/catalog.hpp"
#include "engine/config.hpp"
#include "engine/storage_files.hpp"
#include "engine/table.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/nvm_direct_access.hpp"

namespace tristore::page_claims {

// 240 bytes: about 60 rows fill a leaf at first, so a few hundred rows split and merge leaves.
struct Row {
  std::array<std::uint64_t, 30> words;
};
using Rows = Table<std::uint64_t, Row>;
inline Row row(std::uint64_t key) {
  Row r{};
  for (std::size_t i = 0; i < r.words.size(); ++i) r.words[i] = key * 131 + i;
  return r;
}

inline bool has_ssd(Architecture arch) {
  return arch == Architecture::kThreeTier || arch == Architecture::kSsdBm;
}

// Runs `work` until it ends or the armed crash stops it (SimulatedCrash, or an Error the crash
// caused); returns whether the machine crashed. An Error before any crash is the test's.
template <typename Work>
bool run_until_crash(CrashSimulator& nvm, Work&& work) {
  try {
    work();
  } catch (const SimulatedCrash&) {
  } catch (const Error&) {
    if (!nvm.crashed()) throw;
  }
  return nvm.crashed();
}

// The rows of a table, if each holds its own bytes; else an empty set and a failure.
inline std::set<std::uint64_t> keys_of(Rows& table) {
  std::set<std::uint64_t> keys;
  bool right = true;
  table.scan(0, ~std::size_t{0}, [&](const std::uint64_t& key, const Row& value) {
    keys.insert(key);
    right = right && value.words == row(key).words;
    return true;
  });
  EXPECT_TRUE(right) << "a row's bytes changed";
  return keys;
}

// Reads the closed files without the engine: the named tables' trees validate; returns the
// pages they hold and, beside, the pages in use (NVM slots where a slot is a page's home, else SSD
// pages; 3tier's NVM slots must each cache a page that has its SSD page). Value: the tables'
// row type.
struct Pages {
  std::uint64_t in_trees = 0;
  std::uint64_t in_use = 0;
};
template <typename Value, typename Access>
void add_trees(Access& access, const Catalog& catalog, std::initializer_list<const char*> tables,
               Pages& pages) {
  for (const char* name : tables) {
    const CatalogEntry* entry = const_cast<Catalog&>(catalog).find(name);
    ASSERT_NE(entry, nullptr) << name;
    Swip root = entry->root;
    BTree<std::uint64_t, Value, Access> tree(access, root);
    EXPECT_EQ(tree.validate(), "") << name;
    const BTreeStats stats = tree.stats();
    pages.in_trees += stats.inner_nodes + stats.leaves;
  }
}
// `config` names the files, opened as they are (no crash simulation).
template <typename Value = Row>
Pages pages_of_files(Config config, std::initializer_list<const char*> tables) {
  const Architecture arch = config.architecture;
  config.open_mode = OpenMode::kOpenExisting;
  config.nvm_crash_simulation = config.ssd_crash_simulation = false;
  Pages pages;
  if (arch == Architecture::kNvmDirect) {
    std::unique_ptr<NvmTier> tier = open_nvm_tier(config, false);
    NvmDirectAccess direct(*tier);
    add_trees<Value>(direct, Catalog::load(tier->metadata_area()), tables, pages);
    pages.in_use = tier->slots_in_use();
    return pages;
  }
  std::unique_ptr<NvmTier> nvm =
      arch == Architecture::kSsdBm ? nullptr : open_nvm_tier(config, false);
  std::unique_ptr<SsdPageFile> ssd = has_ssd(arch) ? open_ssd_file(config, false) : nullptr;
  for (SlotId slot = 0; nvm != nullptr && ssd != nullptr && slot < nvm->slot_count(); ++slot) {
    const NvmSlotHeader& header = nvm->header(slot);
    EXPECT_TRUE(header.is_free() || ssd->is_allocated(header.page_id))
        << "NVM slot " << slot << " caches page " << header.page_id << ", which has no SSD page";
  }
  BufferManagerOptions options;
  options.dram_bytes = config.dram_bytes;
  options.nvm = nvm.get();
  options.ssd = ssd.get();
  options.swizzling = false;  // the catalog's root swips are local copies
  BufferManager manager(options);
  add_trees<Value>(manager, Catalog::load(ssd != nullptr ? ssd->metadata() : nvm->metadata_area()),
                   tables, pages);
  pages.in_use = ssd != nullptr ? ssd->pages_in_use() : nvm->slots_in_use();
  return pages;
}

}  // namespace tristore::page_claims
