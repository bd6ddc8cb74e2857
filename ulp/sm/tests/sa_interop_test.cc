// softib-sm's SA answering the real saquery (infiniband-diags) under ibsim-run, checked
// against what the topology and softib-sm's guid2lid file say; then OpenSM's SA on a fresh
// ibsim with the same topology answering the same queries, compared port by port (by GUID:
// the two SMs number LIDs their own way). Every process is started with its own ibsim socket
// name and directory and stopped by its PID.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "ibsim_harness.h"
#include "softib/sm/lids.h"

namespace softib::sm {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::Ibsim;
using testing::OnPath;

// The values of "name.....value" lines of saquery's output, in order.
std::vector<std::string> Values(const std::string& out, const std::string& name) {
  std::vector<std::string> values;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(name);
    if (at == std::string::npos) continue;
    std::size_t v = at + name.size();
    if (v >= line.size() || (line[v] != '.' && line[v] != ':')) continue;
    while (v < line.size() && (line[v] == '.' || line[v] == ':')) ++v;
    values.push_back(line.substr(v));
  }
  return values;
}

std::size_t Count(const std::string& out, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) ++n;
  return n;
}

std::string Hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// saquery prints GIDs as "fe80::10:1" (IPv6 text of prefix and GUID).
std::string GidText(uint64_t guid) {
  std::ostringstream s;
  s << "fe80::";
  bool started = false;
  for (int i = 3; i >= 0; --i) {
    const unsigned group = static_cast<unsigned>(guid >> (16 * i)) & 0xFFFF;
    if (!started && group == 0 && i > 0) continue;
    if (started) s << ':';
    s << std::hex << group;
    started = true;
  }
  return s.str();
}

// One NodeRecord as saquery printed it.
struct NodeSeen {
  std::string node_guid, type, desc, port_num, num_ports;
};

class SaIbsimInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"ibsim", "ibsim-run", "saquery", "stdbuf"})
      ASSERT_TRUE(OnPath(tool)) << tool << " is needed: scripts/install-deps.sh";
    char tmpl[] = "/tmp/softib-sa-ibsim-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    topology_ = fabric::DefaultTopology();
    file_ = dir_ + "/fabric.net";
    ASSERT_EQ(fabric::WriteIbnetdiscoverFile(topology_, file_), "");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::unique_ptr<Ibsim> StartIbsim(const std::string& tag) {
    const std::string sock = "softib-sa-" + std::to_string(::getpid()) + "-" + tag;
    auto sim = std::make_unique<Ibsim>(file_, dir_, sock);
    EXPECT_TRUE(sim->ready()) << sim->log();
    return sim;
  }

  // NodeRecords asked one LID at a time (`saquery NR <lid>`), keyed by port GUID.
  std::map<std::string, NodeSeen> NodesByLid(const Ibsim& sim, unsigned max_lid) {
    std::map<std::string, NodeSeen> seen;
    for (unsigned lid = 1; lid <= max_lid; ++lid) {
      const Ibsim::Run r = sim.Tool({"saquery", "NR", std::to_string(lid)});
      const auto ports = Values(r.out, "port_guid");
      if (r.status != 0 || ports.size() != 1) continue;
      seen[ports[0]] = {Values(r.out, "node_guid").at(0), Values(r.out, "node_type").at(0),
                        Values(r.out, "NodeDescription").at(0), Values(r.out, "port_num").at(0),
                        Values(r.out, "num_ports").at(0)};
    }
    return seen;
  }

  // The PathRecord fields both SAs should agree on, for every ordered pair of CA ports.
  std::map<std::string, std::string> CaPaths(const Ibsim& sim) {
    std::map<std::string, std::string> paths;
    std::vector<uint64_t> guids;
    for (const fabric::Node& n : topology_.nodes())
      if (!n.is_switch()) guids.push_back(n.ports[1].guid);
    for (uint64_t a : guids)
      for (uint64_t b : guids) {
        if (a == b) continue;
        const Ibsim::Run r =
            sim.Tool({"saquery", "-p", "--sgid-to-dgid", GidText(a) + "-" + GidText(b)});
        EXPECT_EQ(r.status, 0) << r.out << r.err;
        const auto sgid = Values(r.out, "sgid"), dgid = Values(r.out, "dgid");
        EXPECT_EQ(sgid.size(), 1u) << r.out;
        if (sgid.size() != 1 || dgid.size() != 1) continue;
        EXPECT_EQ(sgid[0], GidText(a));
        EXPECT_EQ(dgid[0], GidText(b));
        std::string facts;
        for (const char* f : {"num_path_revers", "pkey", "sl", "mtu", "rate", "hop_flow_raw"})
          facts += std::string(f) + "=" + Values(r.out, f).at(0) + " ";
        paths[GidText(a) + ">" + GidText(b)] = facts;
      }
    return paths;
  }

  std::string dir_;
  std::string file_;
  fabric::Topology topology_;
};

