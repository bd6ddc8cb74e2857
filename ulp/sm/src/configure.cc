// Programming LIDs, forwarding tables and port states.
#include "softib/sm/configure.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "softib/sm/smp.h"

namespace softib::sm {

const char* ToString(ConfigurePhase phase) {
  switch (phase) {
    case ConfigurePhase::kLids:
      return "lids";
    case ConfigurePhase::kForwarding:
      return "forwarding";
    case ConfigurePhase::kArm:
      return "arm";
    case ConfigurePhase::kActivate:
      return "activate";
  }
  return "?";
}

namespace {

constexpr uint8_t kSubnetTimeOut = 18;  // OpenSM's default: 4.096 us * 2^18 ~ 1 s

class Configurator {
 public:
  Configurator(Transactions& tx, Subnet& subnet, ConfigureReport& report,
               const ConfigureOptions& options)
      : tx_(tx),
        subnet_(subnet),
        report_(report),
        fast_(options.fast),
        subnet_prefix_(options.subnet_prefix) {
    if (subnet.sm_node != kNoNode) sm_lid_ = subnet.node(subnet.sm_node).ports[subnet.sm_port].lid;
  }

  void Run(ConfigurePhase phase) {
    switch (phase) {
      case ConfigurePhase::kLids:
        for (const EndPort& e : subnet_.EndPorts()) {
          const SmPort& port = subnet_.node(e.node).ports[e.port];
          const bool arm = fast_ && !subnet_.node(e.node).is_switch() && port.known &&
                           port.linked() && port.info.PortState == kPortInit;
          SetPort(e.node, e.port, arm ? kPortArmed : 0, false, &report_.lid_sets,
                  arm ? &report_.armed : nullptr);
        }
        break;
      case ConfigurePhase::kForwarding:
        ProgramForwarding();
        return;
      case ConfigurePhase::kArm:
      case ConfigurePhase::kActivate: {
        const uint8_t from = phase == ConfigurePhase::kArm ? kPortInit : kPortArmed;
        const uint8_t to = from + 1;
        unsigned* counter = phase == ConfigurePhase::kArm ? &report_.armed : &report_.activated;
        for (NodeId n = 0; n < subnet_.nodes().size(); ++n) {
          const SmNode& node = subnet_.node(n);
          for (uint8_t p = 1; p <= node.num_ports; ++p) {
            const SmPort& port = node.ports[p];
            if (port.known && port.linked() && port.info.PortState == from)
              SetPort(n, p, to, fast_, counter);
          }
        }
        break;
      }
    }
    Drive();
  }

 private:
  void Drive() {
    if (!tx_.Run()) Fail("transport: " + tx_.last_error());
  }

  void Fail(const std::string& what) {
    ++report_.failed;
    if (report_.first_failure.empty()) report_.first_failure = what;
  }

  std::string Name(NodeId n, int port = -1) const {
    const SmNode& node = subnet_.node(n);
    char guid[24];
    std::snprintf(guid, sizeof guid, "0x%016llx", static_cast<unsigned long long>(node.guid));
    std::string s = "\"" + node.description + "\" (" + guid + ")";
    if (port >= 0) s += " port " + std::to_string(port);
    return s;
  }

