// softibd --light-hosts as a process: light hosts answer SMPs and PerfMgt MADs with the
// very bytes full nodes answer (the same GUIDs, the same requests, one daemon of each), their
// ports follow SubnSet through Init -> Armed -> Active as a full node's do, and softib-sm
// brings a light-host fabric (ft36) up with --verify. The MADs travel through the daemon's
// ibsim server as any ibsim client's do, here from a small client speaking the protocol.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ibsim_harness.h"
#include "softib/fabric/ibsim_protocol.h"
#include "softib/mad/mad_sm.h"
#include "softib/sm/smp.h"

namespace {

using softib::sm::testing::Child;
namespace ibsim = softib::fabric::ibsim;
using Mad = std::array<uint8_t, 256>;

std::atomic<uint32_t> next_id{0};

socklen_t Abstract(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size() + 1);
}

int BoundTo(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr;
  const socklen_t len = Abstract(name, &addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) return -1;
  return fd;
}

bool ConnectTo(int fd, const std::string& name) {
  sockaddr_un addr;
  const socklen_t len = Abstract(name, &addr);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
}

bool Receive(int fd, uint8_t* buffer, std::size_t size, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return recv(fd, buffer, size, 0) == static_cast<ssize_t>(size);
}

// An ibsim client attached at a host of the daemon's fabric (what umad2sim does).
class Client {
 public:
  Client(const std::string& base, const std::string& host) {
    const uint32_t id = static_cast<uint32_t>(getpid()) * 64 + next_id++;
    ctl_ = BoundTo(base + ":ctl" + std::to_string(id));
    data_ = BoundTo(base + ":in" + std::to_string(id));
    if (ctl_ < 0 || data_ < 0 || !ConnectTo(ctl_, base + ":ctl")) return;
    ibsim::CtlMessage connect;
    connect.type = ibsim::CtlType::kConnect;
    ibsim::ClientInfo info;
    info.id = id;
    info.nodeid = host;
    ibsim::EncodeClientInfo(info, &connect.data);
    const auto bytes = ibsim::EncodeCtl(connect);
    std::array<uint8_t, ibsim::kCtlBytes> reply{};
    if (send(ctl_, bytes.data(), bytes.size(), 0) < 0 ||
        !Receive(ctl_, reply.data(), reply.size(), 5000))
      return;
    const auto answer = ibsim::ParseCtl(reply);
    if (!answer || answer->type != ibsim::CtlType::kConnect) return;
    attached_ = ConnectTo(data_, base + ":out" + std::to_string(answer->client_id));
  }
  ~Client() {
    if (ctl_ >= 0) close(ctl_);
    if (data_ >= 0) close(data_);
  }
  bool attached() const { return attached_; }

  // One request; the response MAD, or nullopt when none came (or the server dropped it).
  std::optional<Mad> Ask(const Mad& mad, uint16_t dlid, uint32_t qpn) {
    ibsim::Request r;
    r.dlid = dlid;
    r.slid = dlid == 0xFFFF ? 0xFFFF : 0;
    r.dqp = qpn;
    r.sqp = qpn;
    r.length = 256;
    r.mad = mad;
    const uint64_t tid = ++tid_;
    for (int i = 0; i < 8; ++i) r.mad[8 + i] = static_cast<uint8_t>(tid >> (56 - 8 * i));
    const auto bytes = ibsim::EncodeRequest(r);
    if (send(data_, bytes.data(), bytes.size(), 0) < 0) return std::nullopt;
    std::array<uint8_t, ibsim::kRequestBytes> in{};
    if (!Receive(data_, in.data(), in.size(), 500)) return std::nullopt;
    const auto answer = ibsim::ParseRequest(in);
    if (!answer || answer->status != 0) return std::nullopt;
    Mad response = answer->mad;
    std::fill_n(response.begin() + 8, 8, 0);  // the TID is the requester's own
    return response;
  }
  std::optional<Mad> Smp(uint8_t method, uint16_t attribute, uint32_t modifier,
                         const std::vector<uint8_t>& path, std::span<const uint8_t> data = {}) {
    return Ask(softib::sm::MakeDrSmp(method, attribute, modifier, path, data), 0xFFFF, 0);
  }
  // PerfMgt Get(PortCounters) of port 1 at `lid` (IBA 16.1.3.5).
  std::optional<Mad> PortCounters(uint16_t lid) {
    Mad mad{};
    mad[0] = 1, mad[1] = 0x04, mad[2] = 1, mad[3] = 0x01;  // PerfMgt v1 Get
    mad[16] = 0x00, mad[17] = 0x12;                        // PortCounters
    mad[64 + 1] = 1;                                       // PortSelect
    return Ask(mad, lid, 1);
  }

 private:
  int ctl_ = -1, data_ = -1;
  bool attached_ = false;
  uint64_t tid_ = 0x100;
};

