// softib-sm against the real ibsim (Debian ibsim-utils), through libibumad under ibsim-run,
// checked by the real infiniband-diags: after `softib-sm --once`, ibnetdiscover shows every
// node with the LIDs softib-sm wrote to its guid2lid file, dump_lfts shows a full LFT on
// every switch, ibtracert finds a path between CA LIDs, smpquery shows ACTIVE ports with
// the SM's LID, and sminfo finds softib-sm MASTER. A missing oracle fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "ibsim_harness.h"
#include "softib/sm/lids.h"

namespace softib::sm {
namespace {

namespace fs = std::filesystem;
using testing::Ibsim;
using testing::OnPath;

// GUID -> base LID of every end port, as a discovered topology shows them.
std::map<uint64_t, std::pair<uint16_t, uint8_t>> LidsOf(const fabric::Topology& t) {
  std::map<uint64_t, std::pair<uint16_t, uint8_t>> lids;
  for (const fabric::Node& n : t.nodes()) {
    if (n.is_switch()) {
      lids[n.guid] = {n.ports[0].lid, n.ports[0].lmc};
      continue;
    }
    for (uint8_t p = 1; p <= n.num_ports; ++p)
      if (t.LinkAt({*t.FindByGuid(n.guid), p}))
        lids[n.ports[p].guid] = {n.ports[p].lid, n.ports[p].lmc};
  }
  return lids;
}

// A topology as text that does not depend on node order or which end names a link first:
// every node by GUID (type, description, each end port's LID and LMC), then every link by
// its (GUID, port) ends with width and speed, sorted.
std::string Canonical(const fabric::Topology& t) {
  std::set<std::string> nodes, links;
  for (const fabric::Node& n : t.nodes()) {
    std::ostringstream line;
    line << std::hex << n.guid << " " << fabric::ToString(n.type) << " \"" << n.description << "\"";
    for (uint8_t p = n.is_switch() ? 0 : 1; p <= (n.is_switch() ? 0 : n.num_ports); ++p)
      line << " " << int(p) << ":" << std::dec << n.ports[p].lid << "/" << int(n.ports[p].lmc);
    nodes.insert(line.str());
  }
  for (const fabric::Link& l : t.links()) {
    auto end = [&](fabric::PortRef r) {
      std::ostringstream e;
      e << std::hex << t.node(r.node).guid << "[" << std::dec << int(r.port) << "]";
      return e.str();
    };
    std::string x = end(l.a), y = end(l.b);
    if (y < x) std::swap(x, y);
    links.insert(x + " " + y + " " + std::string(fabric::ToString(l.width)) +
                 std::string(fabric::ToString(l.speed)));
  }
  std::string out;
  for (const std::string& line : nodes) out += line + "\n";
  for (const std::string& line : links) out += line + "\n";
  return out;
}

class SmIbsimInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"ibsim", "ibsim-run", "ibnetdiscover", "dump_lfts", "ibtracert",
                             "smpquery", "sminfo", "stdbuf"})
      ASSERT_TRUE(OnPath(tool)) << tool
                                << " is needed: run scripts/install-deps.sh (ibsim-utils, "
                                   "infiniband-diags)";
    char tmpl[] = "/tmp/softib-sm-ibsim-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<Ibsim> StartIbsim(const fabric::Topology& t, const std::string& name) {
    const std::string file = dir_ + "/" + name + ".net";
    EXPECT_EQ(fabric::WriteIbnetdiscoverFile(t, file), "");
    // A socket name of our own: tests run in parallel, and other people's ibsim too.
    const std::string sock =
        "softib-sm-" + std::to_string(::getpid()) + "-" + name + "-" + std::to_string(++runs_);
    auto sim = std::make_unique<Ibsim>(file, dir_, sock);
    EXPECT_TRUE(sim->ready()) << "ibsim did not come up:\n" << sim->log();
    return sim;
  }

  Guid2Lid ReadGuid2Lid() {
    Guid2Lid file;
    std::string error;
    EXPECT_TRUE(file.Load(guid2lid_, &error)) << error;
    return file;
  }

  // ibnetdiscover's view, parsed by our reader.
  fabric::Topology Discovered(const Ibsim& sim) {
    const Ibsim::Run r = sim.Tool({"ibnetdiscover"});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    fabric::ReadResult parsed = fabric::ReadIbnetdiscover(r.out, "ibnetdiscover");
    EXPECT_TRUE(parsed.ok()) << parsed.error << "\n" << r.out;
    return parsed.ok() ? *parsed.topology : fabric::Topology{};
  }

  // Runs softib-sm --once and the checks every topology gets; returns what ibnetdiscover saw.
  fabric::Topology BringUpAndCheck(const Ibsim& sim, const fabric::Topology& t,
                                   std::vector<std::string> extra = {}) {
    const std::string own_view = dir_ + "/softib-sm.net";
    std::vector<std::string> argv = {SOFTIB_SM_BINARY, "--once",  "--verify",        "--guid2lid",
                                     guid2lid_,        "--quiet", "--dump-topology", own_view};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const Ibsim::Run sm = sim.Tool(argv);
    EXPECT_EQ(sm.status, 0) << sm.out << sm.err;
    EXPECT_NE(sm.out.find("MASTER, subnet up"), std::string::npos) << sm.out;
    EXPECT_NE(sm.out.find("ok=yes"), std::string::npos) << sm.out;

    // ibnetdiscover: the same nodes and links, with exactly the LIDs softib-sm remembered.
    const fabric::Topology seen = Discovered(sim);
    EXPECT_EQ(seen.nodes().size(), t.nodes().size());
    EXPECT_EQ(seen.links().size(), t.links().size());
    const auto lids = LidsOf(seen);
    const Guid2Lid file = ReadGuid2Lid();
    EXPECT_EQ(lids.size(), file.entries().size());
    std::set<uint16_t> unique;
    for (const auto& [guid, lid] : lids) {
      auto it = file.entries().find(guid);
      EXPECT_NE(it, file.entries().end()) << std::hex << guid << " not in guid2lid";
      if (it == file.entries().end()) continue;
      EXPECT_EQ(lid.first, it->second.first) << std::hex << guid;
      EXPECT_EQ(lid.first + (1u << lid.second) - 1, it->second.second) << std::hex << guid;
      EXPECT_NE(lid.first, 0);
      EXPECT_TRUE(unique.insert(lid.first).second) << "LID " << lid.first << " twice";
    }
    unsigned top = 0;
    for (const auto& [guid, range] : file.entries()) top = std::max<unsigned>(top, range.second);

    // softib-sm's own view (--dump-topology) is what ibnetdiscover prints, node for node.
    const fabric::ReadResult own = fabric::ReadIbnetdiscoverFile(own_view);
    EXPECT_TRUE(own.ok()) << own.error;
    if (own.ok()) {
      EXPECT_EQ(Canonical(*own.topology), Canonical(seen));
    }

    // dump_lfts: every switch forwards every LID.
    const Ibsim::Run lfts = sim.Tool({"dump_lfts"});
    EXPECT_EQ(lfts.status, 0) << lfts.err;
    const std::regex dumped("([0-9]+) valid lids dumped");
    unsigned switches = 0;
    for (std::sregex_iterator it(lfts.out.begin(), lfts.out.end(), dumped), end; it != end; ++it) {
      ++switches;
      EXPECT_EQ(std::stoul((*it)[1]), top) << lfts.out;
    }
    EXPECT_EQ(switches, t.Count(fabric::NodeType::kSwitch)) << lfts.out;
    return seen;
  }

  // ibtracert from `from` to `to` (LIDs) ends at the CA port that owns `to`.
  void Trace(const Ibsim& sim, uint16_t from, uint16_t to, uint16_t to_base) {
    const Ibsim::Run r = sim.Tool({"ibtracert", std::to_string(from), std::to_string(to)});
    EXPECT_EQ(r.status, 0) << from << " -> " << to << "\n" << r.out << r.err;
    const std::string want = "lid " + std::to_string(to_base) + "-";
    const auto last = r.out.rfind("To ");
    EXPECT_NE(last, std::string::npos) << r.out;
    if (last != std::string::npos) {
      EXPECT_NE(r.out.find(want, last), std::string::npos) << from << " -> " << to << "\n" << r.out;
    }
  }

  // smpquery portinfo: ACTIVE, LinkUp, this LID, SM LID `sm_lid`.
  void PortActive(const Ibsim& sim, uint16_t lid, uint8_t port, uint16_t sm_lid, bool end_port) {
    const Ibsim::Run r =
        sim.Tool({"smpquery", "portinfo", std::to_string(lid), std::to_string(port)});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("LinkState:.......................Active"), std::string::npos)
        << "LID " << lid << " port " << int(port) << "\n"
        << r.out;
    EXPECT_NE(r.out.find("PhysLinkState:...................LinkUp"), std::string::npos) << r.out;
    if (end_port) {
      EXPECT_NE(r.out.find("Lid:............................." + std::to_string(lid) + "\n"),
                std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("SMLid:..........................." + std::to_string(sm_lid) + "\n"),
                std::string::npos)
          << r.out;
    }
  }

  std::string dir_;
  std::string guid2lid_ = "";
  int runs_ = 0;
};

