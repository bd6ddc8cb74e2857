// softib_mad_redirect_user_client against a softibd process: a user process's request
// redirected by a QP1 agent to a MAD QP and answered there, the next one sent there directly,
// and the MAD QP destroyed by the process's file cleanup.
#include <gtest/gtest.h>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

TEST(MadUserTest, RedirectToAMadQpThroughTheChannel) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
  Process client;
  ASSERT_TRUE(client.Start({SOFTIB_MAD_REDIRECT_USER_CLIENT, daemon.run_dir()}));
  const std::string transcript = client.ReadAllStdout(std::chrono::seconds(60));
  const int code = client.Wait(std::chrono::seconds(60));
  std::printf("%s", transcript.c_str());
  EXPECT_EQ(code, 0);
  EXPECT_EQ(transcript.find("FAILED"), std::string::npos);
  EXPECT_NE(transcript.find("ok     request 1 answered from the MAD QP"), std::string::npos);
  EXPECT_NE(transcript.find("ok     request 2 answered from the MAD QP"), std::string::npos);
  EXPECT_NE(transcript.find("0 failed"), std::string::npos);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration
