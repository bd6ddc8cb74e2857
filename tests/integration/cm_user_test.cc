// Two user processes connecting through the CM of one softibd by service ID: every CM verb
// through the channel, CepGetEvent a pending IOCTL, traffic over the speed path, DREQ/DREP
// and time-wait; a process killed with its connection up, whose peer gets the DREQ
// (softib_cm_user_client).
#include <gtest/gtest.h>

#include <csignal>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

// Reads the child's lines until one contains `what`.
bool WaitForLine(Process& process, const char* what) {
  std::string line;
  while (process.ReadLine(&line, std::chrono::seconds(30))) {
    std::printf("server: %s\n", line.c_str());
    if (line.find(what) != std::string::npos) return true;
  }
  return false;
}

// A daemon, a server listening for `service` and a client connecting to it, in `roles`.
struct CmProcesses {
  void Start(const char* server_role, const char* client_role, const std::string& service) {
    ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
    ASSERT_TRUE(server.Start({SOFTIB_CM_USER_CLIENT, daemon.run_dir(), server_role, service}));
    ASSERT_TRUE(WaitForLine(server, "listening"));
    ASSERT_TRUE(client.Start({SOFTIB_CM_USER_CLIENT, daemon.run_dir(), client_role, service}));
  }
  SoftibdInstance daemon;
  Process server;
  Process client;
};

TEST(CmUserTest, TwoProcessesConnectByServiceIdAndDisconnect) {
  CmProcesses p;
  ASSERT_NO_FATAL_FAILURE(p.Start("server", "client", "1000000000C0FFEE"));
  Process& client = p.client;
  Process& server = p.server;
  const std::string client_out = client.ReadAllStdout(std::chrono::seconds(60));
  const std::string server_out = server.ReadAllStdout(std::chrono::seconds(60));
  std::printf("client:\n%sserver:\n%s", client_out.c_str(), server_out.c_str());
  EXPECT_EQ(client.Wait(std::chrono::seconds(60)), 0);
  EXPECT_EQ(server.Wait(std::chrono::seconds(60)), 0);
  EXPECT_EQ(client_out.find("FAILED"), std::string::npos);
  EXPECT_EQ(server_out.find("FAILED"), std::string::npos);
  EXPECT_NE(client_out.find("ok     received world"), std::string::npos);
  EXPECT_NE(server_out.find("ok     received hello"), std::string::npos);
  EXPECT_NE(client_out.find("ok     time-wait over"), std::string::npos);
  EXPECT_NE(server_out.find("ok     time-wait over"), std::string::npos);
  EXPECT_EQ(p.daemon.Stop(), 0);
}

TEST(CmUserTest, AProcessKilledWithAConnectionUpDisconnectsIt) {
  CmProcesses p;
  ASSERT_NO_FATAL_FAILURE(p.Start("server-dies", "client-waits", "1000000000C0FFEF"));
  Process& client = p.client;
  Process& server = p.server;
  ASSERT_TRUE(WaitForLine(server, "established"));
  // The client's side of the exchange complete too (its SEND ACKed), so that nothing but the
  // CM's DREQ is left to tell it the server is gone.
  std::string client_out;
  std::string line;
  while (client.ReadLine(&line, std::chrono::seconds(30))) {
    client_out += line + "\n";
    if (line.find("received world") != std::string::npos) break;
  }
  ASSERT_NE(client_out.find("ok     received world"), std::string::npos) << client_out;
  ASSERT_TRUE(server.Signal(SIGKILL));
  EXPECT_EQ(server.Wait(std::chrono::seconds(30)), 128 + SIGKILL);
  client_out += client.ReadAllStdout(std::chrono::seconds(60));
  std::printf("client:\n%s", client_out.c_str());
  EXPECT_EQ(client.Wait(std::chrono::seconds(60)), 0);
  EXPECT_EQ(client_out.find("FAILED"), std::string::npos);
  EXPECT_NE(client_out.find("ok     DREQ received (the peer died)"), std::string::npos);
  EXPECT_NE(client_out.find("ok     time-wait over"), std::string::npos);
  EXPECT_EQ(p.daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration
