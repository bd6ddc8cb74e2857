// Interop with the real ibsim (Debian ibsim-utils): it parses the files our writer
// produces without a warning, and the real `ibnetdiscover` (infiniband-diags, run under
// ibsim-run) discovers exactly the topology we wrote: same nodes, GUIDs, descriptions,
// vendor/device ids, cables, widths and speeds. The oracles come from
// scripts/install-deps.sh; a missing one fails the test.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tied_child.h"

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

namespace softib::fabric {
namespace {

namespace fs = std::filesystem;

// ibsim prints "ready" just before it binds its sockets; clients that come too early
// sleep 2 s before they retry, so wait for the control socket itself.
bool SocketBound(const std::string& name) {
  std::ifstream unix_sockets("/proc/net/unix");
  // Abstract names show as "@name"; ibsim's address length counts the trailing NUL,
  // which shows as a second '@'.
  const std::string want = "@" + name + ":ctl@";
  for (std::string line; std::getline(unix_sockets, line);)
    if (line.size() >= want.size() &&
        line.compare(line.size() - want.size(), want.size(), want) == 0)
      return true;
  return false;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// A child process whose stdout (and stderr, unless `stderr_file` names a file for it)
// comes back through a pipe.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& cwd,
        const std::map<std::string, std::string>& env, const std::string& stderr_file = "") {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      test_support::DieWithParent(parent);  // no ibsim or tool outlives the test
      ::dup2(fds[1], 1);
      if (stderr_file.empty()) {
        ::dup2(fds[1], 2);
      } else {
        const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (err < 0) ::_exit(125);
        ::dup2(err, 2);
      }
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_fd_ = fds[0];
  }
  ~Child() {
    Stop();
    if (out_fd_ >= 0) ::close(out_fd_);
  }
  bool started() const { return pid_ > 0; }

  // Reads output until it contains `marker` (true) or the pipe closes or a generous
  // deadline passes (false): a safety net against a hung oracle, not a timing check.
  bool WaitFor(const std::string& marker) {
    for (int waited_ms = 0; waited_ms < 60000;) {
      if (output_.find(marker) != std::string::npos) return true;
      pollfd p{out_fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, 100);
      if (r == 0) {
        waited_ms += 100;
        continue;
      }
      if (!ReadSome()) return output_.find(marker) != std::string::npos;
    }
    return false;
  }

  // Waits for the process to exit by itself; returns its exit status (or -1).
  int Wait() {
    while (ReadSome()) {
    }
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // SIGTERM to our own child, by PID, then reap it.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_fd_ >= 0) {
      const int flags = ::fcntl(out_fd_, F_GETFL);
      ::fcntl(out_fd_, F_SETFL, flags | O_NONBLOCK);
      while (ReadSome()) {
      }
    }
  }

  const std::string& output() const { return output_; }

 private:
  bool ReadSome() {
    char buf[65536];
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string output_;
};

// Nodes keyed by GUID and links as unordered {(GUID, port), (GUID, port)} pairs: the
// topology without the order ibnetdiscover happened to visit it in.
struct Shape {
  std::map<uint64_t, Node> nodes;
  std::set<std::tuple<uint64_t, int, uint64_t, int, int, int>> links;
};

Shape ShapeOf(const Topology& t) {
  Shape s;
  for (const Node& n : t.nodes()) s.nodes.emplace(n.guid, n);
  for (const Link& l : t.links()) {
    auto a = std::pair{t.node(l.a.node).guid, int{l.a.port}};
    auto b = std::pair{t.node(l.b.node).guid, int{l.b.port}};
    if (b < a) std::swap(a, b);
    s.links.emplace(a.first, a.second, b.first, b.second, static_cast<int>(l.width),
                    static_cast<int>(l.speed));
  }
  return s;
}

class IbsimInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(OnPath("ibsim") && OnPath("ibsim-run") && OnPath("ibnetdiscover") &&
                OnPath("stdbuf"))
        << "ibsim, ibsim-run and ibnetdiscover are needed: run scripts/install-deps.sh "
           "(packages ibsim-utils, infiniband-diags)";
    char tmpl[] = "/tmp/softib-topo-ibsim-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Writes `t`, loads it into ibsim, discovers it with ibnetdiscover, stops ibsim, and
  // checks ibsim's words and the discovered topology.
  void LoadAndDiscover(const Topology& t, const std::string& name) {
    const std::string file = dir_ + "/" + name + ".net";
    ASSERT_EQ(WriteIbnetdiscoverFile(t, file), "");
    // A socket name of our own: tests run in parallel, and other people's ibsim too.
    const std::string sock = "softib-topo-" + std::to_string(::getpid()) + "-" + name;
    const std::map<std::string, std::string> env = {{"IBSIM_SOCKNAME", sock}};

    // stdbuf -oL: ibsim prints with stdio, so a pipe would hold its lines back.
    Child sim({"stdbuf", "-oL", "ibsim", "-s", "-n", file}, dir_, env);
    ASSERT_TRUE(sim.started());
    const bool ready = sim.WaitFor("Network simulator ready");
    EXPECT_TRUE(ready) << "ibsim did not come up:\n" << sim.output();
    for (int i = 0; ready && i < 6000 && !SocketBound(sock); ++i) ::usleep(10000);

    std::string discovered;
    int discover_status = -1;
    if (ready) {
      // umad2sim writes a fake sysfs tree into the working directory.
      Child disc({"ibsim-run", "ibnetdiscover"}, dir_, env, dir_ + "/ibnetdiscover.err");
      ASSERT_TRUE(disc.started());
      discover_status = disc.Wait();
      discovered = disc.output();
    }
    sim.Stop();

    const std::string& log = sim.output();
    EXPECT_NE(log.find(file + ": parsed"), std::string::npos) << log;
    for (const char* bad : {"ibwarn", "ibpanic", "fatal", "failed", "bad ", "cannot"})
      EXPECT_EQ(log.find(bad), std::string::npos) << "ibsim said '" << bad << "':\n" << log;
    if (!ready) return;

    ASSERT_EQ(discover_status, 0) << discovered;
    // (Its stderr, with umad2sim's "attached as client 0" line, went to a file.)
    ReadResult r = ReadIbnetdiscover(discovered, "ibnetdiscover");
    ASSERT_TRUE(r.ok()) << r.error << "\n" << discovered;
    const Shape want = ShapeOf(t), got = ShapeOf(*r.topology);
    EXPECT_EQ(got.nodes.size(), want.nodes.size());
    for (const auto& [guid, node] : want.nodes) {
      auto it = got.nodes.find(guid);
      ASSERT_NE(it, got.nodes.end()) << node.name << " was not discovered";
      EXPECT_TRUE(it->second == node) << node.name << " differs";
    }
    EXPECT_EQ(got.links, want.links);
  }