  // PortInfo Set that keeps what the port has, with the SM's addressing and GIDPrefix (end
  // ports), the link parameters agreed with the peer, and `state` (0 = no change); counted
  // in `counter` (and `also`).
  void SetPort(NodeId n, uint8_t p, uint8_t state, bool by_lid, unsigned* counter,
               unsigned* also = nullptr) {
    const SmNode& node = subnet_.node(n);
    const SmPort& port = node.ports[p];
    mad::PortInfo pi = port.info;
    const bool end_port = node.is_switch() ? p == 0 : true;
    if (end_port) {
      pi.LID = port.lid;
      pi.LMC = port.lmc;
      pi.MasterSMLID = sm_lid_;
      pi.SubnetTimeOut = kSubnetTimeOut;
      pi.GIDPrefix = subnet_prefix_;
    }
    if (port.linked()) {
      const SmPort& peer = subnet_.node(port.peer).ports[port.peer_port];
      if (peer.known) {
        if (pi.MTUCap && peer.info.MTUCap) pi.NeighborMTU = std::min(pi.MTUCap, peer.info.MTUCap);
        if (pi.VLCap && peer.info.VLCap) pi.OperationalVLs = std::min(pi.VLCap, peer.info.VLCap);
      }
    }
    pi.PortState = state;
    pi.PortPhysicalState = 0;     // no change
    pi.LinkDownDefaultState = 0;  // no change
    MadBytes data{};
    pi.Pack(std::span<uint8_t>(data).first(mad::PortInfo::kSize));
    const auto bytes = std::span<const uint8_t>(data).first(kSmpDataBytes);
    MadAddress to;
    MadBytes smp = MakeDrSmp(kMethodSet, kAttrPortInfo, p, node.path, bytes);
    if (by_lid) RouteByLid(subnet_, n, p, smp, to);
    tx_.Submit(smp, to, [this, n, p, state, counter, also](const TxResult& r) {
      if (!Check(r, n, p, "PortInfo Set")) return;
      SmPort& port = subnet_.node(n).ports[p];
      port.info.Unpack(SmpData(r.response));
      if (state && port.info.PortState != state) port.info.PortState = state;
      ++*counter;
      if (also) ++*also;
    });
  }

  // The LFTs, a switch at a time as the window drains (not all 337 k blocks up front).
  // Directed-routed: every switch's SwitchInfo and blocks along its path. LID-routed: first,
  // along the paths, each switch's SwitchInfo (LinearFDBTop) and the block holding the SM's
  // LID, the way back to the SM; then the switches by hop distance from the SM, each
  // wave's blocks LID-routed when the SM's model shows the LID route to the switch running
  // through switches of earlier waves only (all their blocks in), along the path otherwise.
  // With min-hop routes every switch but the SM's nearest qualifies.
  void ProgramForwarding() {
    std::vector<NodeId> switches;
    std::vector<std::size_t> waves;  // where each distance begins in `switches`
    SwitchesByDistance(switches, waves);
    lft_failed_.assign(subnet_.nodes().size(), false);
    if (!fast_ || sm_lid_ == 0) {
      FeedSwitches(switches, 0, switches.size(), kNoBlock, true);
      Drive();
      return;
    }
    const uint32_t sm_block = sm_lid_ / kLftBlockEntries;
    for (NodeId n : switches) {
      SetSwitchInfo(n);
      if (sm_block * kLftBlockEntries < subnet_.node(n).lft.size()) SetBlock(n, sm_block, false);
    }
    Drive();
    ready_.assign(subnet_.nodes().size(), kNotReady);
    for (NodeId n : switches)
      if (!lft_failed_[n]) ready_[n] = kWayBack;
    for (std::size_t w = 0; w + 1 < waves.size(); ++w) {
      FeedSwitches(switches, waves[w], waves[w + 1], sm_block, false);
      Drive();
      for (std::size_t i = waves[w]; i < waves[w + 1]; ++i)
        if (!lft_failed_[switches[i]]) ready_[switches[i]] = kAllBlocks;
    }
  }

  // The switches in breadth-first order from the SM over the model's links, and where each
  // hop distance begins (`waves` ends with switches.size()); unreachable ones last.
  void SwitchesByDistance(std::vector<NodeId>& switches, std::vector<std::size_t>& waves) const {
    const std::size_t count = subnet_.nodes().size();
    std::vector<unsigned> distance(count, ~0u);
    std::vector<NodeId> order;
    if (subnet_.sm_node != kNoNode) {
      distance[subnet_.sm_node] = 0;
      order.push_back(subnet_.sm_node);
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      const SmNode& node = subnet_.node(order[i]);
      // Packets cross a CA only from its own port: the SM's node is the only CA entered.
      if (!node.is_switch() && order[i] != subnet_.sm_node) continue;
      for (uint8_t p = 1; p <= node.num_ports; ++p) {
        const SmPort& port = node.ports[p];
        if (!port.linked() || distance[port.peer] != ~0u) continue;
        distance[port.peer] = distance[order[i]] + 1;
        order.push_back(port.peer);
      }
    }
    for (NodeId n = 0; n < count; ++n)
      if (subnet_.node(n).is_switch() && distance[n] == ~0u) order.push_back(n);
    unsigned last = ~0u - 1;
    for (NodeId n : order) {
      if (!subnet_.node(n).is_switch()) continue;
      if (distance[n] != last) waves.push_back(switches.size());
      last = distance[n];
      switches.push_back(n);
    }
    waves.push_back(switches.size());
  }

