// The channel interface (CI): the contract between the Access Layer, which calls down into
// it, and an HCA driver, which implements it (WinOFED's ib_ci.h / ci_interface_t, as a C++
// interface). It sits below both: the AL and the bus driver include this header alone and
// never the concrete driver (hca/driver); only the node stack (runtime/stack) knows which
// driver implements it (docs/architecture.md). The AL obtains a CA's interface by an
// internal IOCTL on the CA's device (the IRP_MN_QUERY_INTERFACE of WDM) and holds a
// reference on it for as long as it uses the CA.
//
// Every verb is serialized by the CA's spin lock (the device core is not thread-safe),
// callable at IRQL <= DISPATCH and never blocks. After a surprise removal every verb
// answers CA_REMOVED, except the releases (Free*/Destroy*/Deregister*), which succeed so
// that the layers above can tear down what they hold.
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

// Whose memory a region is, and how the addresses it is registered at reach that memory.
struct MemoryOwner {
  int32_t pid = 0;  // the user process; 0: kernel memory (this process's, by memcpy)
  // Added to a registered address to reach the process's own (process_vm_readv/writev): 0
  // natively, qemu's guest base for a 32-bit process under qemu-i386 (GetFileAl).
  uint64_t address_offset = 0;
};

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

  // --- CA ----------------------------------------------------------------------------
  // `ports` gets min(ports.size(), num_ports) entries.
  virtual Status QueryCa(abi::CaAttributes* attributes, std::span<abi::PortAttributes> ports) = 0;
  // Up to out.size() entries from `start`; *count: how many. INVALID_INDEX past the table.
  virtual Status QueryGidTable(uint8_t port, uint32_t start, std::span<abi::Gid> out,
                               uint32_t* count) = 0;
  virtual Status QueryPkeyTable(uint8_t port, uint32_t start, std::span<uint16_t> out,
                                uint32_t* count) = 0;
  virtual Status ModifyCa(uint8_t port, abi::ModifyCaFlags flags, abi::PortCapabilities cap_set,
                          abi::PortCapabilities cap_clear, uint8_t init_type,
                          uint64_t system_image_guid) = 0;

  // The port's own management agents (its SMA and PMA, the HCA's "firmware") answer a MAD
  // as if it had arrived on `port`, without it going on the wire (IBAL ib_local_mad,
  // mlx4 MAD_IFC): SubnGet/SubnSet LID-routed and directed-route with M_Key checks,
  // PerfMgt Get/Set. SUCCESS: `response` holds the GetResp (its MAD status says whether
  // the agent accepted the request). INVALID_PERMISSION: the agent consumed the MAD
  // without an answer (an M_Key violation, a response or trap MAD). INVALID_SETTING: no
  // agent takes it (base version, management class). INVALID_PORT, CA_REMOVED.
  virtual Status LocalMad(uint8_t port, std::span<const uint8_t, 256> request,
                          std::span<uint8_t, 256> response) = 0;

  // --- PD, AH, MR ------------------------------------------------------------------------
  virtual Status AllocPd(uint32_t* pd) = 0;
  virtual Status FreePd(uint32_t pd) = 0;
  virtual Status CreateAh(uint32_t pd, const abi::AddressVector& av, uint32_t* ah) = 0;
  virtual Status DestroyAh(uint32_t ah) = 0;
  // `owner`: whose memory [vaddr, vaddr+length) is. Keys and bounds stay in vaddr; the
  // HCA moves bytes at vaddr + owner.address_offset (INVALID_PARAMETER if that wraps).
  virtual Status RegisterMr(uint32_t pd, uint64_t vaddr, uint64_t length, abi::AccessFlags access,
                            MemoryOwner owner, uint32_t* key) = 0;
  virtual Status DeregisterMr(uint32_t key) = 0;

  // --- MR reregistration -----------------------------------------------------------------
  // Changes what `what` selects of region `key` in place (TRANSLATION: vaddr/length, in the
  // memory of `owner` as RegisterMr; PD: moves it to `pd`; ACCESS: its rights): the same
  // table index, a new key (*new_key), the old key dead at once. RESOURCE_BUSY while
  // windows are bound to it; INVALID_MR_HANDLE, INVALID_PD_HANDLE, INVALID_PERMISSION,
  // INVALID_PARAMETER (no flag, a zero or wrapping range); on any error nothing changes.
  virtual Status ReregisterMr(uint32_t key, abi::MrReregFlags what, uint32_t pd, uint64_t vaddr,
                              uint64_t length, abi::AccessFlags access, MemoryOwner owner,
                              uint32_t* new_key) = 0;

  // --- CQ --------------------------------------------------------------------------------
  virtual Status CreateCq(uint32_t size, uint32_t* cq, uint32_t* actual_size) = 0;
  virtual Status ResizeCq(uint32_t cq, uint32_t* size) = 0;
  virtual Status QueryCq(uint32_t cq, uint32_t* size) = 0;
  virtual Status DestroyCq(uint32_t cq) = 0;
  // NOT_FOUND when empty (IBAL ib_poll_cq).
  virtual Status PollCq(uint32_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* count) = 0;
  virtual Status PeekCq(uint32_t cq, uint32_t* count) = 0;
  virtual Status RearmCq(uint32_t cq, abi::CqNotify notify) = 0;

  // --- QP --------------------------------------------------------------------------------
  // `srq` 0: the QP has its own receive queue.
  virtual Status CreateQp(uint32_t pd, const abi::QpCreateParams& params, uint32_t send_cq,
                          uint32_t recv_cq, uint32_t srq, uint32_t* qpn, abi::QpCaps* caps) = 0;
  // QP0/QP1 of a port: *qp is the handle every other call takes, *qp_num 0 or 1.
  virtual Status CreateSpecialQp(uint32_t pd, uint8_t port, const abi::QpCreateParams& params,
                                 uint32_t send_cq, uint32_t recv_cq, uint32_t* qp, uint32_t* qp_num,
                                 abi::QpCaps* caps) = 0;
  virtual Status ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attributes) = 0;
  virtual Status QueryQp(uint32_t qpn, abi::QpAttributes* attributes) = 0;
  virtual Status DestroyQp(uint32_t qpn) = 0;
  // UD requests carry the AH number in av.value. Stops at the first refused request.
  virtual Status PostSend(uint32_t qpn, std::span<const abi::SendWorkRequest> wrs,
                          uint32_t* num_posted) = 0;
  virtual Status PostRecv(uint32_t qpn, std::span<const abi::RecvWorkRequest> wrs,
                          uint32_t* num_posted) = 0;

  // --- SRQ, MW, multicast ------------------------------------------------------------------
  virtual Status CreateSrq(uint32_t pd, const abi::SrqAttributes& attributes, uint32_t* srq,
                           abi::SrqAttributes* granted) = 0;
  virtual Status ModifySrq(uint32_t srq, abi::SrqAttrMask mask,
                           const abi::SrqAttributes& attributes) = 0;
  virtual Status QuerySrq(uint32_t srq, abi::SrqAttributes* attributes) = 0;
  virtual Status DestroySrq(uint32_t srq) = 0;
  virtual Status PostSrqRecv(uint32_t srq, std::span<const abi::RecvWorkRequest> wrs,
                             uint32_t* num_posted) = 0;
  virtual Status AllocMw(uint32_t pd, abi::MwType type, uint32_t* mw, uint32_t* rkey) = 0;
  virtual Status QueryMw(uint32_t mw, abi::MwType* type, uint32_t* rkey) = 0;
  virtual Status DestroyMw(uint32_t mw) = 0;
  virtual Status BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                        uint32_t* rkey) = 0;
  virtual Status AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) = 0;
  virtual Status DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) = 0;

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

  // --- speed path: address-vector translation ------------------------------------------------
  // A UD (GSI, SMI) work request from a user process's send ring names its address by the
  // process's AV handle, which only the AL can resolve; the AL therefore tells the CA, when
  // it creates an AV (and when ModifyAv replaces its AH), which AH the handle names. The
  // translation domain is the AH's PD: the ring consumer looks av.value up in the sending
  // QP's PD, so a handle of another PD (or another process) names nothing there. The name
  // moves with a rebind (the old AH loses it) and dies with DestroyAh, so a destroyed or
  // stale handle names nothing. A work request whose handle names nothing completes
  // LOCAL_QP_OP_ERR (vendor_err INVALID_AV_HANDLE) and takes the QP to Error.
  // INVALID_AV_HANDLE (no such AH), INVALID_PARAMETER (handle 0), CA_REMOVED.
  virtual Status BindAhHandle(uint32_t ah, uint64_t handle) = 0;

 protected:
  virtual ~CaInterface() = default;
};

}  // namespace softib::ci
