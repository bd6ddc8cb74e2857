// The far end of the harness's exchanges: a kernel client of the node's second CA, cabled back
// to back with the first one, which every caller of the harness uses. It is the remote side of
// CM connections, so that a caller's endpoint reaches the state a CM verb needs (a REQ received,
// a connection established, a DREQ or a LAP received, ...), and it hosts the harness's SA
// (SaResponder) on that CA's port.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "softib/abi/types.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"

namespace softib::kernel {
struct IB_CA;
struct IB_PD;
struct IB_CQ;
struct IB_QP;
}  // namespace softib::kernel

namespace softib::kernel {
class IbAl;
struct Irp;
}  // namespace softib::kernel

namespace softib::conformance {

// An SA PathRecord (wire format) from LID `slid` to `dlid`: subnet-local, P_Key 0xFFFF, MTU
// 1024, reversible.
std::array<uint8_t, 64> HarnessPath(uint16_t slid, uint16_t dlid);
// REQ and REP parameters of the harness's connections.
abi::CmReqParams HarnessReqParams(uint64_t service_id, uint16_t slid, uint16_t dlid);
abi::CmRepParams HarnessRepParams();
// A service ID no other listen of the node uses (host order).
uint64_t FreshServiceId();
// A kernel client's direct call `call(irp)` with an IRP of its own, waited for: its status
// (a pended call's is the IRP's; one still pending after `limit` is cancelled: CANCELED).
abi::Status CallWithIrp(kernel::Node* node, const std::function<abi::Status(kernel::Irp*)>& call,
                        std::chrono::nanoseconds limit = std::chrono::seconds(10));

class FarEnd {
 public:
  // `ca_guid` (host order): the CA it opens; `client`: the kernel client's device object.
  FarEnd(kernel::Node* node, kernel::DeviceObject* client, uint64_t ca_guid)
      : node_(node), client_(client), ca_guid_(ca_guid) {}
  ~FarEnd() { Close(); }
  FarEnd(const FarEnd&) = delete;
  FarEnd& operator=(const FarEnd&) = delete;

  // Opens the AL and the CA (a PD and a CQ for its QPs) unless open; false on failure.
  bool Open();
  // Releases everything the client made (its endpoints end as a closing file's do).
  void Close();
  bool open() const { return al_ != nullptr; }

  kernel::IbAl* al() const { return al_; }
  // Handles of its CA, PD and CQ, which it made through the kernel object API
  // (kernel/<module>_ib.h) and holds as public structures.
  uint64_t ca() const;
  uint64_t pd() const;
  uint64_t cq() const;
  uint16_t lid() const { return lid_; }
  uint64_t port_guid_be() const { return port_guid_be_; }

  // The CM's remote side. Each returns false (saying why on stderr) when the step fails;
  // `cep` receives the new endpoint.
  bool Listen(uint64_t service_id, uint64_t* cep);
  // A REQ to `dlid` for `service_id`, with a new RC QP in INIT.
  bool SendReq(uint64_t service_id, uint16_t dlid, uint64_t* cep);
  // A REP on a REQ-received endpoint, with a new RC QP in INIT.
  bool SendRep(uint64_t cep);
  bool SendDreq(uint64_t cep);
  // A LAP proposing the path to `dlid` as the alternate.
  bool SendLap(uint64_t cep, uint16_t dlid);
  bool SendSidrReq(uint64_t service_id, uint16_t dlid, uint64_t* cep);
  // Waits (10 s at most) for the next event of `cep` and checks its type; `new_cep`, when
  // given, receives the endpoint a REQ or SIDR_REQ on a listen created.
  bool Expect(uint64_t cep, abi::CepEventType type, uint64_t* new_cep = nullptr);

 private:
  uint64_t InitQp();  // a new RC QP moved to INIT on port 1; 0 on failure

  kernel::Node* const node_;
  kernel::DeviceObject* const client_;
  const uint64_t ca_guid_;
  kernel::IbAl* al_ = nullptr;
  kernel::IB_CA* ca_ = nullptr;
  kernel::IB_PD* pd_ = nullptr;
  kernel::IB_CQ* cq_ = nullptr;
  std::vector<kernel::IB_QP*> qps_;
  uint16_t lid_ = 0;
  uint64_t port_guid_be_ = 0;
};

}  // namespace softib::conformance
