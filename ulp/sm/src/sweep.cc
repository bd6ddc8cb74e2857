// Light sweeps and the SMInfo exchanges between SMs.
#include "softib/sm/sweep.h"

#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

// A DR SMP to a node arrives on the port its path enters by: switch port 0 answers for the
// switch, the entered port for a CA (the SM's own port for its own node).
bool Addressable(const Subnet& subnet, NodeId n, uint8_t p) {
  const SmNode& node = subnet.node(n);
  const SmPort& port = node.ports[p];
  if (!port.known) return false;
  if (node.is_switch()) return p == 0;
  if (n == subnet.sm_node) return p == subnet.sm_port;
  return port.linked() && subnet.node(port.peer).path.size() + 1 == node.path.size();
}

}  // namespace

LightSweepReport LightSweep(Transactions& tx, const Subnet& subnet) {
  LightSweepReport report;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    if (node.is_switch()) {
      tx.Submit(MakeDrSmp(kMethodGet, kAttrSwitchInfo, 0, node.path), MadAddress{},
                [&report](const TxResult& r) {
                  if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
                    ++report.failures;
                    return;
                  }
                  mad::SwitchInfo si;
                  si.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
                  if (si.PortStateChange) ++report.state_changes;
                });
      continue;
    }
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      if (!Addressable(subnet, n, p)) continue;
      const uint8_t was_state = port.info.PortState;
      const bool was_sm = port.info.CapabilityMask & kCapIsSm;
      tx.Submit(MakeDrSmp(kMethodGet, kAttrPortInfo, p, node.path), MadAddress{},
                [&report, was_state, was_sm](const TxResult& r) {
                  if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
                    ++report.failures;
                    return;
                  }
                  mad::PortInfo pi;
                  pi.Unpack(SmpData(r.response));
                  if (pi.PortState != was_state) ++report.state_changes;
                  if ((pi.CapabilityMask & kCapIsSm) && !was_sm) ++report.new_sms;
                });
    }
  }
  if (!tx.Run()) ++report.failures;
  return report;
}

namespace {

MadBytes SmInfoRequest(uint8_t method, uint32_t modifier, const std::vector<uint8_t>& path,
                       const SmIdentity& self, uint64_t sm_key) {
  MadBytes mad = MakeDrSmp(method, kAttrSmInfo, modifier, path);
  PackSmInfo(self, sm_key, mad);
  return mad;
}

}  // namespace

std::vector<PeerSm> QueryPeerSms(Transactions& tx, const Subnet& subnet, uint64_t sm_key) {
  std::vector<PeerSm> found;
  std::vector<PeerSm> candidates;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    const SmNode& node = subnet.node(n);
    if (n == subnet.sm_node) continue;
    for (uint8_t p = 0; p <= node.num_ports; ++p) {
      if (!Addressable(subnet, n, p) || !(node.ports[p].info.CapabilityMask & kCapIsSm)) continue;
      candidates.push_back({n, p, node.path, {}});
    }
  }
  SmIdentity asking;
  for (PeerSm& c : candidates) {
    tx.Submit(SmInfoRequest(kMethodGet, 0, c.path, asking, sm_key), MadAddress{},
              [&found, c](const TxResult& r) {
                if (r.status != TxStatus::kOk || SmpStatus(r.response)) return;
                PeerSm peer = c;
                peer.info = ReadSmInfo(r.response);
                found.push_back(std::move(peer));
              });
  }
  tx.Run();
  return found;
}

std::optional<SmIdentity> GetSmInfo(Transactions& tx, const std::vector<uint8_t>& path,
                                    uint64_t sm_key) {
  std::optional<SmIdentity> out;
  tx.Submit(SmInfoRequest(kMethodGet, 0, path, SmIdentity{}, sm_key), MadAddress{},
            [&out](const TxResult& r) {
              if (r.status == TxStatus::kOk && !SmpStatus(r.response)) out = ReadSmInfo(r.response);
            });
  tx.Run();
  return out;
}

bool SetSmInfo(Transactions& tx, const std::vector<uint8_t>& path, uint32_t modifier,
               const SmIdentity& self, uint64_t sm_key) {
  bool ok = false;
  tx.Submit(SmInfoRequest(kMethodSet, modifier, path, self, sm_key), MadAddress{},
            [&ok](const TxResult& r) { ok = r.status == TxStatus::kOk && !SmpStatus(r.response); });
  tx.Run();
  return ok;
}

}  // namespace softib::sm
