// LruMap on its own: the bound, the order a get() refreshes and a peek()
// leaves alone, and what put() hands back when it evicts.
#include "engine/util/lru.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vigil::util {
namespace {

std::vector<int> keys_of(const LruMap<int, std::string>& m) {
  std::vector<int> out;
  m.for_each([&](int k, const std::string&) { out.push_back(k); });
  return out;
}

TEST(LruMap, EvictsTheLeastRecentlyUsedEntryAndReturnsIt) {
  LruMap<int, std::string> m(2);
  EXPECT_FALSE(m.put(1, "one"));
  EXPECT_FALSE(m.put(2, "two"));
  ASSERT_NE(m.get(1), nullptr);  // 1 is now the most recent
  auto evicted = m.put(3, "three");
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->first, 2);
  EXPECT_EQ(evicted->second, "two");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(keys_of(m), (std::vector<int>{3, 1}));
}

TEST(LruMap, PeekDoesNotRefreshAnEntry) {
  LruMap<int, std::string> m(2);
  m.put(1, "one");
  m.put(2, "two");
  ASSERT_NE(m.peek(1), nullptr);
  auto evicted = m.put(3, "three");
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->first, 1);
}

TEST(LruMap, PutReplacesInPlaceAndTellsWhere) {
  LruMap<int, std::string> m(2);
  std::string* where = nullptr;
  m.put(1, "one", &where);
  ASSERT_NE(where, nullptr);
  EXPECT_EQ(*where, "one");
  EXPECT_FALSE(m.put(1, "uno", &where));
  EXPECT_EQ(*where, "uno");
  EXPECT_EQ(m.size(), 1u);
  EXPECT_TRUE(m.erase(1));
  EXPECT_FALSE(m.erase(1));
  EXPECT_FALSE(m.contains(1));
}

TEST(LruMap, ACapacityOfZeroHoldsOneEntry) {
  LruMap<int, std::string> m(0);
  EXPECT_EQ(m.capacity(), 1u);
  m.put(1, "one");
  EXPECT_TRUE(m.put(2, "two"));
  EXPECT_EQ(keys_of(m), (std::vector<int>{2}));
}

}  // namespace
}  // namespace vigil::util
