// Connected mode's UD side: IPv4 fragmentation, ICMP "fragmentation needed" and ICMPv6
// Packet Too Big, against bytes worked out by hand from RFC 791, RFC 792/1191 and RFC 4443
// (header checksums summed separately, not by this code).
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::Hex;

const std::vector<uint8_t> kEth = Hex("02 00 00 00 00 02 | 02 00 00 00 00 01 | 0800");
const std::vector<uint8_t> kEth6 = Hex("02 00 00 00 00 02 | 02 00 00 00 00 01 | 86dd");

std::vector<uint8_t> Data(size_t n, int mul, int add) {
  std::vector<uint8_t> d(n);
  for (size_t k = 0; k < n; ++k) d[k] = static_cast<uint8_t>(k * mul + add);
  return d;
}

std::vector<uint8_t> Cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<uint8_t> Slice(const std::vector<uint8_t>& v, size_t from, size_t n) {
  return {v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(from + n)};
}

// 198.18.0.1 → 198.18.0.2, UDP, identification 0x1234, 100 data bytes.
std::vector<uint8_t> Udp120() {
  return Cat(Cat(kEth, Hex("45000078 12340000 40110000 c6120001 c6120002")), Data(100, 3, 1));
}

TEST(Fragment, SplitsAnIpv4DatagramIntoEightByteMultiplesWithMfAndOffsets) {
  std::vector<std::vector<uint8_t>> out;
  const auto frame = Udp120();
  ASSERT_EQ(FragmentForMtu(frame, 68, &out), FragmentOutcome::kFragmented);
  ASSERT_EQ(out.size(), 3u);
  const auto data = Data(100, 3, 1);
  // 48 + 48 + 4 data bytes; MF on all but the last; offsets 0, 6, 12 (8-byte units).
  EXPECT_EQ(out[0], Cat(Cat(kEth, Hex("45000044 12342000 4011bc4d c6120001 c6120002")),
                        Slice(data, 0, 48)));
  EXPECT_EQ(out[1], Cat(Cat(kEth, Hex("45000044 12342006 4011bc47 c6120001 c6120002")),
                        Slice(data, 48, 48)));
  EXPECT_EQ(out[2], Cat(Cat(kEth, Hex("45000018 1234000c 4011dc6d c6120001 c6120002")),
                        Slice(data, 96, 4)));
}

TEST(Fragment, LaterFragmentsCarryOnlyTheCopiedOptions) {
  // Router Alert (0x94: copied) then Record Route (0x07: not copied) and an EOL pad.
  const auto options = Hex("94040000 07070400 00000000");
  const auto data = Data(40, 3, 1);
  const auto frame =
      Cat(Cat(Cat(kEth, Hex("48000048 12340000 40110000 c6120001 c6120002")), options), data);
  std::vector<std::vector<uint8_t>> out;
  ASSERT_EQ(FragmentForMtu(frame, 68, &out), FragmentOutcome::kFragmented);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0],
            Cat(Cat(Cat(kEth, Hex("48000040 12342000 40111a46 c6120001 c6120002")), options),
                Slice(data, 0, 32)));
  EXPECT_EQ(out[1], Cat(Cat(kEth, Hex("46000020 12340004 40114769 c6120001 c6120002 94040000")),
                        Slice(data, 32, 8)));
}

TEST(Fragment, AFragmentSplitFurtherKeepsItsOffsetAndMf) {
  // Offset 100 (800 bytes), MF set: both pieces keep MF, the second at 106.
  auto frame = Udp120();
  frame[14 + 6] = 0x20;
  frame[14 + 7] = 100;
  std::vector<std::vector<uint8_t>> out;
  ASSERT_EQ(FragmentForMtu(frame, 68, &out), FragmentOutcome::kFragmented);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0][14 + 6], 0x20);
  EXPECT_EQ(out[0][14 + 7], 100);
  EXPECT_EQ(out[1][14 + 7], 106);
  EXPECT_EQ(out[2][14 + 6], 0x20) << "MF: more of the original datagram follows";
  EXPECT_EQ(out[2][14 + 7], 112);
}

