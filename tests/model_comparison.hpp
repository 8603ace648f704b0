#pragma once
// A store (a BTree, or an engine Table) and a std::map driven side by side: each operation goes
// to both, and the store's answer and contents must be the map's. The caller draws the
// operations, so each test keeps its own mix; after each call it checks
// ::testing::Test::HasFatalFailure() to stop at the first disagreement.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>

namespace tristore::testing_support {

template <typename Store, typename Key, typename Value>
class ModelComparison {
  static_assert(std::is_trivially_copyable_v<Value>, "partial updates copy value bytes");

 public:
  using Model = std::map<Key, Value>;

  explicit ModelComparison(Store& store) : store_(store) {}

  // Named in failure messages: the caller's operation counter.
  std::uint64_t op = 0;

  const Model& model() const { return model_; }

  // An entry the store got some other way (a bulk load).
  void record(const Key& key, const Value& value) { model_.insert_or_assign(key, value); }

  void insert(const Key& key, const Value& value) {
    const bool absent = model_.emplace(key, value).second;
    ASSERT_EQ(store_.insert(key, value), absent) << "insert " << name(key) << where();
  }

  void remove(const Key& key) {
    const bool present = model_.erase(key) == 1;
    ASSERT_EQ(store_.remove(key), present) << "remove " << name(key) << where();
  }

  void update(const Key& key, const Value& value) {
    auto it = model_.find(key);
    ASSERT_EQ(store_.update(key, value), it != model_.end()) << "update " << name(key) << where();
    if (it != model_.end()) it->second = value;
  }

  void update_part(const Key& key, std::size_t offset, std::size_t length, const void* bytes) {
    auto it = model_.find(key);
    ASSERT_EQ(store_.update_part(key, offset, length, bytes), it != model_.end())
        << "update_part " << name(key) << where();
    if (it != model_.end()) std::memcpy(bytes_of(it->second) + offset, bytes, length);
  }

  void lookup(const Key& key) {
    Value value{};
    auto it = model_.find(key);
    ASSERT_EQ(read(key, value), it != model_.end()) << "lookup " << name(key) << where();
    if (it != model_.end()) {
      ASSERT_TRUE(value == it->second) << "value of " << name(key) << where();
    }
  }

  void lookup_part(const Key& key, std::size_t offset, std::size_t length) {
    ASSERT_LE(offset + length, sizeof(Value));
    std::array<std::byte, sizeof(Value)> part;
    auto it = model_.find(key);
    ASSERT_EQ(read_part(key, offset, length, part.data()), it != model_.end())
        << "lookup_part " << name(key) << where();
    if (it != model_.end()) {
      ASSERT_EQ(std::memcmp(part.data(), bytes_of(it->second) + offset, length), 0)
          << "bytes of " << name(key) << where();
    }
  }

  // At most `limit` entries from `from` on, in key order, the same as the map's.
  void scan(const Key& from, std::size_t limit) {
    auto it = model_.lower_bound(from);
    const std::size_t expected = std::min<std::size_t>(limit, std::distance(it, model_.end()));
    const std::size_t visited = store_.scan(from, limit, [&](const Key& key, const Value& value) {
      EXPECT_TRUE(it != model_.end())
          << "scan from " << name(from) << " went past the end" << where();
      if (it == model_.end()) return false;
      EXPECT_TRUE(key == it->first && value == it->second)
          << "scan from " << name(from) << " at " << name(key) << where();
      ++it;
      return true;
    });
    ASSERT_EQ(visited, expected) << "scan from " << name(from) << where();
  }

  // Every entry, the same as the map's (Key{} is the smallest key).
  void scan_all() { scan(Key{}, model_.size() + 1); }

  // Removes every entry the map has; both end empty.
  void remove_all() {
    for (const auto& [key, value] : model_)
      ASSERT_TRUE(store_.remove(key)) << "remove_all: " << name(key) << " missing";
    model_.clear();
  }

 private:
  static std::byte* bytes_of(Value& value) { return reinterpret_cast<std::byte*>(&value); }
  static const std::byte* bytes_of(const Value& value) {
    return reinterpret_cast<const std::byte*>(&value);
  }
  static std::string name(const Key& key) { return ::testing::PrintToString(key); }
  std::string where() const { return " at op " + std::to_string(op); }

  // A BTree looks up, a Table gets.
  bool read(const Key& key, Value& out) {
    if constexpr (requires { store_.get(key, out); })
      return store_.get(key, out);
    else
      return store_.lookup(key, out);
  }
  bool read_part(const Key& key, std::size_t offset, std::size_t length, void* out) {
    if constexpr (requires { store_.get_part(key, offset, length, out); })
      return store_.get_part(key, offset, length, out);
    else
      return store_.lookup_part(key, offset, length, out);
  }

  Store& store_;
  Model model_;
};

}  // namespace tristore::testing_support
