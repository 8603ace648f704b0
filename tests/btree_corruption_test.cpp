// A damaged node must give an Error naming its page, never a read past the page or an endless
// descent (issue #10: a zeroed NVM page hung a scan in an endless loop).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "btree/btree.hpp"
#include "common/error.hpp"
#include "tiers/main_memory_access.hpp"

using namespace tristore;

namespace {

using Tree = BTree<std::uint64_t, std::uint64_t, MainMemoryAccess>;

struct TwoLevelTree {
  MainMemoryAccess access{64ull << 20};
  Swip root = Tree::create(access);
  Tree tree{access, root};

  TwoLevelTree() {
    for (std::uint64_t k = 0; k < 4 * Tree::kLeafCapacity; ++k) tree.insert(k, k);
  }
  NodeHeader& root_header() {
    return *reinterpret_cast<NodeHeader*>(access.fix(root, nullptr).whole_page() +
                                          kNodeHeaderOffset);
  }
  PageId root_page() { return access.fix(root, nullptr).page_id(); }
};

template <typename Operation>
void expect_corrupt_page(Operation&& operation, PageId page) {
  try {
    operation();
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("corrupt B-tree page " + std::to_string(page)), std::string::npos)
        << message;
  }
}

}  // namespace

TEST(BTreeCorruption, CountAboveCapacityIsAnErrorNamingThePage) {
  TwoLevelTree t;
  t.root_header().count = Tree::kInnerCapacity + 1;
  std::uint64_t value;
  expect_corrupt_page([&] { t.tree.lookup(5, value); }, t.root_page());
  expect_corrupt_page([&] { t.tree.scan(0, 10, [](auto&, auto&) { return true; }); },
                      t.root_page());
  expect_corrupt_page([&] { t.tree.remove(5); }, t.root_page());
}

TEST(BTreeCorruption, UnknownNodeKindIsAnErrorNamingThePage) {
  TwoLevelTree t;
  t.root_header().is_leaf = 7;
  std::uint64_t value;
  expect_corrupt_page([&] { t.tree.lookup(5, value); }, t.root_page());
  EXPECT_NE(t.tree.validate(), "");
}

// What a zeroed inner page looks like: no keys, child 0 leading back up the tree.
TEST(BTreeCorruption, ACycleOfPagesIsAnErrorNotAnEndlessDescent) {
  TwoLevelTree t;
  ASSERT_FALSE(t.root_header().is_leaf);
  auto root_guard = t.access.fix(t.root, nullptr);
  std::memcpy(root_guard.whole_page() + InnerLayout<std::uint64_t>::swip_offset(0), &t.root,
              sizeof(Swip));
  t.root_header().count = 0;
  std::uint64_t value;
  expect_corrupt_page([&] { t.tree.lookup(5, value); }, t.root_page());
  expect_corrupt_page([&] { t.tree.scan(0, 10, [](auto&, auto&) { return true; }); },
                      t.root_page());
  expect_corrupt_page([&] { t.tree.insert(1u << 30, 1); }, t.root_page());
  expect_corrupt_page([&] { t.tree.remove(5); }, t.root_page());
  EXPECT_NE(t.tree.validate().find("cycle"), std::string::npos);
}