TEST(Fragment, FitsDontFragmentTooBigAndMalformed) {
  std::vector<std::vector<uint8_t>> out;
  EXPECT_EQ(FragmentForMtu(Udp120(), 120, &out), FragmentOutcome::kFits);
  EXPECT_TRUE(out.empty());
  auto df = Udp120();
  df[14 + 6] = 0x40;
  EXPECT_EQ(FragmentForMtu(df, 68, &out), FragmentOutcome::kDontFragment);
  const auto arp = Cat(Hex("ffffffffffff 020000000001 0806"), Data(28, 1, 0));
  EXPECT_EQ(FragmentForMtu(arp, 68, &out), FragmentOutcome::kFits);
  auto v6 = Cat(Cat(kEth6, Hex("60000000 00c81140 fe800000000000000000000000000001"
                               "fe800000000000000000000000000002")),
                Data(200, 1, 0));
  EXPECT_EQ(FragmentForMtu(v6, 200, &out), FragmentOutcome::kTooBig);
  EXPECT_EQ(FragmentForMtu(v6, 240, &out), FragmentOutcome::kFits);
  auto runt = Udp120();
  runt.resize(60);  // the header claims 120
  EXPECT_EQ(FragmentForMtu(runt, 68, &out), FragmentOutcome::kMalformed);
  EXPECT_EQ(FragmentForMtu(Udp120(), 40, &out), FragmentOutcome::kMalformed) << "below 68";
  EXPECT_EQ(FragmentForMtu(Hex("0102"), 68, &out), FragmentOutcome::kMalformed);
}

TEST(IcmpFragmentationNeeded, QuotesTheHeaderAndEightBytesWithTheNextHopMtu) {
  // ICMP datagram of 2020 bytes with DF, 198.18.0.1 → 198.18.0.2.
  const auto frame =
      Cat(Cat(kEth, Hex("450007e4 12344000 400194bd c6120001 c6120002")), Data(2000, 3, 1));
  const std::array<uint8_t, 4> source = {198, 18, 0, 2};
  const auto answer = BuildIcmpFragmentationNeeded(frame, 2044, source);
  // From the MAC the host sent to, to the host; IPv4 198.18.0.2 → 198.18.0.1, ICMP 3/4,
  // MTU 2044 (0x07fc), the original header and its first 8 data bytes.
  EXPECT_EQ(answer, Hex("020000000001 020000000002 0800"
                        "45000038 00000000 4001ee9d c6120002 c6120001"
                        "0304cccb 000007fc"
                        "450007e4 12344000 400194bd c6120001 c6120002"
                        "0104070a 0d101316"));
  EXPECT_TRUE(BuildIcmpFragmentationNeeded(Hex("ffff"), 2044, source).empty());
}

TEST(Icmpv6PacketTooBig, QuotesUpTo1280BytesWithTheMtu) {
  const auto payload = Data(2100, 5, 2);
  const auto frame = Cat(Cat(kEth6, Hex("60000000 08341140 fe800000000000000000000000000001"
                                        "fe800000000000000000000000000002")),
                         payload);
  std::array<uint8_t, 16> source{};
  source[0] = 0xfe;
  source[1] = 0x80;
  source[15] = 2;
  const auto answer = BuildIcmpv6PacketTooBig(frame, 2044, source);
  ASSERT_EQ(answer.size(), 14u + 1280);
  EXPECT_EQ(Slice(answer, 0, 54), Hex("020000000001 020000000002 86dd"
                                      "6000000004d83a40 fe800000000000000000000000000002"
                                      "fe800000000000000000000000000001"));
  // Type 2, code 0, checksum (summed by hand over the pseudo-header), MTU 2044.
  EXPECT_EQ(Slice(answer, 54, 8), Hex("020080d5 000007fc"));
  EXPECT_EQ(Slice(answer, 62, 1232), Slice(frame, 14, 1232));
  EXPECT_TRUE(BuildIcmpv6PacketTooBig(Udp120(), 2044, source).empty());
}

}  // namespace
}  // namespace softib::ipoib
