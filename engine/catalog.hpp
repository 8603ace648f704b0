#pragma once
// The catalog: table name -> root swip, key size, value size. Roots live here, at stable
// addresses, for the B-trees to grow and shrink. Durable architectures save it in a 2 KiB
// metadata area (NVM superblock or SSD superblock) when the database closes.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tiers/swip.hpp"

namespace tristore {

struct CatalogEntry {
  std::string name;
  std::size_t key_size;
  std::size_t value_size;
  Swip root;
};

class Catalog {
 public:
  static constexpr std::size_t kMaxNameLength = 47;

  CatalogEntry* find(std::string_view name);
  // Error unless `name` may name a new table: 1 to kMaxNameLength characters, no NUL, unused.
  void check_new_name(std::string_view name);
  // Error where check_new_name refuses the name.
  CatalogEntry& add(std::string_view name, std::size_t key_size, std::size_t value_size, Swip root);
  // Error when missing or when the sizes differ from the table's.
  CatalogEntry& open(std::string_view name, std::size_t key_size, std::size_t value_size);
  const std::vector<std::unique_ptr<CatalogEntry>>& entries() const { return entries_; }

  // Writes the catalog into `area`, each root as the page id root_page_id gives for it.
  void save(std::span<std::byte> area, const std::function<PageId(Swip&)>& root_page_id);
  // Reads a catalog saved by save(); an area never written (all zero) is an empty catalog.
  // A corrupt area -> Error.
  static Catalog load(std::span<const std::byte> area);
  static std::size_t capacity(std::size_t area_bytes);
  // The sequence number of the copy this catalog was last saved as or loaded from (0: none).
  // Each save is one on: restart tells by it whether a save came after an NVM slot's claim
  // (NvmSlotHeader::kNewPage).
  std::uint64_t sequence() const { return sequence_; }

 private:
  std::vector<std::unique_ptr<CatalogEntry>> entries_;  // unique_ptr: roots never move
  std::uint64_t sequence_ = 0;
};

}  // namespace tristore
