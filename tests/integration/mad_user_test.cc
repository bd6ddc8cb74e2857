// softib_mad_user_client against a softibd process: a user process's GSI exchange through
// the channel (MAD pool, service, SendMad, blocking and cancelled GetMadEvent), and 120 KiB each
// way by RMPP.
#include <gtest/gtest.h>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

TEST(MadUserTest, GsiExchangeThroughTheChannel) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
  Process client;
  ASSERT_TRUE(client.Start({SOFTIB_MAD_USER_CLIENT, daemon.run_dir()}));
  const std::string transcript = client.ReadAllStdout(std::chrono::seconds(60));
  const int code = client.Wait(std::chrono::seconds(60));
  std::printf("%s", transcript.c_str());
  EXPECT_EQ(code, 0);
  EXPECT_EQ(transcript.find("FAILED"), std::string::npos);
  EXPECT_NE(transcript.find("response matched to the request"), std::string::npos);
  EXPECT_NE(transcript.find("ok     rmpp request reassembled: 122920 bytes"), std::string::npos);
  EXPECT_NE(transcript.find("ok     rmpp response matched: 122920 bytes"), std::string::npos);
  EXPECT_NE(transcript.find("0 failed"), std::string::npos);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration
