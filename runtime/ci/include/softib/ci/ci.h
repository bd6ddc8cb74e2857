// The channel interface (CI): the contract between the Access Layer, which calls down into
// it, and an HCA driver, which implements it (WinOFED's ib_ci.h / ci_interface_t, as a C++
// interface). It sits below both: the AL and the bus driver include this header alone and
// never the concrete driver (hca/driver); only the node stack (runtime/stack) knows which
// driver implements it (docs/architecture.md). The AL obtains a CA's interface by an
// internal IOCTL on the CA's device (the IRP_MN_QUERY_INTERFACE of WDM) and holds a
// reference on it for as long as it uses the CA.
//
// Since issue 17 this interface is the speed path only (post, poll, peek, rearm, bind MW,
// the ring mappings) and the CA's identity; every control verb is a CI IRP (idl/ci.idl,
// the generated builders of kernel/hca/ci_irp.h) sent to the CA's device.
//
// Every call is serialized by the CA's spin lock (the device core is not thread-safe),
// callable at IRQL <= DISPATCH (the ring maps: PASSIVE) and never blocks. After a surprise
// removal every call answers CA_REMOVED.
//
// Upward news never calls into the AL: the AL keeps kIoctlCiWaitEvents IRPs pending on the
// CA device and the driver completes them with batches of event records (an inverted call
// inside the kernel).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/types.h"
#include "softib/kernel/status.h"

namespace softib::ci {

// The PnP interface class the HCA driver enables on each CA device.
inline constexpr char kCiInterfaceClass[] = "softib.ci";

// "hca-<16 lowercase hex digits of the node GUID>" (host-order GUID).
inline std::string CaDeviceName(uint64_t node_guid) {
  char name[32];
  std::snprintf(name, sizeof(name), "hca-%016llx", static_cast<unsigned long long>(node_guid));
  return name;
}

// Internal device-control codes of the CA device (METHOD_BUFFERED, kernel callers only).
// Query: output CiQueryInterfaceOut (the pointer is referenced for the caller).
inline constexpr uint32_t kIoctlCiQueryInterface = 0x0022E000;
// Wait: output CaEventBatch; pends until the CA has news. Completed with CA_REMOVED once
// the CA is gone, CANCELED when cancelled.
inline constexpr uint32_t kIoctlCiWaitEvents = 0x0022E004;

enum class CaEventKind : uint32_t {
  kCompletion = 1,  // `object`: CQ number whose arming fired
  kAsync = 2,       // `type` about `object` (CQ, QP, SRQ or port number)
};

struct CaEvent {
  CaEventKind kind;
  abi::AsyncEventType type;
  uint32_t object;
  uint32_t reserved;
};

inline constexpr uint32_t kMaxEventsPerBatch = 32;
struct CaEventBatch {
  uint32_t count;
  uint32_t reserved;
  CaEvent events[kMaxEventsPerBatch];
};

class CaInterface;
struct CiQueryInterfaceOut {
  CaInterface* ci;
};

class CaInterface {
 public:
  using Status = kernel::Status;

  // The interface reference (InterfaceReference / InterfaceDereference).
  virtual void Reference() = 0;
  virtual void Dereference() = 0;

  virtual uint64_t node_guid() const = 0;  // host order
  virtual uint8_t num_ports() const = 0;
  virtual bool removed() const = 0;

  // --- speed path: posting, polling, arming (IBAL's speed-path verbs) ----------------------
  // The control verbs (open/query/modify CA and ports, PD, AH, CQ, QP, SRQ, MR/MW,
  // multicast, local MAD) are not here: they are CI IRPs (idl/ci.idl) to the CA's device,
  // whose driver learns from each IRP's RequestorMode and file whose memory a registration
  // names (issue 17).
  // NOT_FOUND when empty (IBAL ib_poll_cq).
  virtual Status PollCq(uint32_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* count) = 0;
  virtual Status PeekCq(uint32_t cq, uint32_t* count) = 0;
  virtual Status RearmCq(uint32_t cq, abi::CqNotify notify) = 0;
  // UD requests carry the AH number in av.value. Stops at the first refused request.
  virtual Status PostSend(uint32_t qpn, std::span<const abi::SendWorkRequest> wrs,
                          uint32_t* num_posted) = 0;
  virtual Status PostRecv(uint32_t qpn, std::span<const abi::RecvWorkRequest> wrs,
                          uint32_t* num_posted) = 0;
  virtual Status PostSrqRecv(uint32_t srq, std::span<const abi::RecvWorkRequest> wrs,
                             uint32_t* num_posted) = 0;
  virtual Status BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                        uint32_t* rkey) = 0;

  // --- speed path: shared-memory rings (hca/rings, served by the driver's ring service) ---
  // Maps the rings of a user process's CQ, QP or SRQ. The first call creates the object's
  // shared memory (a sealed memfd laid out and formatted by the CA); a later call answers
  // with the same memory and geometry again (the rings' indices live in it, so a second
  // mapping continues where the first one is). *fd is a new descriptor of that memory that
  // the caller owns (it attaches it to the reply and closes it); *shm_id names the memory
  // within the CA. PASSIVE (creates memory).
  //
  // From the first map on, the CA itself consumes the QP's/SRQ's rings (a passive thread
  // per driver, and inline before a packet reaches the QP) and delivers every completion
  // of the CQ, flushes included, to the CQ ring; completion events follow the ring's arm
  // line; PollCq/PeekCq through the CI then find the CQ empty (its completions are in the
  // ring). Destroying the object (or the CA's removal) shuts the rings down (RingError
  // SHUTDOWN) and unmaps the CA's side.
  // INVALID_CQ_HANDLE / INVALID_QP_HANDLE / INVALID_SRQ_HANDLE, INSUFFICIENT_RESOURCES (no
  // memory), CA_REMOVED.
  virtual Status MapCqRing(uint32_t cq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) = 0;
  // `recv_ring` is empty (num_entries 0) for a QP that receives from an SRQ.
  virtual Status MapQpRings(uint32_t qpn, abi::RingMapping* send_ring, abi::RingMapping* recv_ring,
                            uint32_t* shm_id, int* fd) = 0;
  virtual Status MapSrqRing(uint32_t srq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) = 0;

 protected:
  virtual ~CaInterface() = default;
};

}  // namespace softib::ci