struct CaPort {
  uint16_t lid;
  uint8_t lmc;
  uint8_t port;
};
std::vector<CaPort> CaPorts(const fabric::Topology& seen) {
  std::vector<CaPort> out;
  for (const fabric::Node& n : seen.nodes())
    if (!n.is_switch())
      for (uint8_t p = 1; p <= n.num_ports; ++p)
        if (n.ports[p].lid) out.push_back({n.ports[p].lid, n.ports[p].lmc, p});
  return out;
}

TEST_F(SmIbsimInterop, DefaultTopologyEveryPairTracedEveryPortActive) {
  guid2lid_ = dir_ + "/guid2lid";
  const fabric::Topology t = fabric::DefaultTopology();
  auto sim = StartIbsim(t, "default");
  ASSERT_TRUE(sim->ready());
  const fabric::Topology seen = BringUpAndCheck(*sim, t);
  const std::vector<CaPort> cas = CaPorts(seen);
  ASSERT_EQ(cas.size(), 4u);
  for (const CaPort& a : cas)
    for (const CaPort& b : cas)
      if (a.lid != b.lid) Trace(*sim, a.lid, b.lid, b.lid);
  // Every cabled port: the CAs' and every switch port.
  const uint16_t sm_lid = seen.node(*seen.FindByGuid(t.node(0).guid)).ports[0].lid;
  for (const CaPort& a : cas) PortActive(*sim, a.lid, a.port, sm_lid, true);
  for (const fabric::Node& n : seen.nodes()) {
    if (!n.is_switch()) continue;
    const fabric::NodeIndex i = *seen.FindByGuid(n.guid);
    for (uint8_t p = 1; p <= n.num_ports; ++p)
      if (seen.LinkAt({i, p})) PortActive(*sim, n.ports[0].lid, p, sm_lid, false);
  }
  sim->Stop();
}

