// The in-memory fabric's SMAs: each request is answered at once, in the order sent.
#include "fake_fabric.h"

#include <algorithm>
#include <cstring>

#include "softib/sm/smp.h"

namespace softib::sm::testing {
namespace {

constexpr uint16_t kStatusUnsupportedAttribute = 0x000C;
constexpr uint16_t kStatusInvalidField = 0x001C;
constexpr std::size_t kInitialPath = 128;  // InitialPath[0..63] in a DR SMP

}  // namespace

class FakeFabric::SmPortOfFabric : public QueuedPort {
 public:
  SmPortOfFabric(FakeFabric& fabric, EndPort origin) : fabric_(fabric), origin_(origin) {}

  PortStatus Send(const MadBytes& mad, const MadAddress& to, int) override {
    if (SmpMethod(mad) & 0x80) return PortStatus::kOk;  // our own answers go nowhere
    const auto at = fabric_.Reach(origin_, mad, to.lid);
    if (!at) return PortStatus::kOk;  // lost: the SM times out
    if (fabric_.lose_ && fabric_.lose_(at->node, mad)) return PortStatus::kOk;
    ReceivedMad r;
    r.mad = mad;
    if (fabric_.Answer(at->node, at->port, r.mad)) pending.push_back(r);
    return PortStatus::kOk;
  }
  std::string Describe() const override { return "fake fabric"; }

