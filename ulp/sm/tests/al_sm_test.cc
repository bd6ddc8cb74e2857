// softib-sm over softibd's own MAD services (no ibsim): `softibd --fabric default --sm
// external` waits in Init; softib-sm --run-dir RUN/host-0001 brings it up through the AL of
// host-0001 (DR SMPs through the SMI, the port's own SMA by LocalMad), then, as MASTER, its
// SA answers GetTable by multi-segment RMPP to softib-sm --query on another host. Also the
// SA against malformed requests, two SMs (MASTER, STANDBY, take-over), and the backend when
// softibd goes away.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <optional>
#include <regex>
#include <set>
#include <string>

#include "ibsim_harness.h"
#include "softib/sm/al_mad_port.h"
#include "softib/sm/sa.h"
#include "softib/sm/sa_client.h"
#include "softib/sm/sminfo.h"
#include "softib/sm/smp.h"
#include "softib/sm/transactions.h"

namespace softib::sm {
namespace {

using testing::Child;

struct SmRun {
  int status = -1;
  std::string out;
};

class AlSmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/softib-alsm-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    master_.reset();
    daemon_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }

  // A softibd in the test's own directory, started and waited for (not a timing check).
  void StartSoftibd(std::vector<std::string> args) {
    args.insert(args.begin(), {"stdbuf", "-oL", SOFTIBD_BINARY, "--run-dir", dir_ + "/run"});
    daemon_ = std::make_unique<Child>(args, dir_, std::map<std::string, std::string>{},
                                      dir_ + "/softibd.err");
    ASSERT_TRUE(daemon_->WaitFor("softibd: ready")) << daemon_->output();
  }
  std::string Host(int n) const {
    char name[16];
    std::snprintf(name, sizeof name, "host-%04d", n);
    return dir_ + "/run/" + name;
  }
  SmRun Sm(std::vector<std::string> args) {
    args.insert(args.begin(), SOFTIB_SM_BINARY);
    Child c(args, dir_, {}, dir_ + "/sm.err");
    SmRun r;
    r.status = c.Wait();
    r.out = c.output();
    return r;
  }
  // The master: brings the fabric up and stays, answering SA queries.
  void StartMaster() {
    master_ = std::make_unique<Child>(
        std::vector<std::string>{"stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir", Host(1), "-q",
                                 "--sweep-interval", "0"},
        dir_, std::map<std::string, std::string>{}, dir_ + "/master.err");
    ASSERT_TRUE(master_->WaitFor("subnet up")) << master_->output();
  }

