// The packets of the tshark test, read back by `softib mad decode --packet`'s
// walker: every header found, no error, both CRCs ok.
#include <gtest/gtest.h>

#include <sstream>

#include "ib_packets.h"
#include "packet_walk.h"

namespace softib::interop {
namespace {

TEST(OwnDecoder, ReadsEveryTestPacket) {
  for (const TestPacket& p : AllTestPackets()) {
    SCOPED_TRACE(p.name);
    std::ostringstream out;
    madtool::Errors errors;
    madtool::DecodePacket(out, p.bytes, &errors);
    EXPECT_TRUE(errors.empty()) << errors.front();
    const std::string text = out.str();
    EXPECT_NE(text.find("-- LRH (bytes 0..7) --"), std::string::npos);
    EXPECT_NE(text.find("-- BTH (bytes "), std::string::npos);
    EXPECT_NE(text.find(" ok\nVCRC:"), std::string::npos) << "ICRC not ok:\n" << text;
    EXPECT_EQ(text.substr(text.size() - 3), "ok\n") << "VCRC not ok:\n" << text;
    EXPECT_EQ(text.find("warning"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace softib::interop