 private:
  FakeFabric& fabric_;
  const EndPort origin_;
};

FakeFabric::FakeFabric(const fabric::Topology& topology) : state_(SubnetFromTopology(topology)) {}

std::unique_ptr<MadPort> FakeFabric::Attach(NodeId node, uint8_t port) {
  return std::make_unique<SmPortOfFabric>(*this, EndPort{node, port});
}

const mad::PortInfo& FakeFabric::port_info(NodeId node, uint8_t port) const {
  return state_.node(node).ports[port].info;
}

unsigned FakeFabric::port_info_sets(NodeId node, uint8_t port) const {
  const auto it = sets_.find({node, port});
  return it == sets_.end() ? 0 : it->second;
}

std::optional<EndPort> FakeFabric::Reach(const EndPort& origin, const MadBytes& smp,
                                         uint16_t dlid) const {
  if (SmpClass(smp) == kClassSubnLid) {
    for (const EndPort& e : state_.EndPorts()) {
      const mad::PortInfo& pi = state_.node(e.node).ports[e.port].info;
      if (pi.LID && dlid >= pi.LID && dlid < pi.LID + (1u << pi.LMC)) return e;
    }
    return std::nullopt;
  }
  EndPort at = origin;
  const uint8_t hops = smp[7];
  for (uint8_t hop = 1; hop <= hops; ++hop) {
    const SmNode& node = state_.node(at.node);
    const uint8_t out = smp[kInitialPath + hop];
    // A CA sends only out of the port the SM sits on, and relays nothing.
    if (!node.is_switch() && (hop > 1 || out != origin.port)) return std::nullopt;
    if (out == 0 || out > node.num_ports || !node.ports[out].linked()) return std::nullopt;
    at = {node.ports[out].peer, node.ports[out].peer_port};
  }
  return at;
}

void FakeFabric::AddPeerSm(NodeId node, uint8_t port, SmInfoAnswer answer) {
  state_.node(node).ports[port].info.CapabilityMask |= kCapIsSm;
  peer_sms_[{node, port}] = std::move(answer);
}

bool FakeFabric::Answer(NodeId at, uint8_t in_port, MadBytes& smp) {
  const SmNode& node = state_.node(at);
  const bool set = SmpMethod(smp) == kMethodSet;
  const uint32_t modifier = SmpModifier(smp);
  auto data = MutableSmpData(smp);
  uint16_t status = 0;
  switch (SmpAttribute(smp)) {
    case kAttrNodeInfo: {
      mad::NodeInfo info = node.node_info;
      info.LocalPortNum = in_port;
      if (!node.is_switch()) info.PortGUID = node.ports[in_port].guid;
      info.Pack(data);
      break;
    }
    case kAttrNodeDescription:
      std::fill(data.begin(), data.end(), 0);
      std::memcpy(data.data(), node.description.data(),
                  std::min(node.description.size(), data.size()));
      break;
    case kAttrSwitchInfo: {
      if (!node.is_switch()) {
        status = kStatusUnsupportedAttribute;
        break;
      }
      mad::SwitchInfo& held = state_.node(at).switch_info;
      if (set) {
        mad::SwitchInfo req;
        req.Unpack(SmpData(smp).first(mad::SwitchInfo::kSize));
        held.LinearFDBTop = req.LinearFDBTop;
        held.MulticastFDBTop = req.MulticastFDBTop;
        if (req.PortStateChange) held.PortStateChange = 0;  // writing 1 clears it
      }
      held.Pack(data.first(mad::SwitchInfo::kSize));
      break;
    }
    case kAttrPortInfo:
      status = AnswerPortInfo(at, in_port, smp);
      break;
    case kAttrPKeyTable:
    case kAttrLft:
    case kAttrMft: {
      // A CA's P_KeyTable is the entered port's; a switch names the port in bits 23:16.
      const uint32_t key = node.is_switch() ? modifier : (uint32_t{in_port} << 16 | modifier);
      auto [it, added] = blocks_.try_emplace({SmpAttribute(smp), at, key});
      if (added && SmpAttribute(smp) == kAttrPKeyTable && (modifier & 0xFFFF) == 0)
        it->second[0] = it->second[1] = 0xFF;  // the default partition, full member
      AnswerBlock(it->second, smp);
      break;
    }
    case kAttrSmInfo: {
      const auto peer = peer_sms_.find({at, in_port});
      if (peer == peer_sms_.end()) {
        status = kStatusUnsupportedAttribute;  // no SM there
        break;
      }
      const std::optional<SmIdentity> said = peer->second(SmpMethod(smp), modifier);
      if (!said) return false;
      PackSmInfo(*said, 0, smp);
      break;
    }
    default:
      status = kStatusUnsupportedAttribute;
  }
  smp[3] = kMethodGetResp;
  if (SmpClass(smp) == kClassSubnDr) {
    smp[4] = static_cast<uint8_t>(0x80 | status >> 8);  // D: returning
  } else {
    smp[4] = static_cast<uint8_t>(status >> 8);
  }
  smp[5] = static_cast<uint8_t>(status);
  return true;
}

void FakeFabric::AnswerBlock(std::array<uint8_t, 64>& stored, MadBytes& smp) {
  if (SmpMethod(smp) == kMethodSet)
    std::copy_n(SmpData(smp).begin(), stored.size(), stored.begin());
  std::copy(stored.begin(), stored.end(), MutableSmpData(smp).begin());
}

uint16_t FakeFabric::AnswerPortInfo(NodeId at, uint8_t in_port, MadBytes& smp) {
  SmNode& node = state_.node(at);
  uint32_t port = SmpModifier(smp);
  if (!node.is_switch() && port == 0) port = in_port;  // a CA answers for the entered port
  if (port > node.num_ports || (!node.is_switch() && port == 0)) return kStatusInvalidField;
  mad::PortInfo& held = node.ports[port].info;
  if (SmpMethod(smp) == kMethodSet) {
    mad::PortInfo req;
    req.Unpack(SmpData(smp));
    // States move one step at a time, Init -> Armed -> Active (IBA 14.2.5.6); 0: no change.
    if (req.PortState != 0 && req.PortState != held.PortState &&
        !(req.PortState == held.PortState + 1 && held.PortState >= kPortInit))
      return kStatusInvalidField;
    if (!node.is_switch() || port == 0) {  // the end port's addressing
      held.LID = req.LID;
      held.LMC = req.LMC;
      held.MasterSMLID = req.MasterSMLID;
      held.GIDPrefix = req.GIDPrefix;
      held.SubnetTimeOut = req.SubnetTimeOut;
    }
    if (req.PortState) held.PortState = req.PortState;
    if (req.NeighborMTU) held.NeighborMTU = req.NeighborMTU;
    if (req.OperationalVLs) held.OperationalVLs = req.OperationalVLs;
    held.PartitionEnforcementInbound = req.PartitionEnforcementInbound;
    held.PartitionEnforcementOutbound = req.PartitionEnforcementOutbound;
    ++sets_[{at, static_cast<uint8_t>(port)}];
  }
  mad::PortInfo answer = held;
  answer.LocalPortNum = in_port;
  answer.Pack(MutableSmpData(smp));
  return 0;
}

}  // namespace softib::sm::testing