  std::string dir_;
  std::unique_ptr<Child> daemon_;
  std::unique_ptr<Child> master_;
};

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(AlSmTest, BringsTheFabricUpAndAnswersTablesByRmpp) {
  ASSERT_NO_FATAL_FAILURE(StartSoftibd({"--fabric", "default", "--sm", "external"}));
  const SmRun once = Sm({"--run-dir", Host(1), "--once", "--verify", "-q"});
  ASSERT_EQ(once.status, 0) << once.out;
  EXPECT_NE(once.out.find("MASTER, subnet up: 3 switches, 4 CAs"), std::string::npos) << once.out;
  EXPECT_NE(once.out.find("ports ACTIVE"), std::string::npos) << once.out;
  EXPECT_NE(once.out.find("ok=yes"), std::string::npos) << once.out;

  ASSERT_NO_FATAL_FAILURE(StartMaster());
  // Every NodeRecord in one GetTable: 7 × 112 bytes, 4 RMPP segments reassembled by the AL.
  const SmRun nr = Sm({"--run-dir", Host(3), "--query", "NR"});
  ASSERT_EQ(nr.status, 0) << nr.out;
  EXPECT_NE(nr.out.find("7 records (RMPP: 840 bytes in 4 segments)"), std::string::npos) << nr.out;
  EXPECT_EQ(Count(nr.out, "NodeRecord dump:"), 7u);

  // Every PathRecord: 7 × 7 (the diagonal too), 16 segments; each CA pair present.
  const SmRun pr = Sm({"--run-dir", Host(3), "--query", "PR"});
  ASSERT_EQ(pr.status, 0) << pr.out;
  EXPECT_NE(pr.out.find("49 records (RMPP: 3192 bytes in 16 segments)"), std::string::npos)
      << pr.out;
  std::set<std::pair<std::string, std::string>> pairs;
  const std::regex dlid(R"(DLID:\.*(\d+))"), slid(R"(SLID:\.*(\d+))");
  std::smatch m;
  std::string rest = pr.out;
  while (std::regex_search(rest, m, dlid)) {
    const std::string d = m[1];
    std::smatch s;
    const std::string after = m.suffix();
    if (!std::regex_search(after, s, slid)) break;
    pairs.emplace(s[1], d);
    rest = s.suffix();
  }
  EXPECT_EQ(pairs.size(), 49u) << pr.out.substr(0, 2000);

  // A ServiceRecord of host-0002's port (GUID 0002c90300a00021) set, read back, deleted.
  const std::vector<std::string> sr = {"--run-dir",       Host(2),
                                       "--query",         "SR",
                                       "ServiceID=0x10",  "ServiceGID=fe80::2:c903:a0:21",
                                       "ServiceLease=60", "ServiceName=almad"};
  auto with = [&](const char* method) {
    std::vector<std::string> a = sr;
    a.push_back(method);
    return Sm(a);
  };
  EXPECT_EQ(with("--set").status, 0);
  const SmRun got = Sm({"--run-dir", Host(4), "--query", "SR", "ServiceID=0x10"});
  EXPECT_EQ(got.status, 0) << got.out;
  EXPECT_NE(got.out.find("almad"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find("1 records (RMPP"), std::string::npos) << got.out;
  EXPECT_EQ(with("--delete").status, 0);
  const SmRun gone = Sm({"--run-dir", Host(4), "--query", "SR", "ServiceID=0x10", "--get"});
  EXPECT_NE(gone.out.find("ERR_NO_RECORDS"), std::string::npos) << gone.out;
}

TEST_F(AlSmTest, MalformedRequestsGetErrorsAndTheSaStaysUp) {
  ASSERT_NO_FATAL_FAILURE(StartSoftibd({"--fabric", "default", "--sm", "external"}));
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  AlMadPortOptions options;
  options.run_dir = Host(2);
  options.sm_agents = options.sa_server = false;
  AlPortInfo info;
  std::string error;
  auto port = OpenAlMadPort(options, &error, &info);
  ASSERT_NE(port, nullptr) << error;
  ASSERT_NE(info.sm_lid, 0);
  MadAddress sa{info.sm_lid, 1, 0, 0x80010000, 0};
  Transactions tx(*port, TransactionOptions{4, 1000, 2});
  auto ask = [&](const MadBytes& mad) {
    TxResult result;
    tx.Submit(mad, sa, [&](const TxResult& r) { result = r; });
    EXPECT_TRUE(tx.Run()) << tx.last_error();
    return result;
  };
  auto status = [](const TxResult& r) {
    const auto& b = r.transfer.empty() ? std::vector<uint8_t>(r.response.begin(), r.response.end())
                                       : r.transfer;
    return b[4] << 8 | b[5];
  };
  const codec::FormatDesc* desc = nullptr;
  MadBytes good{};
  ASSERT_EQ(BuildSaRequest({"NR", {}, kSaMethodGetTable}, good, &desc), "");

  // (A method nobody registered never reaches the SA: the AL drops it, counted.)
  MadBytes bad = good;
  bad[3] = kSaMethodSet;  // NodeRecords are not set
  TxResult r = ask(bad);
  ASSERT_EQ(r.status, TxStatus::kOk);
  EXPECT_EQ(status(r), kMadStatusAttributeUnsupported);
  bad = good;
  bad[16] = 0xBE;  // no such attribute
  r = ask(bad);
  ASSERT_EQ(r.status, TxStatus::kOk);
  EXPECT_EQ(status(r), kMadStatusAttributeUnsupported);
  bad = good;
  bad[3] = kSaMethodGet;
  bad[48 + 7] = 0x01;  // LID component set, LID 0xFFFF: a Get of nothing
  bad[56] = bad[57] = 0xFF;
  r = ask(bad);
  ASSERT_EQ(r.status, TxStatus::kOk);
  EXPECT_EQ(status(r), kSaStatusNoRecords);
  // A stray RMPP segment (number 3 of a transfer never begun) as a request: the SA's AL
  // refuses it (ABORT) and nothing reaches the SA; sent without waiting for an answer.
  bad = good;
  bad[24] = 1;
  bad[25] = 1;
  bad[26] = 0x01;
  bad[31] = 3;
  ASSERT_EQ(port->Send(bad, sa, 0), PortStatus::kOk);
  // The SA still answers a whole table.
  r = ask(good);
  ASSERT_EQ(r.status, TxStatus::kOk);
  const SaClientAnswer answer = ParseSaTransfer(r.transfer, *desc);
  EXPECT_EQ(answer.error, "");
  EXPECT_EQ(answer.records.size(), 7u);
  EXPECT_EQ(answer.rmpp_segments, 4u);
}

// Two softib-sm over the AL of two hosts of one softibd: each sets IsSM on its port (the
// second's port tells the master by trap 144), the second finds the first MASTER and stays
// STANDBY — as SMInfo Gets to both say — and when the master is killed (its IsSM cleared by
// the AL as its file closes) the standby takes the subnet over.
TEST_F(AlSmTest, TwoSmsMasterAndStandbyThenTakeOver) {
  ASSERT_NO_FATAL_FAILURE(StartSoftibd({"--fabric", "default", "--sm", "external"}));
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  // SMP timeout 500 ms: the standby must hear the master's SMInfo in its first sweep even
  // under ThreadSanitizer on a loaded machine (at 100 ms it once took the master for gone and
  // swept as a second MASTER).
  Child standby({"stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir", Host(3), "-q", "--sweep-interval",
                 "0", "--poll-interval", "0.2", "-t", "500", "-r", "1"},
                dir_, {}, dir_ + "/standby.err");
  ASSERT_TRUE(standby.WaitFor("STANDBY (first sweep), following MASTER")) << standby.output();

  // An observer on host-0002 (an SMP agent, no IsSM): the LIDs of both SMs' ports, and
  // their SMInfo, LID-routed to the SMs themselves.
  const auto lid_of = [&](int host) {
    AlMadPortOptions o;
    o.run_dir = Host(host);
    o.sm_agents = o.sa_agent = false;
    AlPortInfo info;
    std::string error;
    EXPECT_NE(OpenAlMadPort(o, &error, &info), nullptr) << error;
    return info.lid;
  };
  const uint16_t master_lid = lid_of(1), standby_lid = lid_of(3);
  ASSERT_NE(master_lid, 0);
  ASSERT_NE(standby_lid, 0);
  AlMadPortOptions o;
  o.run_dir = Host(2);
  o.sa_agent = false;
  o.issm = false;
  std::string error;
  auto observer = OpenAlMadPort(o, &error);
  ASSERT_NE(observer, nullptr) << error;
  Transactions tx(*observer, TransactionOptions{4, 300, 3});
  // A LID-routed SubnGet of `attribute` to `lid`: the SM there answers SMInfo, the port's
  // SMA PortInfo.
  const auto ask = [&](uint16_t lid, uint16_t attribute) {
    MadBytes get = MakeDrSmp(kMethodGet, attribute, 0, {});
    get[1] = kClassSubnLid;  // no directed-route fields
    std::fill(get.begin() + 4, get.begin() + 8, 0);
    std::fill(get.begin() + 32, get.begin() + 64, 0);
    std::fill(get.begin() + 128, get.end(), 0);
    std::optional<MadBytes> answer;
    tx.Submit(get, MadAddress{lid, 0, 0, 0, 0}, [&](const TxResult& r) {
      if (r.status == TxStatus::kOk) answer = r.response;
    });
    EXPECT_TRUE(tx.Run()) << tx.last_error();
    return answer;
  };
  const auto sm_state = [&](uint16_t lid) -> std::optional<SmState> {
    const auto a = ask(lid, kAttrSmInfo);
    if (!a) return std::nullopt;
    return ReadSmInfo(*a).state;
  };
  const auto is_sm = [&](uint16_t lid) {
    const auto a = ask(lid, kAttrPortInfo);
    EXPECT_TRUE(a.has_value());
    return a && (SmpData(*a)[23] & kCapIsSm) != 0;  // CapabilityMask: PortInfo bytes 20..23
  };
  EXPECT_EQ(sm_state(master_lid), SmState::kMaster);
  EXPECT_EQ(sm_state(standby_lid), SmState::kStandby);
  EXPECT_TRUE(is_sm(master_lid));
  EXPECT_TRUE(is_sm(standby_lid));

  ASSERT_EQ(::kill(master_->pid(), SIGKILL), 0);
  master_->Wait();
  ASSERT_TRUE(standby.WaitFor("MASTER, subnet up")) << standby.output();
  EXPECT_NE(standby.output().find("[the master stopped answering]"), std::string::npos)
      << standby.output();
  EXPECT_EQ(sm_state(standby_lid), SmState::kMaster);
  EXPECT_FALSE(sm_state(master_lid).has_value()) << "nobody answers SMInfo there now";
  EXPECT_FALSE(is_sm(master_lid)) << "the AL cleared IsSM when the killed SM's file closed";
  EXPECT_TRUE(is_sm(standby_lid));
}

TEST_F(AlSmTest, SoftibdGoneIsACleanError) {
  ASSERT_NO_FATAL_FAILURE(StartSoftibd({}));
  // A requester: the node's own (static) set-up already holds the SMP classes.
  AlMadPortOptions options;
  options.run_dir = dir_ + "/run";
  options.sm_agents = options.sa_server = false;
  std::string error;
  auto port = OpenAlMadPort(options, &error);
  ASSERT_NE(port, nullptr) << error;
  daemon_->Stop();
  ReceivedMad rx;
  EXPECT_EQ(port->Receive(rx, 2000), PortStatus::kError);
  EXPECT_NE(port->LastError(), "");
  MadBytes smp{};
  smp[0] = 1;
  smp[1] = kClassSubnAdm;
  smp[2] = kSaClassVersion;
  smp[3] = kSaMethodGet;
  EXPECT_EQ(port->Send(smp, MadAddress{1, 1, 0, 0x80010000, 0}, 100), PortStatus::kError);
  EXPECT_NE(port->LastError(), "");
}

}  // namespace
}  // namespace softib::sm