TEST_F(SaIbsimInterop, SaquerySeesSoftibSmRecords) {
  auto sim = StartIbsim("softib");
  ASSERT_TRUE(sim->ready());
  const std::string guid2lid = dir_ + "/guid2lid";
  auto sm = sim->Start({SOFTIB_SM_BINARY, "--quiet", "--guid2lid", guid2lid});
  ASSERT_TRUE(sm->WaitFor("MASTER, subnet up")) << sm->output();
  Guid2Lid lids;
  std::string error;
  ASSERT_TRUE(lids.Load(guid2lid, &error)) << error;
  ASSERT_EQ(lids.entries().size(), 7u);  // 3 switches + 4 HCA ports

  // NodeRecord of every LID: the port, its node and its description.
  for (const auto& [port_guid, range] : lids.entries()) {
    const Ibsim::Run r = sim->Tool({"saquery", "NR", std::to_string(range.first)});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(Count(r.out, "NodeRecord dump"), 1u) << r.out;
    EXPECT_EQ(Values(r.out, "port_guid").at(0), Hex(port_guid)) << r.out;
    EXPECT_EQ(Values(r.out, "lid").at(0), std::to_string(range.first));
    const fabric::Node* node = nullptr;
    for (const fabric::Node& n : topology_.nodes())
      for (uint8_t p = 0; p <= n.num_ports; ++p)
        if ((n.is_switch() ? n.guid : n.ports[p].guid) == port_guid && (p > 0 || n.is_switch()))
          node = &n;
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(Values(r.out, "node_guid").at(0), Hex(node->guid));
    EXPECT_EQ(Values(r.out, "NodeDescription").at(0), node->description);
    EXPECT_EQ(Values(r.out, "node_type").at(0), node->is_switch() ? "Switch" : "Channel Adapter");
  }
  // Unfiltered: one NodeRecord, as many as one MAD carries (OpenSM's answer is cut the same
  // way by umad2sim); an unknown LID: saquery reports no record.
  Ibsim::Run all = sim->Tool({"saquery"});
  EXPECT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(Count(all.out, "NodeRecord dump"), 1u) << all.out;
  Ibsim::Run none = sim->Tool({"saquery", "NR", "999"});
  EXPECT_EQ(Count(none.out, "NodeRecord dump"), 0u) << none.out;

  // softib-sm itself (switch port 0) is the only IsSM port, with its own LID as SM LID.
  const Ibsim::Run sm_ports = sim->Tool({"saquery", "-s"});
  ASSERT_EQ(sm_ports.status, 0) << sm_ports.err;
  const auto sm_lids = Values(sm_ports.out, "EndPortLid");
  ASSERT_EQ(sm_lids.size(), 1u) << sm_ports.out;
  EXPECT_EQ(Values(sm_ports.out, "master_sm_base_lid").at(0), sm_lids[0]);
  EXPECT_EQ(sm_lids[0], std::to_string(lids.entries().at(topology_.node(0).guid).first));

  // PortInfoRecord of a CA port: its LID, Active, the SM's LID.
  const uint64_t host = topology_.node(3).ports[1].guid;
  const std::string host_lid = std::to_string(lids.entries().at(host).first);
  const Ibsim::Run pir = sim->Tool({"saquery", "PIR", host_lid});
  ASSERT_EQ(pir.status, 0) << pir.err;
  EXPECT_EQ(Values(pir.out, "Lid").at(0), host_lid) << pir.out;
  EXPECT_EQ(Values(pir.out, "LinkState").at(0), "Active") << pir.out;
  EXPECT_EQ(Values(pir.out, "SMLid").at(0), sm_lids[0]) << pir.out;

  // PathRecord between LIDs (saquery -p --src-to-dst), every CA pair.
  std::vector<uint64_t> hosts;
  for (const fabric::Node& n : topology_.nodes())
    if (!n.is_switch()) hosts.push_back(n.ports[1].guid);
  for (uint64_t a : hosts)
    for (uint64_t b : hosts) {
      if (a == b) continue;
      const std::string sl = std::to_string(lids.entries().at(a).first);
      const std::string dl = std::to_string(lids.entries().at(b).first);
      const Ibsim::Run pr = sim->Tool({"saquery", "-p", "--src-to-dst", sl + ":" + dl});
      ASSERT_EQ(pr.status, 0) << pr.out << pr.err;
      EXPECT_EQ(Values(pr.out, "slid").at(0), sl) << pr.out;
      EXPECT_EQ(Values(pr.out, "dlid").at(0), dl) << pr.out;
      EXPECT_EQ(Values(pr.out, "sgid").at(0), GidText(a)) << pr.out;
      EXPECT_EQ(Values(pr.out, "dgid").at(0), GidText(b)) << pr.out;
      EXPECT_EQ(Values(pr.out, "num_path_revers").at(0), "0x80") << pr.out;  // reversible
      EXPECT_EQ(Values(pr.out, "pkey").at(0), "0xFFFF") << pr.out;
    }

  // SwitchInfoRecord and LFTRecord of every switch: the LFT top is the top LID, every
  // assigned LID is forwarded, the switch's own LID to port 0.
  unsigned top = 0;
  for (const auto& [guid, range] : lids.entries()) top = std::max<unsigned>(top, range.second);
  for (const fabric::Node& n : topology_.nodes()) {
    if (!n.is_switch()) continue;
    const std::string lid = std::to_string(lids.entries().at(n.guid).first);
    const Ibsim::Run swi = sim->Tool({"saquery", "SWIR", lid});
    ASSERT_EQ(swi.status, 0) << swi.err;
    EXPECT_EQ(Values(swi.out, "LID").at(0), lid) << swi.out;
    EXPECT_EQ(std::stoul(Values(swi.out, "LinearFDBTop").at(0), nullptr, 16), top) << swi.out;
    const Ibsim::Run lft = sim->Tool({"saquery", "LFTR", lid});
    ASSERT_EQ(lft.status, 0) << lft.err;
    std::map<unsigned, unsigned> ports;
    std::istringstream lines(lft.out);
    for (std::string line; std::getline(lines, line);) {
      unsigned l = 0, p = 0;
      if (std::sscanf(line.c_str(), " %u %u", &l, &p) == 2) ports[l] = p;
    }
    for (const auto& [guid, range] : lids.entries()) {
      ASSERT_TRUE(ports.count(range.first)) << lft.out;
      EXPECT_NE(ports[range.first], 255u) << "LID " << range.first << " on " << lid;
    }
    EXPECT_EQ(ports[std::stoul(lid)], 0u);
  }

  // LinkRecords: 8 links, both directions, 16 records of 8 bytes in one MAD.
  const Ibsim::Run links = sim->Tool({"saquery", "LR"});
  EXPECT_EQ(Count(links.out, "LinkRecord dump"), 2 * topology_.links().size()) << links.out;

  // ServiceRecord: registered by softib-sm --query from a host, read by saquery -S, deleted.
  const std::string gid = GidText(host);
  const std::map<std::string, std::string> on_host = {{"SIM_HOST", topology_.node(3).name}};
  Ibsim::Run set =
      sim->Tool({SOFTIB_SM_BINARY, "--query", "SR", "ServiceID=0x10000ce", "ServiceGID=" + gid,
                 "ServiceLease=0xffffffff", "ServiceName=softib-sa-test", "--set"},
                on_host);
  ASSERT_EQ(set.status, 0) << set.out << set.err;
  Ibsim::Run services = sim->Tool({"saquery", "-S"});
  EXPECT_EQ(Values(services.out, "ServiceName").at(0), "softib-sa-test") << services.out;
  EXPECT_EQ(Values(services.out, "ServiceGID").at(0), gid) << services.out;
  Ibsim::Run del = sim->Tool(
      {SOFTIB_SM_BINARY, "--query", "SR", "ServiceID=0x10000ce", "ServiceGID=" + gid, "--delete"},
      on_host);
  EXPECT_EQ(del.status, 0) << del.out << del.err;
  services = sim->Tool({"saquery", "-S"});
  EXPECT_EQ(Count(services.out, "ServiceRecord dump"), 0u) << services.out;

  // ClassPortInfo, and softib-sm's own requester against its SA.
  const Ibsim::Run cpi = sim->Tool({"saquery", "-c"});
  EXPECT_EQ(Values(cpi.out, "Class version").at(0), "2") << cpi.out;
  const Ibsim::Run q = sim->Tool({SOFTIB_SM_BINARY, "--query", "NR", "LID=" + host_lid});
  EXPECT_EQ(q.status, 0) << q.out << q.err;
  EXPECT_NE(q.out.find("1 records"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find(Hex(host).substr(2)), std::string::npos) << q.out;

  sm->Stop();
  sim->Stop();
}

// LMC 1: every LID of a block has paths; NumbPath limits them; saquery finds the path to
// the second LID of a block.
TEST_F(SaIbsimInterop, LmcPathsAndNumbPath) {
  auto sim = StartIbsim("lmc");
  ASSERT_TRUE(sim->ready());
  const std::string guid2lid = dir_ + "/guid2lid";
  auto sm = sim->Start({SOFTIB_SM_BINARY, "--quiet", "--lmc", "1", "--guid2lid", guid2lid});
  ASSERT_TRUE(sm->WaitFor("MASTER, subnet up")) << sm->output();
  Guid2Lid lids;
  std::string error;
  ASSERT_TRUE(lids.Load(guid2lid, &error)) << error;
  const uint64_t a = topology_.node(3).ports[1].guid, b = topology_.node(6).ports[1].guid;
  const auto ra = lids.entries().at(a), rb = lids.entries().at(b);
  ASSERT_EQ(ra.second, ra.first + 1);
  const Ibsim::Run two = sim->Tool({SOFTIB_SM_BINARY, "--query", "PR", "SGID=" + GidText(a),
                                    "DGID=" + GidText(b), "NumbPath=2"});
  ASSERT_EQ(two.status, 0) << two.out << two.err;
  EXPECT_NE(two.out.find("2 records"), std::string::npos) << two.out;
  const auto slids = Values(two.out, "SLID"), dlids = Values(two.out, "DLID");
  ASSERT_EQ(slids.size(), 2u) << two.out;
  EXPECT_EQ(slids[0], std::to_string(ra.first));
  EXPECT_EQ(dlids[0], std::to_string(rb.first));
  EXPECT_EQ(slids[1], std::to_string(ra.first + 1));
  EXPECT_EQ(dlids[1], std::to_string(rb.first + 1));
  const std::string second = std::to_string(ra.first + 1) + ":" + std::to_string(rb.first + 1);
  const Ibsim::Run pr = sim->Tool({"saquery", "-p", "--src-to-dst", second});
  ASSERT_EQ(pr.status, 0) << pr.out << pr.err;
  EXPECT_EQ(Values(pr.out, "dlid").at(0), std::to_string(rb.first + 1)) << pr.out;
  EXPECT_EQ(Values(pr.out, "dgid").at(0), GidText(b)) << pr.out;
  sm->Stop();
  sim->Stop();
}

TEST_F(SaIbsimInterop, OpenSmAnswersTheSameQueriesTheSameWay) {
  if (!OnPath("opensm")) GTEST_FAIL() << "opensm is needed for the comparison";
  std::map<std::string, NodeSeen> ours, theirs;
  std::map<std::string, std::string> our_paths, their_paths;
  {
    auto sim = StartIbsim("softib-cmp");
    ASSERT_TRUE(sim->ready());
    auto sm = sim->Start({SOFTIB_SM_BINARY, "--quiet"});
    ASSERT_TRUE(sm->WaitFor("MASTER, subnet up")) << sm->output();
    ours = NodesByLid(*sim, 10);
    our_paths = CaPaths(*sim);
    sm->Stop();
    sim->Stop();
  }
  {
    auto sim = StartIbsim("opensm-cmp");
    ASSERT_TRUE(sim->ready());
    const std::string osm_dir = dir_ + "/osm";
    fs::create_directories(osm_dir);
    Child osm({"ibsim-run", "opensm", "-F", "/dev/null", "-f", osm_dir + "/osm.log"}, dir_,
              {{"IBSIM_SOCKNAME", "softib-sa-" + std::to_string(::getpid()) + "-opensm-cmp"},
               {"OSM_TMP_DIR", osm_dir},
               {"OSM_CACHE_DIR", osm_dir}});
    ASSERT_TRUE(osm.started());
    // OpenSM's SA answers once the subnet is up; ask until it does (a bounded number of
    // tries, not a timing assertion).
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
      up = sim->Tool({"saquery", "-c"}).status == 0;
      if (!up) ::usleep(200000);
    }
    ASSERT_TRUE(up) << "OpenSM's SA never answered";
    theirs = NodesByLid(*sim, 10);
    their_paths = CaPaths(*sim);
    // OpenSM's unfiltered NodeRecord table also reaches saquery as its first MAD only: one
    // record of the seven (the RMPP segments after it are lost in umad2sim).
    const Ibsim::Run all = sim->Tool({"saquery"});
    EXPECT_EQ(all.status, 0) << all.err;
    EXPECT_EQ(Count(all.out, "NodeRecord dump"), 1u) << all.out;
    osm.Stop();
    sim->Stop();
  }
  ASSERT_EQ(ours.size(), 7u);
  ASSERT_EQ(theirs.size(), ours.size());
  for (const auto& [port, n] : ours) {
    ASSERT_TRUE(theirs.count(port)) << port;
    const NodeSeen& o = theirs.at(port);
    EXPECT_EQ(n.node_guid, o.node_guid) << port;
    EXPECT_EQ(n.type, o.type) << port;
    EXPECT_EQ(n.desc, o.desc) << port;
    EXPECT_EQ(n.port_num, o.port_num) << port;
    EXPECT_EQ(n.num_ports, o.num_ports) << port;
  }
  ASSERT_EQ(our_paths.size(), 12u);
  EXPECT_EQ(our_paths, their_paths);
}

}  // namespace
}  // namespace softib::sm
