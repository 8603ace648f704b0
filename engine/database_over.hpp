#pragma once
// What every architecture's Database shares: the catalog and table roots over one page-access
// policy. Subclasses own the storage (files, tiers) and close it.
#include <cstddef>
#include <string_view>

#include "btree/btree.hpp"
#include "engine/catalog.hpp"
#include "engine/database.hpp"

namespace tristore {

template <typename Access>
class DatabaseOver : public Database {
 protected:
  DatabaseOver(const Config& config, Access& access, Catalog catalog = {})
      : Database(config), access_(access), catalog_(std::move(catalog)) {}

  Swip& create_table_root(std::string_view name, std::size_t key_size,
                          std::size_t value_size) override {
    if (catalog_.find(name) != nullptr) fail("table '{}' already exists", name);
    return catalog_.add(name, key_size, value_size, create_empty_tree(access_)).root;
  }
  Swip& open_table_root(std::string_view name, std::size_t key_size,
                        std::size_t value_size) override {
    return catalog_.open(name, key_size, value_size).root;
  }
  PageAccessRef page_access() override { return &access_; }

  Access& access_;
  Catalog catalog_;
};

}  // namespace tristore