  std::string dir_;
};

TEST_F(IbsimInterop, DefaultTopology) { LoadAndDiscover(DefaultTopology(), "default"); }

TEST_F(IbsimInterop, GeneratedFatTree) {
  FatTreeShape s;
  s.leaves = 4;
  s.hosts_per_leaf = 3;
  s.spines = 2;
  s.uplinks = 2;
  GenerateResult g = GenerateFatTree(s);
  ASSERT_TRUE(g.ok()) << g.error;
  LoadAndDiscover(*g.topology, "fat-tree");
}

TEST_F(IbsimInterop, GeneratedThreeLevelFatTree) {
  FatTreeShape s;
  s.levels = 3;
  s.pods = 2;
  s.leaves = 4;
  s.hosts_per_leaf = 2;
  s.aggs_per_pod = 2;
  s.spines = 2;
  s.hardware.speed = LinkSpeed::kEdr;  // ibsim 0.10 knows FDR/EDR/HDR
  GenerateResult g = GenerateFatTree(s);
  ASSERT_TRUE(g.ok()) << g.error;
  LoadAndDiscover(*g.topology, "fat-tree-3");
}

TEST_F(IbsimInterop, GeneratedTorus) {
  TorusShape s;
  s.x = 3;
  s.y = 3;
  s.hosts_per_switch = 2;
  GenerateResult g = GenerateTorus(s);
  ASSERT_TRUE(g.ok()) << g.error;
  LoadAndDiscover(*g.topology, "torus");
}

// LIDs, LMC, EnhancedPort0 and a slower link come back as the file gave them (ibsim
// presets LIDs and LMCs from the file; ibnetdiscover reads them from PortInfo).
TEST_F(IbsimInterop, LidsLmcEnhancedPortAndRates) {
  Topology t = DefaultTopology();
  t.mutable_node(0).enhanced_port0 = true;
  for (NodeIndex i = 0; i < 3; ++i) t.mutable_node(i).ports[0].lid = static_cast<uint16_t>(i + 1);
  for (NodeIndex i = 3; i < 7; ++i)
    t.mutable_node(i).ports[1].lid = static_cast<uint16_t>(2 * i + 2);
  t.mutable_node(6).ports[1].lmc = 1;
  Topology slow;
  for (const Node& n : t.nodes()) slow.AddNode(n);
  for (Link l : t.links()) {
    if (slow.node(l.a.node).description == "host-0004 HCA-1" ||
        slow.node(l.b.node).description == "host-0004 HCA-1") {
      l.width = LinkWidth::k1x;
      l.speed = LinkSpeed::kDdr;
    }
    slow.AddLink(l);
  }
  ASSERT_EQ(slow.Validate(), "");
  LoadAndDiscover(slow, "lids");
}

// The benchmark fabrics load as they are (2012 nodes fit ibsim's default 2048).
TEST_F(IbsimInterop, PresetFt36) { LoadAndDiscover(*MakePreset("ft36"), "ft36"); }
TEST_F(IbsimInterop, PresetFt92) { LoadAndDiscover(*MakePreset("ft92"), "ft92"); }

}  // namespace
}  // namespace softib::fabric