class Daemon {
 public:
  explicit Daemon(std::vector<std::string> args) {
    char dir[] = "/tmp/softibd_light.XXXXXX";
    if (!mkdtemp(dir)) return;
    dir_ = dir;
    sock_ = "softibd-light-" + std::to_string(getpid()) + "-" + std::to_string(next_id++);
    std::vector<std::string> argv = {SOFTIBD_BINARY, "--run-dir", dir_ + "/run", "--ibsim", sock_};
    argv.insert(argv.end(), args.begin(), args.end());
    child_ = std::make_unique<Child>(argv, dir_, std::map<std::string, std::string>{});
    ready_ = child_->WaitFor("softibd: ready", 60000);
  }
  ~Daemon() {
    child_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool ready() const { return ready_; }
  const std::string& sock() const { return sock_; }
  const std::string& dir() const { return dir_; }
  std::string log() const { return child_ ? child_->output() : ""; }

 private:
  std::string dir_, sock_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

softib::mad::PortInfo PortInfoOf(const Mad& mad) {
  softib::mad::PortInfo info;
  info.Unpack(std::span<const uint8_t>(mad).subspan(64, 64));
  return info;
}

// What a client at host-0001 learns about every CA it reaches in at most two hops, and
// about its own port: the GetResp MADs, in order.
std::vector<Mad> Survey(Client& c, std::vector<uint16_t>* lids) {
  using namespace softib::sm;
  std::vector<Mad> answers;
  auto keep = [&](std::optional<Mad> m) {
    EXPECT_TRUE(m.has_value());
    if (m) answers.push_back(*m);
    return m;
  };
  auto ask_ca = [&](const std::vector<uint8_t>& path) {
    keep(c.Smp(kMethodGet, kAttrNodeDescription, 0, path));
    if (auto pi = keep(c.Smp(kMethodGet, kAttrPortInfo, 0, path)))
      lids->push_back(PortInfoOf(*pi).LID);
  };
  keep(c.Smp(kMethodGet, kAttrNodeInfo, 0, {}));
  ask_ca({});
  const auto leaf = c.Smp(kMethodGet, kAttrNodeInfo, 0, {1});
  EXPECT_TRUE(leaf.has_value());
  if (!leaf) return answers;
  for (uint8_t p = 1; p <= (*leaf)[64 + 2]; ++p) {  // NodeInfo NumPorts @2
    const auto node = c.Smp(kMethodGet, kAttrNodeInfo, 0, {1, p});
    if (!node || (*node)[64 + 1] != 1) continue;  // NodeType @1: CA
    answers.push_back(*node);
    ask_ca({1, p});
  }
  return answers;
}

TEST(LightHosts, AnswerSmpsAndPortCountersWithTheBytesOfFullNodes) {
  // Static LIDs, so PerfMgt MADs are LID-routed through the switches' LFTs.
  Daemon full({"--fabric", "default"});
  Daemon light({"--fabric", "default", "--light-hosts"});
  ASSERT_TRUE(full.ready()) << full.log();
  ASSERT_TRUE(light.ready()) << light.log();
  EXPECT_NE(light.log().find("4 hosts, 4 of them light"), std::string::npos) << light.log();
  EXPECT_FALSE(std::filesystem::exists(light.dir() + "/run/host-0002"));
  Client at_full(full.sock(), "host-0001"), at_light(light.sock(), "host-0001");
  ASSERT_TRUE(at_full.attached() && at_light.attached());

  std::vector<uint16_t> full_lids, light_lids;
  const std::vector<Mad> expected = Survey(at_full, &full_lids);
  const std::vector<Mad> got = Survey(at_light, &light_lids);
  // NodeInfo, NodeDescription, PortInfo of host-0001 (its own agents), of host-0001 again
  // and of host-0002 through their leaf.
  ASSERT_EQ(expected.size(), 9u);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "answer " << i;
  ASSERT_EQ(light_lids, full_lids);
  ASSERT_EQ(light_lids.size(), 3u);
  EXPECT_NE(light_lids[2], 0);
  EXPECT_NE(light_lids[2], light_lids[0]);

  // PortCounters of host-0002's port, twice (the second answer counts the first exchange),
  // and of host-0001's own port.
  for (const uint16_t lid : {light_lids[2], light_lids[2], light_lids[0]}) {
    const auto expected_counters = at_full.PortCounters(lid);
    const auto got_counters = at_light.PortCounters(lid);
    ASSERT_TRUE(expected_counters && got_counters) << "LID " << lid;
    EXPECT_EQ(*got_counters, *expected_counters) << "LID " << lid;
    EXPECT_EQ((*got_counters)[3], 0x81);  // GetResp
  }
}

TEST(LightHosts, PortStatesFollowSubnSetAsOnAFullNode) {
  using namespace softib::sm;
  Daemon full({"--fabric", "default", "--sm", "external"});
  Daemon light(
      {"--fabric", "default", "--sm", "external", "--light-hosts", "--full-hosts", "host-0004"});
  ASSERT_TRUE(full.ready()) << full.log();
  ASSERT_TRUE(light.ready()) << light.log();
  EXPECT_NE(light.log().find("4 hosts, 3 of them light"), std::string::npos) << light.log();
  EXPECT_TRUE(std::filesystem::exists(light.dir() + "/run/host-0004"));
  Client at_full(full.sock(), "host-0001"), at_light(light.sock(), "host-0001");
  ASSERT_TRUE(at_full.attached() && at_light.attached());
  // host-0002: the CA behind host-0001's leaf that is not host-0001.
  const auto self = at_full.Smp(kMethodGet, kAttrNodeInfo, 0, {});
  ASSERT_TRUE(self.has_value());
  std::vector<uint8_t> path;
  for (uint8_t p = 1; p <= 36 && path.empty(); ++p) {
    const auto node = at_full.Smp(kMethodGet, kAttrNodeInfo, 0, {1, p});
    const bool other_ca = node && (*node)[64 + 1] == 1 &&  // NodeType CA, NodeGUID @12
                          std::memcmp(self->data() + 64 + 12, node->data() + 64 + 12, 8) != 0;
    if (other_ca) path = {1, p};
  }
  ASSERT_FALSE(path.empty());

  // Each step on both daemons: the same answer, and the state it should show.
  auto step = [&](const char* what, uint8_t method, const softib::mad::PortInfo& set, uint8_t state,
                  uint16_t status) {
    std::array<uint8_t, 64> data{};
    set.Pack(data);
    const auto f = at_full.Smp(method, kAttrPortInfo, 0, path, data);
    const auto l = at_light.Smp(method, kAttrPortInfo, 0, path, data);
    if (!f || !l) {
      ADD_FAILURE() << what << ": no answer";
      return softib::mad::PortInfo{};
    }
    EXPECT_EQ(*l, *f) << what;
    EXPECT_EQ(SmpStatus(*l), status) << what;
    EXPECT_EQ(PortInfoOf(*l).PortState, state) << what;
    return PortInfoOf(*l);
  };
  softib::mad::PortInfo pi;
  pi = PortInfoOf(*at_light.Smp(kMethodGet, kAttrPortInfo, 0, path));
  EXPECT_EQ(pi.LID, 0);
  step("Get in Init", kMethodGet, pi, 2, 0);
  pi.PortPhysicalState = 0;  // no change, as an SM sets them
  pi.LinkDownDefaultState = 0;
  pi.LID = 9;
  pi.MasterSMLID = 1;
  pi.PortState = 4;  // Init -> Active is refused
  step("Init -> Active", kMethodSet, pi, 2, 0x001C);
  pi.PortState = 3;
  step("Init -> Armed", kMethodSet, pi, 3, 0);
  pi.PortState = 4;
  const auto active = step("Armed -> Active", kMethodSet, pi, 4, 0);
  EXPECT_EQ(active.LID, 9);
  EXPECT_EQ(active.MasterSMLID, 1);
  pi.PortState = 0;
  pi.M_Key = 0x1234;
  pi.M_KeyProtectBits = 2;
  step("M_Key set", kMethodSet, pi, 4, 0);
  // A Get with the wrong M_Key under protect bits 2: no answer from either.
  auto wrong = MakeDrSmp(kMethodGet, kAttrPortInfo, 0, path);
  EXPECT_FALSE(at_full.Ask(wrong, 0xFFFF, 0).has_value());
  EXPECT_FALSE(at_light.Ask(wrong, 0xFFFF, 0).has_value());
}

TEST(LightHosts, SoftibSmBringsUpAnFt36OfLightHosts) {
  ASSERT_TRUE(softib::sm::testing::OnPath("ibsim-run")) << "scripts/install-deps.sh installs it";
  Daemon light({"--fabric", "ft36", "--sm", "external", "--light-hosts"});
  ASSERT_TRUE(light.ready()) << light.log().substr(0, 2000);
  Child sm({"ibsim-run", SOFTIB_SM_BINARY, "--once", "--verify", "--quiet"}, light.dir(),
           {{"IBSIM_SOCKNAME", light.sock()}});
  ASSERT_EQ(sm.Wait(), 0) << sm.output();
  EXPECT_NE(sm.output().find("36 switches, 576 CAs"), std::string::npos) << sm.output();
  EXPECT_NE(sm.output().find("ok=yes"), std::string::npos) << sm.output();
  EXPECT_NE(sm.output().find(" 0 timeouts"), std::string::npos) << sm.output();
}

}  // namespace
