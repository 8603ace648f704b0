#pragma once
// The one TableInterface implementation: a B+-tree over the database's page-access policy.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "engine/database.hpp"
#include "engine/table_interface.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/main_memory_access.hpp"
#include "tiers/nvm_direct_access.hpp"

namespace tristore {

template <TableKey K, TableValue V, PageAccess Access>
class BTreeTable final : public TableInterface<K, V> {
 public:
  using typename TableInterface<K, V>::Visit;
  using typename TableInterface<K, V>::Generate;

  BTreeTable(Access& access, Swip& root) : tree_(access, root) {}

  bool get(const K& key, V& out) override { return tree_.lookup(key, out); }
  bool get_part(const K& key, std::size_t offset, std::size_t length, void* out) override {
    check_part(offset, length);
    return tree_.lookup_part(key, static_cast<std::uint32_t>(offset),
                             static_cast<std::uint32_t>(length), out);
  }
  bool insert(const K& key, const V& value) override { return tree_.insert(key, value); }
  bool update(const K& key, const V& value) override { return tree_.update(key, value); }
  bool update_part(const K& key, std::size_t offset, std::size_t length,
                   const void* bytes) override {
    check_part(offset, length);
    return tree_.update_part(key, static_cast<std::uint32_t>(offset),
                             static_cast<std::uint32_t>(length), bytes);
  }
  bool remove(const K& key) override { return tree_.remove(key); }
  std::size_t scan(const K& from, std::size_t limit, const Visit& visit) override {
    return tree_.scan(from, limit, visit);
  }
  void bulk_load(std::size_t count, const Generate& generate, double fill_factor) override {
    tree_.bulk_load(count, generate, fill_factor);
  }

 private:
  static void check_part(std::size_t offset, std::size_t length) {
    if (offset > sizeof(V) || length > sizeof(V) - offset)
      fail("value part [{}, {}) lies outside the {}-byte value", offset, offset + length,
           sizeof(V));
  }
  BTree<K, V, Access> tree_;
};

template <TableKey K, TableValue V>
std::shared_ptr<TableInterface<K, V>> make_btree_table(PageAccessRef access, Swip& root) {
  return std::visit(
      [&](auto* policy) -> std::shared_ptr<TableInterface<K, V>> {
        using Access = std::remove_pointer_t<decltype(policy)>;
        return std::make_shared<BTreeTable<K, V, Access>>(*policy, root);
      },
      access);
}

}  // namespace tristore
