// GetTable answers by RMPP (sa_rmpp.cc) and the requester's side of them (ParseSaTransfer),
// without I/O: the transfer's bytes, the limit of the AL's channel (AlMaxRmppBytes) and the
// clean refusal of a table beyond it, on the default fabric and on ft36.
#include <gtest/gtest.h>

#include "fabric/topology/generators.h"
#include "softib/sm/al_mad_port.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "softib/sm/sa.h"
#include "softib/sm/sa_client.h"
#include "subnet_fixtures.h"

namespace softib::sm {
namespace {

using testing::Routed;

struct Answer {
  SaOutgoing out;
  SaClientAnswer parsed;
};

Answer Ask(SubnetAdmin& sa, const SaClientRequest& request) {
  MadBytes mad{};
  const codec::FormatDesc* desc = nullptr;
  EXPECT_EQ(BuildSaRequest(request, mad, &desc), "");
  mad[15] = 0x42;  // TID
  auto out = sa.Handle(mad, MadAddress{5, 1, 0, 0, 0}, 0);
  EXPECT_EQ(out.size(), 1u);
  Answer a{out.at(0), {}};
  a.parsed = ParseSaTransfer(a.out.transfer, *desc);
  return a;
}

TEST(SaRmpp, LimitIsWhatTheChannelLeaves) {
  // The channel's frames hold a whole MAX_RMPP_DATA transfer behind SendMad's and
  // GetMadEvent's structures: the transfer limit is MAX_RMPP_DATA itself.
  EXPECT_EQ(AlMaxRmppBytes(), 131072u);
}

TEST(SaRmpp, GetTableIsOneTransferOfEveryRecord) {
  Subnet subnet = Routed(fabric::DefaultTopology());
  SubnetAdmin sa;
  sa.set_subnet(&subnet);
  sa.set_rmpp_limit(AlMaxRmppBytes());
  const Answer nr = Ask(sa, {"NR", {}, kSaMethodGetTable});
  const std::vector<uint8_t>& t = nr.out.transfer;
  ASSERT_EQ(t.size(), 56u + 7 * 112);  // 7 NodeRecords of 108 bytes at AttributeOffset 14
  EXPECT_EQ(t[3], 0x92);               // GetTableResp
  EXPECT_EQ(t[15], 0x42);              // TID echoed
  EXPECT_EQ(t[24], 1);                 // RMPPVersion
  EXPECT_EQ(t[25], 1);                 // DATA
  EXPECT_EQ(t[26] & 0x1, 0x1);         // Active (the AL's sender sets First/Last per segment)
  EXPECT_EQ(t[44] << 8 | t[45], 14);
  EXPECT_EQ(nr.parsed.records.size(), 7u);
  EXPECT_EQ(nr.parsed.rmpp_segments, 4u);  // 784 bytes of records, 200 a segment
  EXPECT_EQ(sa.stats().rmpp_tables, 1u);
  EXPECT_EQ(sa.stats().truncated_tables, 0u);

  // Every path of the fabric: 7 × 7 PathRecords (the diagonal included), 64 bytes each.
  const Answer pr = Ask(sa, {"PR", {}, kSaMethodGetTable});
  EXPECT_EQ(pr.out.transfer.size(), 56u + 49 * 64);
  EXPECT_EQ(pr.parsed.records.size(), 49u);

  // No match: a transfer of the headers alone, status 0.
  const Answer none = Ask(sa, {"NR", {{"LID", "999"}}, kSaMethodGetTable});
  EXPECT_EQ(none.out.transfer.size(), 56u);
  EXPECT_EQ(none.parsed.status, 0);
  EXPECT_TRUE(none.parsed.records.empty());

  // Get stays a single MAD.
  const Answer get = Ask(sa, {"NR", {{"LID", "1"}}, kSaMethodGet});
  EXPECT_TRUE(get.out.transfer.empty());
  EXPECT_EQ(get.out.mad[3], 0x81);
}

TEST(SaRmpp, Ft36TablesAtTheLimit) {
  Subnet subnet = Routed(*fabric::MakePreset("ft36"));
  SubnetAdmin sa;
  sa.set_subnet(&subnet);
  sa.set_rmpp_limit(AlMaxRmppBytes());
  // Every PathRecord from one source: 612 destinations × 64 bytes = 39,168 bytes.
  const Answer one_source = Ask(sa, {"PR", {{"SLID", "1"}}, kSaMethodGetTable});
  EXPECT_EQ(one_source.parsed.status, 0);
  EXPECT_EQ(one_source.parsed.records.size(), 612u);
  EXPECT_EQ(one_source.parsed.rmpp_segments, (612u * 64 + 199) / 200);
  // Every NodeRecord: 612 × 112 = 68,544 bytes, in one transfer.
  const Answer all_nodes = Ask(sa, {"NR", {}, kSaMethodGetTable});
  EXPECT_EQ(all_nodes.parsed.status, 0);
  EXPECT_EQ(all_nodes.parsed.records.size(), 612u);
  EXPECT_EQ(all_nodes.out.transfer.size(), 56u + 612 * 112);
  // Every PathRecord of the fabric: 612 × 612 × 64 bytes, beyond 131,072 - 56: refused,
  // never cut short.
  const Answer all_paths = Ask(sa, {"PR", {}, kSaMethodGetTable});
  EXPECT_EQ(all_paths.parsed.status, kSaStatusNoResources);
  EXPECT_EQ(all_paths.out.transfer.size(), 56u);
  EXPECT_EQ(sa.stats().tables_too_large, 1u);
  // The switches' NodeRecords fit (36 × 112).
  const Answer switches = Ask(sa, {"NR", {{"NodeType", "2"}}, kSaMethodGetTable});
  EXPECT_EQ(switches.parsed.records.size(), 36u);
}

TEST(SaRmpp, RequesterRejectsMalformedTransfers) {
  const codec::FormatDesc* desc = nullptr;
  MadBytes mad{};
  ASSERT_EQ(BuildSaRequest({"NR", {}, kSaMethodGetTable}, mad, &desc), "");
  std::vector<uint8_t> t(40, 0);  // shorter than the SA header
  EXPECT_NE(ParseSaTransfer(t, *desc).error, "");
  t.assign(56 + 100, 0);  // 100 bytes are not whole 112-byte records
  t[45] = 14;
  EXPECT_NE(ParseSaTransfer(t, *desc).error, "");
  t.assign(56 + 224, 0);
  t[45] = 14;
  const SaClientAnswer ok = ParseSaTransfer(t, *desc);
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.records.size(), 2u);
}

}  // namespace
}  // namespace softib::sm
