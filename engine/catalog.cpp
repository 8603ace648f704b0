#include "engine/catalog.hpp"

#include <algorithm>
#include <cstring>

#include "common/checksum.hpp"
#include "common/error.hpp"

namespace tristore {

namespace {

constexpr std::uint64_t kCatalogMagic = 0x31474154'41434952;  // "RICATAG1"

struct SavedHeader {
  std::uint64_t magic;
  std::uint32_t count;
  std::uint32_t checksum;  // crc32c of the entries
};
struct SavedEntry {
  char name[Catalog::kMaxNameLength + 1];
  PageId root;
  std::uint32_t key_size;
  std::uint32_t value_size;
};
static_assert(sizeof(SavedHeader) == 16 && sizeof(SavedEntry) == 64);

}  // namespace

std::size_t Catalog::capacity(std::size_t area_bytes) {
  return (area_bytes - sizeof(SavedHeader)) / sizeof(SavedEntry);
}

CatalogEntry* Catalog::find(std::string_view name) {
  for (auto& entry : entries_)
    if (entry->name == name) return entry.get();
  return nullptr;
}

CatalogEntry& Catalog::add(std::string_view name, std::size_t key_size, std::size_t value_size,
                           Swip root) {
  if (name.empty() || name.size() > kMaxNameLength)
    fail("table name '{}' must have 1 to {} characters", name, kMaxNameLength);
  if (find(name) != nullptr) fail("table '{}' already exists", name);
  entries_.push_back(
      std::make_unique<CatalogEntry>(CatalogEntry{std::string(name), key_size, value_size, root}));
  return *entries_.back();
}

CatalogEntry& Catalog::open(std::string_view name, std::size_t key_size, std::size_t value_size) {
  CatalogEntry* entry = find(name);
  if (entry == nullptr) fail("no table named '{}'", name);
  if (entry->key_size != key_size || entry->value_size != value_size)
    fail("table '{}' has {}-byte keys and {}-byte values, not {} and {}", name, entry->key_size,
         entry->value_size, key_size, value_size);
  return *entry;
}

void Catalog::save(std::span<std::byte> area, const std::function<PageId(Swip&)>& root_page_id) {
  // 1. Encode every entry.
  if (entries_.size() > capacity(area.size()))
    fail("catalog: {} tables do not fit the {}-byte metadata area", entries_.size(), area.size());
  std::vector<SavedEntry> saved(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    SavedEntry& out = saved[i];
    std::memset(&out, 0, sizeof(out));
    std::memcpy(out.name, entries_[i]->name.data(), entries_[i]->name.size());
    out.root = root_page_id(entries_[i]->root);
    out.key_size = static_cast<std::uint32_t>(entries_[i]->key_size);
    out.value_size = static_cast<std::uint32_t>(entries_[i]->value_size);
  }
  // 2. Header with a checksum over the entries, then the entries.
  SavedHeader header{kCatalogMagic, static_cast<std::uint32_t>(saved.size()),
                     crc32c(saved.data(), saved.size() * sizeof(SavedEntry))};
  std::memcpy(area.data(), &header, sizeof(header));
  std::memcpy(area.data() + sizeof(header), saved.data(), saved.size() * sizeof(SavedEntry));
}

Catalog Catalog::load(std::span<const std::byte> area) {
  Catalog catalog;
  SavedHeader header;
  std::memcpy(&header, area.data(), sizeof(header));
  if (header.magic == 0 && header.count == 0) return catalog;
  if (header.magic != kCatalogMagic) fail("catalog: metadata area holds no tristore catalog");
  if (header.count > capacity(area.size()))
    fail("catalog: corrupt ({} tables in a {}-byte area)", header.count, area.size());
  std::vector<SavedEntry> saved(header.count);
  std::memcpy(saved.data(), area.data() + sizeof(header), saved.size() * sizeof(SavedEntry));
  if (crc32c(saved.data(), saved.size() * sizeof(SavedEntry)) != header.checksum)
    fail("catalog: corrupt (checksum mismatch)");
  for (const SavedEntry& entry : saved) {
    std::size_t length = strnlen(entry.name, sizeof(entry.name));
    catalog.add(std::string_view(entry.name, length), entry.key_size, entry.value_size,
                Swip::from_page_id(entry.root));
  }
  return catalog;
}

}  // namespace tristore
