// The SA client's byte work (sa/sa_mad.h) and its PathRecord cache (sa/path_cache.h), with
// offsets from IBA 13.4.2 (MAD header), 15.2.1.1 (SA header) and 15.2.5.16 (PathRecord).
#include <gtest/gtest.h>

#include "runtime/al/src/sa/path_cache.h"
#include "runtime/al/src/sa/sa_mad.h"

namespace softib::al::sa {
namespace {

TEST(SaMad, RequestBytes) {
  std::vector<uint8_t> record(64, 0);
  record[8] = 0xFE;
  record[63] = 0x5A;
  SaRequest request{kGetTable, kPathRecordAttribute, 0x01020304, 0x0Cull, record};
  ASSERT_TRUE(IsClientRequest(request));
  const std::vector<uint8_t> mad = BuildSaMad(request, 0x1122334455667788ull);
  ASSERT_EQ(mad.size(), 256u);
  const std::vector<uint8_t> header = {1,    0x03, 2,    0x12, 0,    0,    0,    0,
                                       0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                                       0x00, 0x35, 0,    0,    1,    2,    3,    4};
  EXPECT_TRUE(std::equal(header.begin(), header.end(), mad.begin()));
  for (int i = 24; i < 44; ++i) EXPECT_EQ(mad[i], 0) << i;  // RMPP header, SM_Key
  EXPECT_EQ(mad[44], 0);
  EXPECT_EQ(mad[45], 8);  // AttributeOffset
  EXPECT_EQ(mad[55], 0x0C);
  EXPECT_EQ(mad[56 + 8], 0xFE);
  EXPECT_EQ(mad[56 + 63], 0x5A);
  EXPECT_EQ(mad[56 + 64], 0);
  // Responses, attribute 0 and templates beyond SAData are not requests.
  request.method = kGetResponse;
  EXPECT_FALSE(IsClientRequest(request));
  request.method = kGet;
  request.attribute_id = 0;
  EXPECT_FALSE(IsClientRequest(request));
  std::vector<uint8_t> big(201);
  EXPECT_FALSE(IsClientRequest(SaRequest{kGet, kPathRecordAttribute, 0, 0, big}));
}

TEST(SaMad, AnswersSplitIntoRecords) {
  std::vector<uint8_t> mad(56 + 3 * 112 + 5, 0);  // a reassembled table, 5 bytes of padding
  mad[1] = 0x03;
  mad[3] = kGetTableResponse;
  mad[45] = 14;
  for (std::size_t i = 56; i < mad.size(); ++i) mad[i] = static_cast<uint8_t>(i);
  SaAnswer answer = ParseSaAnswer(mad);
  ASSERT_TRUE(answer.valid);
  EXPECT_EQ(answer.record_size, 112u);
  EXPECT_EQ(answer.num_records, 3u);
  ASSERT_EQ(answer.data.size(), 336u);
  EXPECT_EQ(answer.data[0], 56);
  // A Get answer: one record, the SAData.
  std::vector<uint8_t> one(256, 0);
  one[1] = 0x03;
  one[3] = kGetResponse;
  one[45] = 8;
  answer = ParseSaAnswer(one);
  EXPECT_EQ(answer.num_records, 1u);
  EXPECT_EQ(answer.record_size, 64u);
  // An error status: no data; not a response or too short: invalid.
  one[4] = 0x04;
  answer = ParseSaAnswer(one);
  EXPECT_TRUE(answer.valid);
  EXPECT_EQ(answer.mad_status, 0x0400);
  EXPECT_TRUE(answer.data.empty());
  one[3] = kGet;
  EXPECT_FALSE(ParseSaAnswer(one).valid);
  EXPECT_FALSE(ParseSaAnswer(std::span<const uint8_t>(one).first(40)).valid);
}

TEST(PathCacheTest, KeyedByTheSelectedFieldsAndDroppedPerPort) {
  std::vector<uint8_t> a(64, 0), b(64, 0);
  a[8] = b[8] = 0xFE;  // DGID (component 2)
  b[53] = 0x05;        // SL (component 15), not selected
  b[40] = 0x12;        // DLID (component 4), not selected
  const uint64_t mask = 1ull << 2;
  SaRequest ra{kGet, kPathRecordAttribute, 0, mask, a}, rb{kGet, kPathRecordAttribute, 0, mask, b};
  EXPECT_TRUE(PathCache::Cacheable(ra));
  EXPECT_FALSE(PathCache::Cacheable(SaRequest{kSet, kPathRecordAttribute, 0, mask, a}));
  EXPECT_FALSE(PathCache::Cacheable(SaRequest{kGet, kServiceRecordAttribute, 0, mask, a}));
  EXPECT_EQ(PathCache::KeyOf(1, ra), PathCache::KeyOf(1, rb));
  SaRequest by_sl = rb;
  by_sl.component_mask |= 1ull << 15;
  EXPECT_NE(PathCache::KeyOf(1, ra), PathCache::KeyOf(1, by_sl));
  EXPECT_NE(PathCache::KeyOf(1, ra), PathCache::KeyOf(2, ra));

  PathCache cache;
  SaAnswer answer;
  answer.valid = true;
  answer.num_records = 1;
  answer.record_size = 64;
  answer.data.assign(64, 7);
  EXPECT_FALSE(cache.Lookup(PathCache::KeyOf(1, ra)));
  cache.Store(PathCache::KeyOf(1, ra), answer);
  cache.Store(PathCache::KeyOf(2, ra), answer);
  SaAnswer refused = answer;
  refused.mad_status = 0x0400;
  cache.Store(PathCache::KeyOf(1, by_sl), refused);  // errors are not kept
  ASSERT_TRUE(cache.Lookup(PathCache::KeyOf(1, rb)));
  EXPECT_EQ(cache.Lookup(PathCache::KeyOf(1, rb))->data, answer.data);
  EXPECT_FALSE(cache.Lookup(PathCache::KeyOf(1, by_sl)));
  PathCache::Stats stats = cache.Read(1);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.entries, 1u);
  cache.Invalidate(1);
  EXPECT_EQ(cache.Read(1).entries, 0u);
  EXPECT_EQ(cache.Read(1).invalidations, 1u);
  EXPECT_EQ(cache.Read(2).entries, 1u);
}

// InformInfo (IBA 13.4.8.3, Table 207): GID 0..15, LIDRangeBegin 16, LIDRangeEnd 18,
// IsGeneric 22, Subscribe 23, Type 24, TrapNumber 26, QPN in bits 31..8 of the word at 28,
// RespTimeValue in bits 4..0 of byte 31, ProducerType in bytes 33..35.
TEST(SaMad, InformInfoBytes) {
  const std::array<uint8_t, 36> subscribe = {0,    0,    0,   0, 0, 0,
                                             0,    0,    0,   0, 0, 0,  // GID: any
                                             0,    0,    0,   0,        //
                                             0xFF, 0xFF,                // LIDRangeBegin: every LID
                                             0,    0,                   // LIDRangeEnd
                                             0,    0,                   // reserved
                                             1,                         // IsGeneric
                                             1,                         // Subscribe
                                             0xFF, 0xFF,                // Type: all
                                             0x00, 0x90,                // TrapNumber 144
                                             0,    0,    1,             // QPN 1
                                             19,                        // RespTimeValue 19
                                             0,                         // reserved
                                             0xFF, 0xFF, 0xFF};         // ProducerType: all
  EXPECT_EQ(InformInfo(144, true), subscribe);
  std::array<uint8_t, 36> unsubscribe = subscribe;
  unsubscribe[23] = 0;
  unsubscribe[27] = 65;
  EXPECT_EQ(InformInfo(65, false), unsubscribe);
}

}  // namespace
}  // namespace softib::al::sa
