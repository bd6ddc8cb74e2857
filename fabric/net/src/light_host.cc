#include "softib/fabric/light_host.h"

#include <chrono>
#include <cstring>

#include "softib/fabric/fabric_host.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/smp/directed_route.h"

namespace softib::fabric {

namespace {

bool IsResponse(const uint8_t* mad) { return (mad[3] & 0x80) != 0; }

// Traps, reports and SMInfo are for an SM above the port, which a light host does not have.
// (TrapRepress answers a trap of the port's SMA: the SMA takes it.)
bool ForTheSm(const uint8_t* mad) {
  const uint8_t method = mad[3];
  const uint16_t attribute = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  return method == mad::kSubnMgtTrap || method == mad::kSubnAdmReport ||
         attribute == mad::SMInfo::kAttributeId;
}

}  // namespace

class LightHost::InboundLink final : public hca::Link {
 public:
  InboundLink(LightHost* host, uint8_t port) : host_(host), port_(port) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    host_->Receive(port_, packet);
    packet.clear();  // the buffer goes back for the sender's next packet
    return packet;
  }

 private:
  LightHost* host_;
  uint8_t port_;
};

LightHost::LightHost(const hca::HcaConfig& config, uint16_t first_lid)
    : guid_(config.node_guid), hca_(config), plugs_(config.num_ports, nullptr) {
  for (uint8_t p = 1; p <= config.num_ports; ++p)
    hca_.port(p).lid = first_lid == 0 ? 0 : static_cast<uint16_t>(first_lid + p - 1);
  hca_.management_sink = [this](const hca::Hca::ManagementDatagram& d) {
    if (d.mad.size() < mad_.size()) return;  // not a whole MAD: nobody to give it to
    origin_ = d;
    origin_.mad = {};
    std::memcpy(mad_.data(), d.mad.data(), mad_.size());
    pending_ = true;
  };
}

void LightHost::Plug(uint8_t port, hca::Link* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  hca_.SetPortLink(port, out);
  plugs_.at(port - 1) = out;
}

bool LightHost::SetLinkUp(uint8_t port, bool up) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (port < 1 || port > plugs_.size() || plugs_[port - 1] == nullptr) return false;
  // Without a link the device's port is Down/Polling; a link back brings an SM-managed port
  // up in Init (hca::Hca::SetPortLink).
  hca_.SetPortLink(port, up ? plugs_[port - 1] : nullptr);
  return true;
}

std::shared_ptr<hca::Link> LightHost::Inbound(uint8_t port) {
  return std::make_shared<InboundLink>(this, port);
}

bool LightHost::LocalMad(uint8_t port, std::span<const uint8_t, 256> request,
                         std::span<uint8_t, 256> response) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (port < 1 || port > hca_.config().num_ports) return false;
  hca_.SetNow(FabricHost::Now());  // the M_Key lease period runs on the host's clock
  return hca_.ProcessLocalMad(port, request, response) == hca::LocalMadResult::kReply;
}

uint16_t LightHost::lid(uint8_t port) {
  std::lock_guard<std::mutex> lock(mutex_);
  return port < 1 || port > hca_.config().num_ports ? 0 : hca_.port(port).lid;
}

void LightHost::SetAbove(Above above) {
  std::lock_guard<std::mutex> lock(mutex_);
  above_ = std::move(above);
}

bool LightHost::SendFromAbove(uint8_t port, uint32_t qpn, hca::Hca::ManagementAddress to,
                              std::span<const uint8_t> mad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (port < 1 || port > hca_.config().num_ports || mad.size() < 24) return false;
  std::array<uint8_t, 256> smp{};
  if (qpn == hca::kSmiQpn && mad[1] == mad::kSubnMgtDRClass) {
    // The SMI's send side (as the AL's smi.cc): HopCount 0 never leaves the port.
    if (mad.size() != smp.size() || mad[7] == 0) return false;
    std::memcpy(smp.data(), mad.data(), smp.size());
    if (smp::PrepareSend(smp, {false, hca_.config().num_ports}, port) != smp::Drop::kNone)
      return false;
    if ((smp[32] << 8 | smp[33]) == smp::kPermissiveLid) to.dlid = smp::kPermissiveLid;
    mad = smp;
  }
  if (qpn == hca::kSmiQpn) to.remote_qpn = 0, to.remote_qkey = 0;
  hca_.SetNow(FabricHost::Now());
  return hca_.SendManagement(port, qpn, to, mad);
}

void LightHost::Receive(uint8_t port, std::span<const uint8_t> packet) {
  std::lock_guard<std::mutex> lock(mutex_);
  hca_.Receive(port, packet);
  if (pending_) Answer();
}

void LightHost::Answer() {
  pending_ = false;
  const uint8_t port = origin_.port;
  const uint8_t* m = mad_.data();
  const smp::NodeShape shape{false, hca_.config().num_ports};
  hca::Hca::ManagementAddress to;
  to.dlid = origin_.slid;
  to.sl = origin_.sl;
  to.pkey_index = origin_.pkey_index;
  std::array<uint8_t, 256> response{};
  if (origin_.qpn == hca::kSmiQpn) {
    // The SMI (the Access Layer's smi.cc does the same for a full node): the receive-side
    // directed-route rules, then the SMA, then the response back along the return path.
    const bool directed = m[1] == mad::kSubnMgtDRClass;
    if (directed && smp::OnArrival(mad_, shape, port).verdict != smp::Verdict::kLocal) return;
    if (IsResponse(m) || ForTheSm(m) || (!directed && m[1] != mad::kSubnMgtClass)) {
      if (above_) above_(origin_, mad_);
      return;
    }
    hca_.SetNow(
        FabricHost::Now());  // for the SMA's M_Key lease; an SM's answers above need no clock
    if (hca_.ProcessLocalMad(port, mad_, response) != hca::LocalMadResult::kReply) return;
    if (directed) {
      const smp::Decision d = smp::Respond(response, shape, origin_.slid);
      if (d.verdict == smp::Verdict::kForward) {
        to.dlid = smp::kPermissiveLid;
      } else if (d.verdict == smp::Verdict::kForwardByLid) {
        to.dlid = d.lid;
      } else {
        return;
      }
    }
    to.remote_qpn = 0;
    (void)hca_.SendManagement(port, hca::kSmiQpn, to, response);
    return;
  }
  // The GSI's local agent: the PMA.
  if (m[1] != mad::kPerfMgtClass || IsResponse(m)) {
    if (above_) above_(origin_, mad_);
    return;
  }
  hca_.SetNow(FabricHost::Now());
  if (hca_.ProcessLocalMad(port, mad_, response) != hca::LocalMadResult::kReply) return;
  to.remote_qpn = origin_.src_qp;
  to.remote_qkey = hca::kGsiQkey;
  (void)hca_.SendManagement(port, hca::kGsiQpn, to, response);
}

}  // namespace softib::fabric
