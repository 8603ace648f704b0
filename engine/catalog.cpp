#include "engine/catalog.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/checksum.hpp"
#include "common/error.hpp"

namespace tristore {

namespace {

// The area holds two copies of the catalog, each in one half: a save writes the copy that is
// not the newest valid one, so a crash in the middle of it (a torn NVM write; the caller
// persists the area afterwards) leaves the other copy whole, and load takes the valid copy with
// the higher sequence number. Each copy's checksum covers its count, sequence and entries.
constexpr std::uint64_t kCatalogMagic = 0x32474154'41434952;  // "RICATAG2"
// The single-copy catalog of earlier versions (no sequence, the whole area): still read.
constexpr std::uint64_t kSingleCopyMagic = 0x31474154'41434952;  // "RICATAG1"

struct SavedHeader {
  std::uint64_t magic;
  std::uint32_t count;
  std::uint32_t checksum;  // crc32c of count, sequence and the entries
  std::uint64_t sequence;
  std::uint64_t reserved;
};
struct SingleCopyHeader {
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
static_assert(sizeof(SavedHeader) == 32 && sizeof(SingleCopyHeader) == 16 &&
              sizeof(SavedEntry) == 64);

std::uint32_t copy_checksum(const SavedHeader& header, const std::byte* entries) {
  std::uint32_t checksum = crc32c(&header.count, sizeof(header.count));
  checksum = crc32c(&header.sequence, sizeof(header.sequence), checksum);
  return crc32c(entries, header.count * sizeof(SavedEntry), checksum);
}

// Half `which` (0 or 1) of the area: where copy `which` lives.
template <typename Byte>
std::span<Byte> copy_area(std::span<Byte> area, int which) {
  return area.subspan(which * (area.size() / 2), area.size() / 2);
}

// Copy `which` of the area, when it holds a whole catalog.
std::optional<SavedHeader> valid_copy(std::span<const std::byte> area, int which) {
  const std::span<const std::byte> copy = copy_area(area, which);
  SavedHeader header;
  std::memcpy(&header, copy.data(), sizeof(header));
  if (header.magic != kCatalogMagic || header.count > Catalog::capacity(area.size()) ||
      copy_checksum(header, copy.data() + sizeof(header)) != header.checksum)
    return std::nullopt;
  return header;
}

// The valid copy with the higher sequence number, and which it is.
struct NewestCopy {
  std::optional<SavedHeader> header;
  int which = 0;
};
NewestCopy newest_copy(std::span<const std::byte> area) {
  const std::optional<SavedHeader> first = valid_copy(area, 0), second = valid_copy(area, 1);
  if (second && (!first || second->sequence > first->sequence)) return {second, 1};
  return {first, 0};
}

}  // namespace

std::size_t Catalog::capacity(std::size_t area_bytes) {
  return (area_bytes / 2 - sizeof(SavedHeader)) / sizeof(SavedEntry);
}

CatalogEntry* Catalog::find(std::string_view name) {
  for (auto& entry : entries_)
    if (entry->name == name) return entry.get();
  return nullptr;
}

void Catalog::check_new_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength)
    fail("table name '{}' must have 1 to {} characters", name, kMaxNameLength);
  // Saved names end at their first NUL: "a\0b" would come back as "a".
  if (name.find('\0') != std::string_view::npos)
    fail("table name of {} characters contains a NUL character", name.size());
  if (find(name) != nullptr) fail("table '{}' already exists", name);
}

CatalogEntry& Catalog::add(std::string_view name, std::size_t key_size, std::size_t value_size,
                           Swip root) {
  check_new_name(name);
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
  // 2. Into the copy that is not the newest valid one, one sequence on (the second half first:
  //    a single-copy catalog of an earlier version, at most capacity() entries, keeps the first).
  const NewestCopy newest = newest_copy(area);
  const int into = newest.header ? 1 - newest.which : 1;
  const std::uint64_t sequence = newest.header ? newest.header->sequence + 1 : 1;
  // 3. Header with a checksum over count, sequence and entries, then the entries.
  const std::span<std::byte> copy = copy_area(area, into);
  std::memcpy(copy.data() + sizeof(SavedHeader), saved.data(), saved.size() * sizeof(SavedEntry));
  SavedHeader header{kCatalogMagic, static_cast<std::uint32_t>(saved.size()), 0, sequence, 0};
  header.checksum = copy_checksum(header, copy.data() + sizeof(SavedHeader));
  std::memcpy(copy.data(), &header, sizeof(header));
  sequence_ = sequence;
}

Catalog Catalog::load(std::span<const std::byte> area) {
  // The newest valid copy; else an area never written (all zero: an empty catalog), or the
  // single copy of an earlier version.
  const NewestCopy newest = newest_copy(area);
  std::vector<SavedEntry> saved;
  if (newest.header) {
    saved.resize(newest.header->count);
    std::memcpy(saved.data(), copy_area(area, newest.which).data() + sizeof(SavedHeader),
                saved.size() * sizeof(SavedEntry));
  } else {
    SingleCopyHeader single;
    std::memcpy(&single, area.data(), sizeof(single));
    if (single.magic == 0 && single.count == 0) return Catalog();
    if (single.magic == kCatalogMagic) fail("catalog: corrupt (checksum mismatch)");
    if (single.magic != kSingleCopyMagic) fail("catalog: metadata area holds no tristore catalog");
    if (single.count > (area.size() - sizeof(single)) / sizeof(SavedEntry))
      fail("catalog: corrupt ({} tables in a {}-byte area)", single.count, area.size());
    if (single.count > capacity(area.size()))
      fail("catalog: {} tables, written by an earlier version; this one keeps at most {}",
           single.count, capacity(area.size()));
    saved.resize(single.count);
    std::memcpy(saved.data(), area.data() + sizeof(single), saved.size() * sizeof(SavedEntry));
    if (crc32c(saved.data(), saved.size() * sizeof(SavedEntry)) != single.checksum)
      fail("catalog: corrupt (checksum mismatch)");
  }
  Catalog catalog;
  for (const SavedEntry& entry : saved) {
    std::size_t length = strnlen(entry.name, sizeof(entry.name));
    catalog.add(std::string_view(entry.name, length), entry.key_size, entry.value_size,
                Swip::from_page_id(entry.root));
  }
  catalog.sequence_ = newest.header ? newest.header->sequence : 0;
  return catalog;
}

}  // namespace tristore
