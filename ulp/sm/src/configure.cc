// Programming LIDs, forwarding tables and port states.
#include "softib/sm/configure.h"

#include <algorithm>
#include <cstdio>

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
  Configurator(Transactions& tx, Subnet& subnet, ConfigureReport& report, bool lid_routed)
      : tx_(tx), subnet_(subnet), report_(report), lid_routed_(lid_routed) {
    if (subnet.sm_node != kNoNode) sm_lid_ = subnet.node(subnet.sm_node).ports[subnet.sm_port].lid;
  }

  void Run(ConfigurePhase phase) {
    switch (phase) {
      case ConfigurePhase::kLids:
        for (const EndPort& e : subnet_.EndPorts()) SetPort(e.node, e.port, 0, &report_.lid_sets);
        break;
      case ConfigurePhase::kForwarding:
        // One switch's blocks at a time, as the window drains (not all 337 k up front).
        tx_.set_feeder([this, n = NodeId{0}]() mutable {
          while (n < subnet_.nodes().size() && !subnet_.node(n).is_switch()) ++n;
          if (n == subnet_.nodes().size()) return false;
          ProgramSwitch(n++);
          return true;
        });
        break;
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
              SetPort(n, p, to, counter);
          }
        }
        break;
      }
    }
    if (!tx_.Run()) Fail("transport: " + tx_.last_error());
  }

 private:
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

  // PortInfo Set that keeps what the port has, with the SM's addressing (end ports), the
  // link parameters agreed with the peer, and `state` (0 = no change).
  void SetPort(NodeId n, uint8_t p, uint8_t state, unsigned* counter) {
    const SmNode& node = subnet_.node(n);
    const SmPort& port = node.ports[p];
    mad::PortInfo pi = port.info;
    const bool end_port = node.is_switch() ? p == 0 : true;
    if (end_port) {
      pi.LID = port.lid;
      pi.LMC = port.lmc;
      pi.MasterSMLID = sm_lid_;
      pi.SubnetTimeOut = kSubnetTimeOut;
      if (pi.GIDPrefix == 0) pi.GIDPrefix = 0xfe80000000000000ull;
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
    if (state != 0 && lid_routed_) LidRouted(n, p, smp, to);
    tx_.Submit(smp, to, [this, n, p, state, counter](const TxResult& r) {
      if (!Check(r, n, p, "PortInfo Set")) return;
      SmPort& port = subnet_.node(n).ports[p];
      port.info.Unpack(SmpData(r.response));
      if (state && port.info.PortState != state) port.info.PortState = state;
      ++*counter;
    });
  }

  // Arm and Activate come after the LIDs and LFTs are in, so their SMPs may go LID-routed
  // (an SMI sends and receives SMPs in LinkInitialize, LinkArm and LinkActive, and
  // softib's switches forward VL15 through ports in Init or Armed; each hop looks its LFT
  // up instead of relaying along the path). Not to the SM's own node (its port's
  // own SMA answers that) nor to a node without a LID: those stay directed-routed.
  void LidRouted(NodeId n, uint8_t p, MadBytes& smp, MadAddress& to) const {
    const SmNode& node = subnet_.node(n);
    const uint16_t lid = node.ports[node.is_switch() ? 0 : p].lid;
    if (sm_lid_ == 0 || lid == 0 || n == subnet_.sm_node) return;
    smp[1] = kClassSubnLid;
    std::fill(smp.begin() + 6, smp.begin() + 8, 0);    // HopPointer, HopCount: reserved
    std::fill(smp.begin() + 32, smp.begin() + 64, 0);  // DrSLID, DrDLID, reserved
    std::fill(smp.begin() + 128, smp.end(), 0);        // InitialPath, ReturnPath
    to.lid = lid;
  }

  void ProgramSwitch(NodeId n) {
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
          if (!Check(r, n, -1, "SwitchInfo Set")) return;
          subnet_.node(n).switch_info.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
          ++report_.switch_info_sets;
        });
    for (std::size_t first = 0; first < node.lft.size(); first += kLftBlockEntries) {
      std::array<uint8_t, kSmpDataBytes> block;
      block.fill(kNoPort);
      const std::size_t count = std::min(kLftBlockEntries, node.lft.size() - first);
      std::copy_n(node.lft.begin() + static_cast<std::ptrdiff_t>(first), count, block.begin());
      const uint32_t number = static_cast<uint32_t>(first / kLftBlockEntries);
      tx_.Submit(MakeDrSmp(kMethodSet, kAttrLft, number, node.path, block), MadAddress{},
                 [this, n](const TxResult& r) {
                   if (!Check(r, n, -1, "LFT Set")) return;
                   ++report_.lft_blocks;
                 });
    }
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
  const bool lid_routed_;
  uint16_t sm_lid_ = 0;
};

}  // namespace

void ConfigurePhaseRun(Transactions& tx, Subnet& subnet, ConfigurePhase phase,
                       ConfigureReport& report, bool lid_routed) {
  Configurator(tx, subnet, report, lid_routed).Run(phase);
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