  void FeedSwitches(const std::vector<NodeId>& switches, std::size_t first, std::size_t end,
                    uint32_t skip_block, bool with_switch_info) {
    tx_.set_feeder([this, &switches, i = first, end, skip_block, with_switch_info]() mutable {
      const std::size_t before = tx_.pending();
      while (i < end && tx_.pending() == before) {  // a feeder must submit something
        const NodeId n = switches[i++];
        if (with_switch_info) SetSwitchInfo(n);
        const bool by_lid = fast_ && LidRouteReady(n);
        for (uint32_t b = 0; b * kLftBlockEntries < subnet_.node(n).lft.size(); ++b)
          if (b != skip_block) SetBlock(n, b, by_lid);
      }
      return tx_.pending() != before;
    });
  }

  void SetSwitchInfo(NodeId n) {
    SmNode& node = subnet_.node(n);
    mad::SwitchInfo si = node.switch_info;
    si.LinearFDBTop = static_cast<uint16_t>(node.lft.empty() ? 0 : node.lft.size() - 1);
    // 0 leaves it: discovery cleared it before reading the ports, and a change since then
    // is news for the next sweep.
    si.PortStateChange = 0;
    MadBytes data{};
    si.Pack(std::span<uint8_t>(data).first(mad::SwitchInfo::kSize));
    tx_.Submit(
        MakeDrSmp(kMethodSet, kAttrSwitchInfo, 0, node.path,
                  std::span<const uint8_t>(data).first(kSmpDataBytes)),
        MadAddress{}, [this, n](const TxResult& r) {
          if (!Check(r, n, -1, "SwitchInfo Set")) {
            lft_failed_[n] = true;
            return;
          }
          subnet_.node(n).switch_info.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
          ++report_.switch_info_sets;
        });
  }

  void SetBlock(NodeId n, uint32_t number, bool by_lid) {
    const SmNode& node = subnet_.node(n);
    const std::size_t first = std::size_t{number} * kLftBlockEntries;
    std::array<uint8_t, kSmpDataBytes> block;
    block.fill(kNoPort);
    const std::size_t count = std::min(kLftBlockEntries, node.lft.size() - first);
    std::copy_n(node.lft.begin() + static_cast<std::ptrdiff_t>(first), count, block.begin());
    MadBytes smp = MakeDrSmp(kMethodSet, kAttrLft, number, node.path, block);
    MadAddress to;
    if (by_lid) RouteByLid(subnet_, n, 0, smp, to);
    tx_.Submit(smp, to, [this, n, by_lid](const TxResult& r) {
      if (!Check(r, n, -1, "LFT Set")) {
        lft_failed_[n] = true;
        return;
      }
      ++report_.lft_blocks;
      report_.lft_blocks_by_lid += by_lid;
    });
  }

  // Whether a LID-routed SMP reaches switch `n` and its response the SM, by the LFTs as
  // the model has them, through switches programmed far enough: all blocks on the way
  // there, the SM's block on the way back.
  bool LidRouteReady(NodeId n) const {
    const SmNode& target = subnet_.node(n);
    if (n == subnet_.sm_node || target.ports[0].lid == 0) return false;
    const SmNode& sm = subnet_.node(subnet_.sm_node);
    NodeId first = subnet_.sm_node;
    if (!sm.is_switch()) {
      const SmPort& port = sm.ports[subnet_.sm_port];
      if (!port.linked()) return false;
      first = port.peer;
    }
    return Reaches(first, target.ports[0].lid, n, 0, kAllBlocks) &&
           Reaches(n, sm_lid_, subnet_.sm_node, subnet_.sm_port, kWayBack);
  }