TEST_F(SmIbsimInterop, TwoLevelFatTreeOf30Nodes) {
  guid2lid_ = dir_ + "/guid2lid";
  fabric::FatTreeShape shape;
  shape.leaves = 4;
  shape.hosts_per_leaf = 6;
  shape.spines = 2;
  shape.uplinks = 2;
  const fabric::Topology t = *fabric::GenerateFatTree(shape).topology;
  auto sim = StartIbsim(t, "ft30");
  ASSERT_TRUE(sim->ready());
  const fabric::Topology seen = BringUpAndCheck(*sim, t);
  const std::vector<CaPort> cas = CaPorts(seen);
  ASSERT_EQ(cas.size(), 24u);
  // From every CA to one CA behind every leaf (its own leaf included).
  std::vector<uint16_t> targets;
  for (const fabric::Node& n : t.nodes()) {
    if (n.is_switch()) continue;
    const fabric::NodeIndex host = *t.FindByGuid(n.guid);
    const auto leaf_port = t.Peer({host, 1});
    if (leaf_port && leaf_port->port == 1) {  // the first host of its leaf
      const fabric::Node& found = seen.node(*seen.FindByGuid(n.guid));
      targets.push_back(found.ports[1].lid);
    }
  }
  ASSERT_EQ(targets.size(), 4u);
  for (const CaPort& a : cas)
    for (uint16_t b : targets)
      if (a.lid != b) Trace(*sim, a.lid, b, b);
  const uint16_t sm_lid = seen.node(*seen.FindByGuid(t.node(0).guid)).ports[0].lid;
  for (const CaPort& a : cas) PortActive(*sim, a.lid, a.port, sm_lid, true);
  sim->Stop();
}

TEST_F(SmIbsimInterop, LmcOneEveryLidOfABlockRoutes) {
  guid2lid_ = dir_ + "/guid2lid";
  const fabric::Topology t = fabric::DefaultTopology();
  auto sim = StartIbsim(t, "lmc");
  ASSERT_TRUE(sim->ready());
  const fabric::Topology seen = BringUpAndCheck(*sim, t, {"--lmc", "1"});
  const std::vector<CaPort> cas = CaPorts(seen);
  ASSERT_EQ(cas.size(), 4u);
  for (const CaPort& c : cas) {
    EXPECT_EQ(c.lmc, 1);
    EXPECT_EQ(c.lid % 2, 0);
  }
  Trace(*sim, cas[0].lid, static_cast<uint16_t>(cas[3].lid + 1), cas[3].lid);
  Trace(*sim, cas[3].lid, static_cast<uint16_t>(cas[0].lid + 1), cas[0].lid);
  sim->Stop();
}

