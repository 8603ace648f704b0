#pragma once
// What every architecture's Database shares: the catalog and table roots over one page-access
// policy, the transaction manager, and (durable architectures) the operation log that turns
// page changes into redo records. Subclasses own the storage (files, tiers, log) and close it.
#include <cstddef>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <variant>

#include "btree/btree.hpp"
#include "engine/catalog.hpp"
#include "engine/database.hpp"
#include "engine/durable_store.hpp"
#include "engine/logged_access.hpp"
#include "engine/transaction_manager.hpp"
#include "tiers/main_memory_access.hpp"

namespace tristore {

template <typename Access>
class DatabaseOver : public Database, protected DurableStore {
  static constexpr bool kVolatile = std::is_same_v<Access, MainMemoryAccess>;
  using Context = std::conditional_t<kVolatile, std::monostate, OperationLog<Access>>;

 protected:
  // log == nullptr: volatile (main-memory).
  DatabaseOver(const Config& config, Access& access, Catalog catalog, LogManager* log,
               bool swizzled_swips)
      : Database(config),
        access_(access),
        catalog_(std::move(catalog)),
        transactions_(log, log != nullptr ? this : nullptr),
        context_(make_context(access, transactions_, swizzled_swips)) {
    transactions_.set_checkpoint_interval(config.checkpoint_interval_bytes,
                                          std::is_same_v<Access, BufferManager>);
  }

  // The tables' objects go before the context and the transaction manager they use.
  ~DatabaseOver() override { open_tables_.clear(); }

  TableBinding bind_table(std::string_view name, std::size_t key_size, std::size_t value_size,
                          bool create) override {
    CatalogEntry* entry;
    if (create) {
      // Before the root is allocated: a root made for a refused name would be in no tree.
      catalog_.check_new_name(name);
      before_create_table();
      // Not logged, as a bulk load (BTreeTable::bulk_load): a checkpoint before keeps the frees
      // of the page the root takes out of the log that restart reads after a crash.
      transactions_.checkpoint();
      entry = &catalog_.add(name, key_size, value_size, create_empty_tree(access_));
      transactions_.checkpoint();  // the new table is durable at once
    } else {
      entry = &catalog_.open(name, key_size, value_size);
    }
    std::uint32_t id = 0;
    while (catalog_.entries()[id].get() != entry) ++id;
    PageAccessRef ref;
    if constexpr (kVolatile)
      ref = &access_;
    else
      ref = &context_;
    return TableBinding{ref, &transactions_, id, &entry->root};
  }
  // Error when no further table fits the catalog's area.
  virtual void before_create_table() {}

  TransactionManager& transactions() override { return transactions_; }
  const TransactionManager& transactions() const override { return transactions_; }

  // A table's root moved (redo of a root split or collapse).
  // A kRedoLeafEntry's bytes (LeafChange, key, value bytes) replayed onto `page`.
  template <typename Page>
  static void redo_leaf_change(Page& page, const RedoPageBytes& entry,
                               std::span<const std::byte> bytes, Lsn lsn) {
    LeafChange change;
    if (bytes.size() < sizeof(change)) fail("log: corrupt leaf change at LSN {}", lsn);
    std::memcpy(&change, bytes.data(), sizeof(change));
    if (bytes.size() != sizeof(change) + leaf_change_payload_size(change))
      fail("log: corrupt leaf change for page {} at LSN {}", entry.page_id, lsn);
    const std::byte* key = bytes.data() + sizeof(change);
    apply_leaf_change(page, change, key, key + change.key_size);
  }

  void redo_root(std::span<const std::byte> table_id_bytes, PageId root) {
    std::uint32_t id;
    std::memcpy(&id, table_id_bytes.data(), sizeof(id));
    if (id >= catalog_.entries().size()) fail("log: redo of a root for unknown table {}", id);
    catalog_.entries()[id]->root = Swip::from_page_id(root);
  }

  void checkpoint_pages() override {}
  void redo(Lsn, const RedoPageBytes&, std::span<const std::byte>) override {}

  Access& access_;
  Catalog catalog_;
  TransactionManager transactions_;
  Context context_;

 private:
  static Context make_context(Access& access, TransactionManager& transactions, bool swizzled) {
    if constexpr (kVolatile)
      return {};
    else
      return Context(access, transactions, swizzled);
  }
};

}  // namespace tristore