  // Follows the modelled LFTs from switch `at` towards `dlid`, which `target`:`port` owns
  // (port 0 for a switch), through switches at least `needed` ready.
  bool Reaches(NodeId at, uint16_t dlid, NodeId target, uint8_t target_port, uint8_t needed) const {
    for (unsigned hop = 0; hop <= kMaxDrHops; ++hop) {
      if (at == target && subnet_.node(at).is_switch()) return true;  // its own LID
      const SmNode& node = subnet_.node(at);
      if (!node.is_switch() || ready_[at] < needed || dlid >= node.lft.size()) return false;
      const uint8_t out = node.lft[dlid];
      if (out == 0 || out > node.num_ports || !node.ports[out].linked()) return false;
      const SmPort& port = node.ports[out];
      if (port.peer == target && !subnet_.node(target).is_switch())
        return port.peer_port == target_port;
      at = port.peer;
    }
    return false;
  }

  bool Check(const TxResult& r, NodeId n, int port, const char* what) {
    if (r.status != TxStatus::kOk) {
      Fail(std::string(what) + " to " + Name(n, port) + " timed out");
      return false;
    }
    if (const uint16_t status = SmpStatus(r.response)) {
      char text[16];
      std::snprintf(text, sizeof text, "0x%04x", status);
      Fail(std::string(what) + " to " + Name(n, port) + " refused, status " + text);
      return false;
    }
    return true;
  }

  Transactions& tx_;
  Subnet& subnet_;
  ConfigureReport& report_;
  const bool fast_;
  const uint64_t subnet_prefix_;
  uint16_t sm_lid_ = 0;
  static constexpr uint32_t kNoBlock = ~0u;
  enum : uint8_t { kNotReady, kWayBack, kAllBlocks };  // a switch's LFT, as far as known in
  std::vector<uint8_t> ready_;
  std::vector<bool> lft_failed_;  // a SwitchInfo or LFT Set to the switch failed
};

}  // namespace

void ConfigurePhaseRun(Transactions& tx, Subnet& subnet, ConfigurePhase phase,
                       ConfigureReport& report, const ConfigureOptions& options) {
  Configurator(tx, subnet, report, options).Run(phase);
}

// After the LIDs and LFTs are in, SMPs may go LID-routed (an SMI sends and receives SMPs in
// LinkInitialize, LinkArm and LinkActive, and softib's switches forward VL15 through ports
// in Init or Armed; each hop looks its LFT up instead of relaying along the path). Not to
// the SM's own node: its port's own SMA answers that.
bool RouteByLid(const Subnet& subnet, NodeId n, uint8_t p, MadBytes& smp, MadAddress& to) {
  if (subnet.sm_node == kNoNode || n == subnet.sm_node) return false;
  const SmNode& node = subnet.node(n);
  const uint16_t lid = node.ports[node.is_switch() ? 0 : p].lid;
  if (lid == 0 || subnet.node(subnet.sm_node).ports[subnet.sm_port].lid == 0) return false;
  ToLidRouted(smp);
  to.lid = lid;
  return true;
}

unsigned ReadBackLfts(Transactions& tx, const Subnet& subnet, Subnet& readback) {
  readback = subnet;
  unsigned failures = 0;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    if (!node.is_switch()) continue;
    readback.node(n).lft.assign(node.lft.size(), kNoPort);
    tx.Submit(MakeDrSmp(kMethodGet, kAttrSwitchInfo, 0, node.path), MadAddress{},
              [&readback, &failures, n](const TxResult& r) {
                if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
                  ++failures;
                  return;
                }
                mad::SwitchInfo si;
                si.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
                // Entries above LinearFDBTop do not forward, whatever the blocks hold.
                auto& lft = readback.node(n).lft;
                if (lft.size() > std::size_t{si.LinearFDBTop} + 1) lft.resize(si.LinearFDBTop + 1u);
              });
    for (std::size_t first = 0; first < node.lft.size(); first += kLftBlockEntries) {
      const uint32_t number = static_cast<uint32_t>(first / kLftBlockEntries);
      tx.Submit(MakeDrSmp(kMethodGet, kAttrLft, number, node.path), MadAddress{},
                [&readback, &failures, n, first](const TxResult& r) {
                  if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
                    ++failures;
                    return;
                  }
                  auto& lft = readback.node(n).lft;
                  const auto data = SmpData(r.response);
                  for (std::size_t i = 0; i < kLftBlockEntries && first + i < lft.size(); ++i)
                    lft[first + i] = data[i];
                });
    }
  }
  if (!tx.Run()) ++failures;
  return failures;
}

}  // namespace softib::sm
