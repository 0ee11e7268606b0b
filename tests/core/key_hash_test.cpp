// core/key_hash.hpp: SipHash against the published test vector, and what the keyed hash is for:
// keys built to share one std::hash value spread over a table's slots.
#include "core/key_hash.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "core/key_slots.hpp"
#include "support/stdhash_collisions.hpp"

namespace w4a8 {
namespace {

// The SipHash paper's Appendix A (SipHash-2-4, key 00 01 .. 0f, message 00 01 .. 0e): a129ca6149be45e5.
TEST(KeyHash, SipHash24MatchesThePapersVector) {
  std::string message;
  for (int i = 0; i < 15; ++i) message.push_back(static_cast<char>(i));
  const SipKey key{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};  // bytes 00..0f, little-endian words
  EXPECT_EQ((siphash<2, 4>(message, key)), 0xa129ca6149be45e5ULL);
}

// SipHash-c-d written as the paper states it, a byte at a time: the second implementation the
// word-at-a-time tail loads are checked against.
template <int C, int D>
std::uint64_t siphash_bytewise(std::string_view m, SipKey k) {
  std::uint64_t v[4] = {k.k0 ^ 0x736f6d6570736575ULL, k.k1 ^ 0x646f72616e646f6dULL, k.k0 ^ 0x6c7967656e657261ULL,
                        k.k1 ^ 0x7465646279746573ULL};
  auto rotl = [](std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); };
  auto round = [&] {
    v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);
    v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];
    v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];
    v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);
  };
  std::string padded(m);  // the message, zeros to a multiple of 8 less one, then its length mod 256
  while (padded.size() % 8 != 7) padded.push_back('\0');
  padded.push_back(static_cast<char>(m.size() & 0xff));
  for (std::size_t w = 0; w < padded.size(); w += 8) {
    std::uint64_t word = 0;
    for (int i = 0; i < 8; ++i) word |= std::uint64_t{static_cast<unsigned char>(padded[w + i])} << (8 * i);
    v[3] ^= word;
    for (int i = 0; i < C; ++i) round();
    v[0] ^= word;
  }
  v[2] ^= 0xff;
  for (int i = 0; i < D; ++i) round();
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

// The paper's key and messages 00, 00 01, ...: the first entries of the reference implementation's
// table of vectors, and the byte-at-a-time version, for every tail length and a few words more.
TEST(KeyHash, EveryLengthMatchesTheBytewiseDefinition) {
  const SipKey key{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  EXPECT_EQ((siphash<2, 4>("", key)), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ((siphash<2, 4>(std::string_view("\0", 1), key)), 0x74f839c593dc67fdULL);
  std::string m;
  for (int n = 0; n <= 40; ++n) {
    EXPECT_EQ((siphash<2, 4>(m, key)), (siphash_bytewise<2, 4>(m, key))) << n;
    EXPECT_EQ((siphash<1, 3>(m, {n * 7919ULL, ~0ULL / (n + 1)})), (siphash_bytewise<1, 3>(m, {n * 7919ULL, ~0ULL / (n + 1)}))) << n;
    // Through an unaligned view inside a larger buffer, as keys are (views of a header).
    const std::string around = "#" + m + "#";
    EXPECT_EQ((siphash<1, 3>(std::string_view(around).substr(1, m.size()), key)), (siphash_bytewise<1, 3>(m, key))) << n;
    m.push_back(static_cast<char>(n * 37 + 200));
  }
}

TEST(KeyHash, DependsOnTheKeyAndEveryByte) {
  const SipKey a{1, 2}, b{1, 3};
  EXPECT_NE((siphash<1, 3>("blocks.0.attn", a)), (siphash<1, 3>("blocks.0.attn", b)));
  EXPECT_NE((siphash<1, 3>("blocks.0.attn", a)), (siphash<1, 3>("blocks.0.attm", a)));
  EXPECT_NE((siphash<1, 3>(std::string_view("\0", 1), a)), (siphash<1, 3>(std::string_view(), a)));  // the length counts
  EXPECT_EQ(KeyHash{}("x"), KeyHash{}("x"));  // one key per process
}

TEST(KeyHash, KeysBuiltToCollideUnderStdHashSpreadOverSlots) {
  const auto keys = testing::stdhash_colliding_keys(2000);
  std::set<std::string> distinct(keys.begin(), keys.end());
  ASSERT_EQ(distinct.size(), keys.size());
#ifdef __GLIBCXX__  // the attack the keys were built for (libc++ hashes strings otherwise)
  for (const std::string& k : keys) ASSERT_EQ(std::hash<std::string_view>{}(k), std::hash<std::string_view>{}(keys[0])) << k;
#endif
  std::set<std::size_t> slots;  // a 4,096-slot table (KeySlots at 2,000 keys): expected ~1,660 distinct
  for (const std::string& k : keys) slots.insert(KeyHash{}(k) & 4095);
  EXPECT_GT(slots.size(), 1500u);
  // KeySlots finds every key at its position.
  KeySlots table;
  auto key_at = [&](std::uint32_t i) { return std::string_view(keys[i]); };
  table.rebuild(0, keys.size(), key_at);
  for (std::uint32_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(table.try_emplace(keys[i], i, key_at).second);
  for (std::uint32_t i = 0; i < keys.size(); ++i) ASSERT_EQ(table.try_emplace(keys[i], 99999, key_at).first, i);
}

}  // namespace
}  // namespace w4a8
