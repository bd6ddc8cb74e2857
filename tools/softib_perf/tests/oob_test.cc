// The out-of-band channel: accept/connect on a Unix socket in a private directory, whole
// messages, barriers, stale sockets and paths that are not sockets.
#include "oob.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace softib::perf {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/softib_perf_oob.XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(PerfOob, ServerAndClientSwapPeerInfoAndPassABarrier) {
  TempDir dir;
  OobAddress address{OobAddress::Kind::kUnix, dir.path("oob.sock"), 0};
  PeerInfo from_server;
  from_server.magic = kInfoMagic;
  from_server.qpn = 0x123456;
  from_server.rkey = 0xabcdef01;
  from_server.vaddr = 0x7fff00001000;
  std::string server_error;
  bool server_ok = false;
  PeerInfo at_server;
  std::thread server([&] {
    OobChannel channel;
    server_ok = OobChannel::Accept(address, 10s, &channel, &server_error) &&
                channel.SendValue(from_server, &server_error) &&
                channel.ReceiveValue(&at_server, 10s, &server_error);
    Token theirs;
    server_ok = server_ok && channel.Exchange(Token{kReady, 0, 7}, &theirs, 10s, &server_error) &&
                theirs.value64 == 8;
  });
  OobChannel client;
  std::string error;
  ASSERT_TRUE(OobChannel::Connect(address, 10s, &client, &error)) << error;
  PeerInfo at_client;
  ASSERT_TRUE(client.ReceiveValue(&at_client, 10s, &error)) << error;
  PeerInfo from_client;
  from_client.qpn = 0x42;
  ASSERT_TRUE(client.SendValue(from_client, &error)) << error;
  Token theirs;
  ASSERT_TRUE(client.Exchange(Token{kReady, 0, 8}, &theirs, 10s, &error)) << error;
  server.join();
  EXPECT_TRUE(server_ok) << server_error;
  EXPECT_EQ(theirs.value64, 7u);
  EXPECT_EQ(at_client.qpn, 0x123456u);
  EXPECT_EQ(at_client.rkey, 0xabcdef01u);
  EXPECT_EQ(at_client.vaddr, 0x7fff00001000u);
  EXPECT_EQ(at_server.qpn, 0x42u);
  // The listening socket is gone once the client is in.
  EXPECT_FALSE(std::filesystem::exists(address.path));
}

TEST(PerfOob, BarrierFailsWhenThePeerFailedOrLeft) {
  OobChannel a, b;
  std::string error;
  ASSERT_TRUE(OobChannel::Pair(&a, &b, &error)) << error;
  ASSERT_TRUE(b.SendValue(Token{kFailed, 0, 0}, &error));
  Token theirs;
  EXPECT_FALSE(a.Exchange(Token{kReady, 0, 0}, &theirs, 5s, &error));
  EXPECT_EQ(error, "the peer failed");
  b = OobChannel();  // closed
  EXPECT_FALSE(a.ReceiveValue(&theirs, 5s, &error));
  EXPECT_EQ(error, "the peer closed the out-of-band connection");
}

TEST(PerfOob, ReceiveGivesUpAfterItsLimit) {
  OobChannel a, b;
  std::string error;
  ASSERT_TRUE(OobChannel::Pair(&a, &b, &error));
  Token token;
  EXPECT_FALSE(a.ReceiveValue(&token, 50ms, &error));
  EXPECT_NE(error.find("sent nothing"), std::string::npos) << error;
}

TEST(PerfOob, ClientWithoutServerTimesOut) {
  TempDir dir;
  OobAddress address{OobAddress::Kind::kUnix, dir.path("none.sock"), 0};
  OobChannel channel;
  std::string error;
  EXPECT_FALSE(OobChannel::Connect(address, 100ms, &channel, &error));
  EXPECT_NE(error.find("no server"), std::string::npos) << error;
}

TEST(PerfOob, ServerRefusesAPathThatIsNotASocketAndReplacesAStaleOne) {
  TempDir dir;
  const std::string file = dir.path("file");
  std::ofstream(file) << "x";
  OobChannel channel;
  std::string error;
  EXPECT_FALSE(OobChannel::Accept({OobAddress::Kind::kUnix, file, 0}, 100ms, &channel, &error));
  EXPECT_NE(error.find("not a socket"), std::string::npos) << error;

  // A stale socket (its server gone): bound and closed without listening.
  const std::string stale = dir.path("stale.sock");
  {
    OobChannel first;
    std::thread server([&] {
      std::string e;
      OobChannel::Accept({OobAddress::Kind::kUnix, stale, 0}, 5s, &first, &e);
    });
    OobChannel client;
    ASSERT_TRUE(OobChannel::Connect({OobAddress::Kind::kUnix, stale, 0}, 5s, &client, &error));
    server.join();
  }
  // Recreate a stale file at the path: a socket nobody serves.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::snprintf(un.sun_path, sizeof un.sun_path, "%s", stale.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof un), 0);
  close(fd);
  std::thread server([&] {
    std::string e;
    OobChannel accepted;
    EXPECT_TRUE(OobChannel::Accept({OobAddress::Kind::kUnix, stale, 0}, 5s, &accepted, &e)) << e;
  });
  OobChannel client;
  EXPECT_TRUE(OobChannel::Connect({OobAddress::Kind::kUnix, stale, 0}, 5s, &client, &error))
      << error;
  server.join();
}

TEST(PerfOob, AddressesAreUnixOrLoopbackTcp) {
  std::string error;
  EXPECT_TRUE(ParseOobAddress("unix:/tmp/a", &error).has_value());
  EXPECT_TRUE(ParseOobAddress("tcp:localhost:80", &error).has_value());
  EXPECT_FALSE(ParseOobAddress("tcp:192.168.1.1:80", &error).has_value());
  EXPECT_NE(error.find("127.0.0.1"), std::string::npos);
  EXPECT_FALSE(ParseOobAddress("tcp:127.0.0.1:65536", &error).has_value());
  EXPECT_FALSE(ParseOobAddress("unix:" + std::string(200, 'a'), &error).has_value());
}

}  // namespace
}  // namespace softib::perf
