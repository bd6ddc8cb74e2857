// Breadth-first directed-route discovery.
#include "softib/sm/discovery.h"

#include <memory>

#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

class Walker {
 public:
  Walker(Transactions& tx, Subnet& subnet) : tx_(tx), subnet_(subnet) {}

  DiscoveryReport Run() {
    // Hop 0: the node the SM runs on.
    ProbeNode({}, kNoNode, 0);
    if (!tx_.Run()) report_.error = tx_.last_error();
    if (report_.ok() && subnet_.sm_node == kNoNode)
      report_.error = "the local node did not answer NodeInfo on " + tx_.port().Describe();
    return report_;
  }

 private:
  bool Usable(const TxResult& r, uint16_t attribute) {
    if (r.status != TxStatus::kOk || SmpStatus(r.response) != 0 ||
        SmpAttribute(r.response) != attribute) {
      ++report_.failed_requests;
      return false;
    }
    return true;
  }

  void Get(uint16_t attribute, uint32_t modifier, const std::vector<uint8_t>& path,
           Transactions::Callback done) {
    tx_.Submit(MakeDrSmp(kMethodGet, attribute, modifier, path), MadAddress{}, std::move(done));
  }

  // NodeInfo along `path`, entered from `parent`:`parent_port` (kNoNode for the SM's node).
  void ProbeNode(std::vector<uint8_t> path, NodeId parent, uint8_t parent_port) {
    auto shared_path = std::make_shared<std::vector<uint8_t>>(std::move(path));
    Get(kAttrNodeInfo, 0, *shared_path,
        [this, shared_path, parent, parent_port](const TxResult& r) {
          if (!Usable(r, kAttrNodeInfo)) return;
          OnNodeInfo(*shared_path, parent, parent_port, r.response);
        });
  }

  void OnNodeInfo(const std::vector<uint8_t>& path, NodeId parent, uint8_t parent_port,
                  const MadBytes& response) {
    mad::NodeInfo info;
    info.Unpack(SmpData(response));
    const uint8_t entry = info.LocalPortNum;
    if (info.NumPorts == 0 || info.NodeType < 1 || info.NodeType > 3 ||
        (info.NodeType != 2 && (entry == 0 || entry > info.NumPorts))) {
      ++report_.failed_requests;
      return;
    }
    NodeId id;
    if (auto known = subnet_.Find(info.NodeGUID)) {
      id = *known;
    } else {
      SmNode node;
      node.type = static_cast<fabric::NodeType>(info.NodeType);
      node.guid = info.NodeGUID;
      node.num_ports = info.NumPorts;
      node.node_info = info;
      node.path = path;
      node.ports.resize(info.NumPorts + 1);
      id = subnet_.Add(std::move(node));
      if (parent == kNoNode) {
        subnet_.sm_node = id;
        subnet_.sm_port = subnet_.node(id).is_switch() ? 0 : entry;
      }
      Get(kAttrNodeDescription, 0, path, [this, id](const TxResult& r) {
        if (!Usable(r, kAttrNodeDescription)) return;
        const auto data = SmpData(r.response);
        std::size_t len = 0;
        while (len < data.size() && data[len] != 0) ++len;
        subnet_.node(id).description.assign(data.begin(), data.begin() + len);
      });
      if (subnet_.node(id).is_switch()) {
        Get(kAttrSwitchInfo, 0, path, [this, id](const TxResult& r) {
          if (!Usable(r, kAttrSwitchInfo)) return;
          SmNode& sw = subnet_.node(id);
          sw.switch_info.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
          sw.has_switch_info = true;
          if (sw.switch_info.PortStateChange)
            ClearPortStateChange(id);
          else
            ProbePorts(id);
        });
      }
    }
    SmNode& node = subnet_.node(id);
    if (!node.is_switch()) {
      node.ports[entry].guid = info.PortGUID;
      if (!node.ports[entry].known) ProbePort(id, entry);
    }
    if (parent != kNoNode) subnet_.Link(parent, parent_port, id, entry);
  }

  // PortStateChange is cleared before the ports are read, so a port that changes state
  // after its read sets it again and the switch sends a new Trap 128 (IBA 14.2.5.4): a
  // change during the sweep is never lost to a clear that comes after it.
  void ClearPortStateChange(NodeId id) {
    mad::SwitchInfo si = subnet_.node(id).switch_info;
    si.PortStateChange = 1;  // writing 1 clears it
    MadBytes data{};
    si.Pack(std::span<uint8_t>(data).first(mad::SwitchInfo::kSize));
    tx_.Submit(MakeDrSmp(kMethodSet, kAttrSwitchInfo, 0, subnet_.node(id).path,
                         std::span<const uint8_t>(data).first(kSmpDataBytes)),
               MadAddress{}, [this, id](const TxResult& r) {
                 if (!Usable(r, kAttrSwitchInfo)) return;
                 subnet_.node(id).switch_info.PortStateChange = 0;
                 ProbePorts(id);
               });
  }

  void ProbePorts(NodeId id) {
    for (uint8_t p = 0; p <= subnet_.node(id).num_ports; ++p) ProbePort(id, p);
  }

  void ProbePort(NodeId id, uint8_t port) {
    // A CA answers for the port the SMP arrived on; naming it explicitly is allowed.
    Get(kAttrPortInfo, port, subnet_.node(id).path, [this, id, port](const TxResult& r) {
      if (!Usable(r, kAttrPortInfo)) return;
      SmPort& p = subnet_.node(id).ports[port];
      p.info.Unpack(SmpData(r.response));
      p.known = true;
      Explore(id, port);
    });
  }

  // A switch port (or the SM's own CA port) that is up and not yet explained leads on.
  void Explore(NodeId id, uint8_t port) {
    const SmNode& node = subnet_.node(id);
    if (port == 0) return;
    if (!node.is_switch() && !(id == subnet_.sm_node && node.path.empty())) return;
    const SmPort& p = node.ports[port];
    if (p.linked() || p.info.PortPhysicalState != kPhysLinkUp || p.info.PortState < kPortInit)
      return;
    if (node.path.size() >= kMaxDrHops) return;
    std::vector<uint8_t> path = node.path;
    path.push_back(port);
    ProbeNode(std::move(path), id, port);
  }

  Transactions& tx_;
  Subnet& subnet_;
  DiscoveryReport report_;
};

}  // namespace

DiscoveryReport Discover(Transactions& tx, Subnet& subnet) { return Walker(tx, subnet).Run(); }

}  // namespace softib::sm
