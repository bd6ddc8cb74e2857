// A light host: a CA of a large fabric that is only its ports. It holds the software HCA's
// device core (hca::Hca: the ports' state machine, LID/LMC/SM LID, M_Key, SMA, PMA and
// counters) and nothing above it — no emulated kernel, Access Layer, QPs or threads — so
// ten thousand of them fit in one softibd. It answers what a full node's CA answers with
// the same code: SMPs on QP0 after the SMI's directed-route rules (runtime/smp, as the
// Access Layer's SMI applies them) and PerfMgt MADs on QP1; anything else is dropped and
// counted as on a port whose QP does not exist.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "hca/device/hca.h"

namespace softib::fabric {

class LightHost {
 public:
  // `first_lid` 0: the ports wait in Init for an SM; otherwise port p has first_lid + p - 1
  // and is Active once cabled (as a full node's CA, hca::HcaAddCa).
  LightHost(const hca::HcaConfig& config, uint16_t first_lid);
  LightHost(const LightHost&) = delete;
  LightHost& operator=(const LightHost&) = delete;

  // Cables port `port`: it transmits into `out` (nullptr unplugs it).
  void Plug(uint8_t port, hca::Link* out);
  // The plugged cable's link went down (the port goes Down, PortPhysicalState Polling) or
  // trained again (Init for an SM, or Active with its LID when no SM ever set it up), as a
  // full node's port (hca::HcaSetExternalLinkUp). False: no such port or not plugged.
  bool SetLinkUp(uint8_t port, bool up);
  // What the fabric delivers to port `port` (any thread).
  std::shared_ptr<hca::Link> Inbound(uint8_t port);
  // The port's own SMA/PMA on one MAD, as a full node's LocalMad verb: false when they
  // give no answer (an M_Key violation, a response, not their class).
  bool LocalMad(uint8_t port, std::span<const uint8_t, 256> request,
                std::span<uint8_t, 256> response);
  uint64_t guid() const { return guid_; }
  // The LID port `port` has now (0 before an SM gives it one).
  uint16_t lid(uint8_t port);

  // An SM above this host's ports (softibd --sm internal), as the Access Layer's MAD
  // services sit above a full node's SMI and GSI: it gets every MAD the ports' agents do
  // not answer — SMP responses and what is for an SM (traps, SMInfo) after the SMI's
  // receive-side rules, and on QP1 anything but a PerfMgt request. `above` runs on the
  // fabric's thread with the host's lock held: it keeps the MAD and returns at once.
  using Above =
      std::function<void(const hca::Hca::ManagementDatagram& origin, std::span<const uint8_t> mad)>;
  void SetAbove(Above above);
  // Sends `mad` from QP0 or QP1 (`qpn`) of `port` for the SM above: a directed-route SMP
  // gets the SMI's send-side rules first (HopPointer, egress port, permissive DLID). False
  // when the rules or the device drop it. HopCount-0 SMPs are LocalMad's, not this.
  bool SendFromAbove(uint8_t port, uint32_t qpn, hca::Hca::ManagementAddress to,
                     std::span<const uint8_t> mad);

 private:
  class InboundLink;
  void Receive(uint8_t port, std::span<const uint8_t> packet);
  // The SMI's and GSI's answer to the MAD Receive kept (lock held).
  void Answer();

  const uint64_t guid_;
  std::mutex mutex_;  // the fabric's thread delivers, an ibsim client asks LocalMad
  hca::Hca hca_;
  std::vector<hca::Link*> plugs_;  // per port - 1: what Plug gave, kept while the link is down
  // The MAD the device handed over during Receive, answered right after it.
  bool pending_ = false;
  hca::Hca::ManagementDatagram origin_;
  std::array<uint8_t, 256> mad_{};
  Above above_;
};

}  // namespace softib::fabric