TEST_F(SmIbsimInterop, Guid2LidKeepsLidsStableAcrossRestarts) {
  guid2lid_ = dir_ + "/guid2lid";
  const fabric::Topology t = fabric::DefaultTopology();
  {
    auto sim = StartIbsim(t, "first");
    ASSERT_TRUE(sim->ready());
    BringUpAndCheck(*sim, t);
    sim->Stop();
  }
  // Trade two hosts' LIDs in the file, as if an earlier SM had numbered them the other way;
  // a fresh fabric then comes up with the file's LIDs, not the ones a fresh SM would pick.
  Guid2Lid file = ReadGuid2Lid();
  const uint64_t host1 = t.node(3).ports[1].guid, host4 = t.node(6).ports[1].guid;
  std::swap(file.entries().at(host1), file.entries().at(host4));
  std::string error;
  ASSERT_TRUE(file.Save(guid2lid_, &error)) << error;
  auto sim = StartIbsim(t, "second");
  ASSERT_TRUE(sim->ready());
  const fabric::Topology seen = BringUpAndCheck(*sim, t);
  const auto lids = LidsOf(seen);
  EXPECT_EQ(lids.at(host1).first, file.entries().at(host1).first);
  EXPECT_EQ(lids.at(host4).first, file.entries().at(host4).first);
  EXPECT_GT(lids.at(host1).first, lids.at(host4).first);
  sim->Stop();
}

TEST_F(SmIbsimInterop, StaysMasterAndAnswersSmInfo) {
  const fabric::Topology t = fabric::DefaultTopology();
  auto sim = StartIbsim(t, "sminfo");
  ASSERT_TRUE(sim->ready());
  auto sm = sim->Start({SOFTIB_SM_BINARY, "--quiet", "--priority", "5"});
  ASSERT_TRUE(sm->WaitFor("MASTER, subnet up")) << sm->output();
  const Ibsim::Run info = sim->Tool({"sminfo"});
  EXPECT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("sm guid 0x2c90200400001"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("priority 5 state 3 SMINFO_MASTER"), std::string::npos) << info.out;
  sm->Stop();
  sim->Stop();
}

// Two softib-sm on one ibsim fabric, on different hosts: the first (priority 1) is MASTER;
// the second (priority 5) finds it and goes STANDBY; the master's light sweep sees the new
// SM port and hands the subnet over; the new master re-sweeps and sminfo names it. Then the
// new master is stopped by PID without a word: the old one, now STANDBY, sees its polls go
// unanswered and takes the subnet back.
std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(SmIbsimInterop, MasterStandbyHandoverAndTakeOver) {
  const fabric::Topology t = fabric::DefaultTopology();
  auto sim = StartIbsim(t, "handover");
  ASSERT_TRUE(sim->ready());
  const std::string low_guid = "0x0002c90300a00011";   // host-0001 port 1
  const std::string high_guid = "0x0002c90300a00041";  // host-0004 port 1
  auto low = sim->Start({SOFTIB_SM_BINARY, "--quiet", "--priority", "1", "--sweep-interval", "0.3",
                         "--poll-interval", "0.3"},
                        {{"SIM_HOST", "H-0002c90300a00010"}}, "low");
  ASSERT_TRUE(low->WaitFor("MASTER, subnet up")) << low->output();
  EXPECT_NE(low->output().find("[first sweep]"), std::string::npos) << low->output();

  auto high = sim->Start({SOFTIB_SM_BINARY, "--quiet", "--priority", "5", "--sweep-interval", "0.3",
                          "--poll-interval", "0.3"},
                         {{"SIM_HOST", "H-0002c90300a00040"}}, "high");
  ASSERT_TRUE(high->WaitFor("STANDBY (first sweep), following MASTER " + low_guid + " priority 1"))
      << high->output() << ReadAll(dir_ + "/high/started.err");
  ASSERT_TRUE(high->WaitFor("[handover]")) << high->output() << "\n--- low:\n" << low->output();
  EXPECT_NE(high->output().find("MASTER, subnet up"), std::string::npos) << high->output();
  ASSERT_TRUE(low->WaitFor("following MASTER " + high_guid + " priority 5")) << low->output();

  Ibsim::Run info = sim->Tool({"sminfo"});
  EXPECT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("sm guid " + std::string("0x2c90300a00041")), std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("priority 5 state 3 SMINFO_MASTER"), std::string::npos) << info.out;

  high->Stop();  // by PID: the master dies without handing over
  ASSERT_TRUE(low->WaitFor("[the master stopped answering]")) << low->output();
  // The last line is the take-over sweep, as MASTER.
  const std::size_t last = low->output().rfind("softib-sm:");
  EXPECT_NE(low->output().find("MASTER, subnet up", last), std::string::npos) << low->output();
  info = sim->Tool({"sminfo"});
  EXPECT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("sm guid 0x2c90300a00011"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("priority 1 state 3 SMINFO_MASTER"), std::string::npos) << info.out;
  low->Stop();
  sim->Stop();
}

}  // namespace
}  // namespace softib::sm
