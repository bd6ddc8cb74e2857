// The AL backend's error paths without a node: GetMadEvent answers whose lengths disagree,
// runts and send completions (DecodeMadEvent), and opening a run directory where no softibd
// listens.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "softib/abi/verbs_al.h"
#include "softib/sm/al_mad_port.h"

namespace softib::sm {
namespace {

constexpr std::size_t kEvent = sizeof(abi::GetMadEventOut);

std::vector<uint8_t> EventBytes(abi::MadEventKind kind, uint32_t mad_length,
                                std::size_t room = kMadBytes) {
  std::vector<uint8_t> out(kEvent + room, 0);
  abi::GetMadEventOut ev{};
  ev.event.kind = kind;
  ev.event.remote_lid = 7;
  ev.event.remote_qpn = 1;
  ev.event.remote_sl = 3;
  ev.mad_length = mad_length;
  std::memcpy(out.data(), &ev, kEvent);
  for (std::size_t i = kEvent; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i);
  return out;
}

TEST(AlMadEvent, ASmpIsReceivedWithItsAddress) {
  auto out = EventBytes(abi::MadEventKind::RECEIVED, 256);
  ReceivedMad rx;
  std::string error;
  ASSERT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error), PortStatus::kOk);
  EXPECT_EQ(rx.from.lid, 7);
  EXPECT_EQ(rx.from.qpn, 1u);
  EXPECT_EQ(rx.from.sl, 3);
  EXPECT_EQ(rx.mad[0], static_cast<uint8_t>(kEvent));
  EXPECT_TRUE(rx.transfer.empty());
}

TEST(AlMadEvent, AnRmppTransferKeepsEveryByte) {
  auto out = EventBytes(abi::MadEventKind::RECEIVED, 840, 840);
  uint8_t* mad = out.data() + kEvent;
  mad[1] = 0x03;
  mad[24] = 1;     // RMPPVersion
  mad[26] = 0x07;  // Active
  ReceivedMad rx;
  std::string error;
  ASSERT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error), PortStatus::kOk);
  ASSERT_EQ(rx.transfer.size(), 840u);
  EXPECT_EQ(rx.transfer[839], out.back());
  EXPECT_EQ(rx.mad[255], mad[255]);
  // A one-segment transfer shorter than a MAD is a transfer too.
  out = EventBytes(abi::MadEventKind::RECEIVED, 56, 56);
  ASSERT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error), PortStatus::kOk);
  EXPECT_EQ(rx.transfer.size(), 56u);
}

TEST(AlMadEvent, LengthsThatDisagreeAreAnError) {
  ReceivedMad rx;
  std::string error;
  auto out = EventBytes(abi::MadEventKind::RECEIVED, 256);
  // Shorter than the event record.
  EXPECT_EQ(DecodeMadEvent(out, 10, rx, &error), PortStatus::kError);
  EXPECT_NE(error.find("10 bytes"), std::string::npos);
  // A MAD longer than what came.
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(kEvent + 100), rx, &error),
            PortStatus::kError);
  EXPECT_NE(error.find("MAD of 256"), std::string::npos);
  // More bytes claimed than the buffer holds.
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size() + 1), rx, &error),
            PortStatus::kError);
  // An absurd mad_length.
  out = EventBytes(abi::MadEventKind::RECEIVED, 0xFFFFFFFF);
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error), PortStatus::kError);
}

TEST(AlMadEvent, CompletionsAndRuntsAreNoMad) {
  ReceivedMad rx;
  std::string error;
  auto out = EventBytes(abi::MadEventKind::SEND_COMPLETED, 0);
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error),
            PortStatus::kTimeout);
  out = EventBytes(abi::MadEventKind::RECEIVED, 20);
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error),
            PortStatus::kTimeout);
  out = EventBytes(static_cast<abi::MadEventKind>(9), 256);
  EXPECT_EQ(DecodeMadEvent(out, static_cast<uint32_t>(out.size()), rx, &error),
            PortStatus::kTimeout);
}

TEST(AlMadPortOpen, NoNodeIsACleanError) {
  char dir[] = "/tmp/softib-almad-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  AlMadPortOptions options;
  options.run_dir = dir;
  std::string error;
  EXPECT_EQ(OpenAlMadPort(options, &error), nullptr);
  EXPECT_NE(error.find("no node answers in"), std::string::npos) << error;
  ::rmdir(dir);
}

}  // namespace
}  // namespace softib::sm
