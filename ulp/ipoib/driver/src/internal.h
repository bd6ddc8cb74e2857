// The IPoIB driver's internals (ulp/ipoib/driver): the driver and its FDOs (driver.cc), an
// interface's set-up and teardown (interface.cc), the verb IRPs it sends to its PDO
// (pdo_call.cc), transmit (transmit.cc), receive (receive.cc), multicast groups
// (multicast.cc), port events (events.cc), ATS records (ats.cc) and IBAT (ibat.cc).
//
// Locking: one spin lock per interface (Interface::lock) guards everything that changes
// after set-up (neighbours, paths, groups, buffers' free list, counters, state). The face
// is called only with the lock released, but for StopQueue/WakeQueue (flags, told under
// the lock so that they reach the face in the order they were decided: flow.cc). Control-path verbs
// are IRPs sent to the interface's PDO with completion routines (never waited for once the
// interface is up); the speed path (post, poll, rearm) calls the AL directly.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/types.h"
#include "softib/abi/verbs_al.h"
#include "softib/ipoib/ipoib.h"
#include "softib/kernel/device.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/timer.h"

namespace softib::kernel {
class IbAl;
struct PnpRegistration;
}  // namespace softib::kernel

namespace softib::ipoib {

inline constexpr uint32_t kDefaultQkey = 0x00000B1B;  // the broadcast group's when we create it
inline constexpr uint32_t kSlotBytes = 4352;          // GRH + a 4 KiB IB MTU + room
// The UD rings (HCA limits: 16384 WRs per queue, 65536 CQEs): deep enough that a burst the
// host's stack sends at once fits the send ring (and the face is paused when it does not,
// flow.cc) and a burst from the fabric finds posted receives (the HCA drops a UD packet
// that finds none, silently to us). Every slot is in the one registration made at set-up.
inline constexpr uint32_t kRxSlots = 512;
inline constexpr uint32_t kTxSlots = 256;
inline constexpr uint32_t kTxFrameOffset = 64;     // where a host frame is copied in its slot
inline constexpr size_t kMaxQueuedPerTarget = 16;  // frames waiting for a path or a join
inline constexpr uint64_t kSendWrBit = uint64_t{1} << 63;
inline constexpr uint64_t kAtsPending = ~uint64_t{0};
inline constexpr auto kSendOnlyIdle = std::chrono::seconds(60);

// One IPoIB PDO the driver attached to (an FDO over it).
struct PortFdo {
  Driver* driver = nullptr;
  kernel::DeviceObject* fdo = nullptr;
  kernel::DeviceObject* pdo = nullptr;  // referenced
  uint64_t ca_guid = 0;                 // host order
  uint8_t port = 0;
  bool removed = false;  // its REMOVE came (interfaces on it are shut down)
};

class Driver {
 public:
  kernel::Node* node = nullptr;
  kernel::DriverObject* object = nullptr;
  kernel::PnpRegistration* registration = nullptr;
  std::mutex mutex;  // ports, interfaces (PASSIVE only)
  std::vector<PortFdo*> ports;
  std::vector<Interface*> interfaces;
  // IBAT (ibat.cc): the single-port interfaces (LBFO members, not teams) in creation order,
  // readable at DISPATCH. Lock order: ibat_lock, then an interface's lock.
  kernel::KSpinLock ibat_lock;
  std::vector<Interface*> ibat_interfaces;      // under ibat_lock
  kernel::DeviceObject* ibat_device = nullptr;  // "ibat" (ibat_device.cc)
};

// The IBAT device (ibat_device.cc): created at load, deleted at unload; its IRPs.
kernel::Status CreateIbatDevice(Driver* driver);
void DeleteIbatDevice(Driver* driver);
kernel::Status DispatchIbatDevice(kernel::DeviceObject* device, kernel::Irp* irp);

// A path to a unicast GID: its address vector once resolved, the frames waiting for it.
struct Path {
  enum class State { kIdle, kResolving, kReady, kFailed } state = State::kIdle;
  uint64_t av = 0;
  uint16_t dlid = 0;
  std::deque<std::pair<uint32_t, std::vector<uint8_t>>> queued;  // (QPN, IPoIB packet)
  std::array<uint8_t, 64> record{};  // kReady: the SA's PathRecord as on the wire (IBAT)
};

// ---- ibat.cc: IBAT (softib/ipoib/ibat.h) ----
inline constexpr size_t kIbatMaxEntries = 256;  // per interface; the least recently used goes
inline constexpr uint8_t kIbatTries = 3;        // ARP/ND requests before TIMEOUT
// A remote IP address: its hardware address once an ARP or ND message named it, or the
// requests the driver sent for it.
struct IbatEntry {
  bool known = false;  // `hw` and `mac` learnt
  HwAddr hw;
  Mac mac{};
  bool path_asked = false;  // IBAT started the path query of hw.gid
  uint8_t tries = 0;        // unknown: requests sent
  bool timed_out = false;   // unknown: every try went unanswered
  std::chrono::steady_clock::time_point last_sent{};
  std::array<uint8_t, 16> source{};  // unknown: the address the requests come from
  uint64_t touched = 0;              // LRU order
};
struct IbatCache {
  std::map<std::array<uint8_t, 17>, IbatEntry> entries;  // (v6 flag, address)
  uint64_t clock = 0;
  bool attached = false;  // in Driver::ibat_interfaces
  bool timer_armed = false;
  kernel::Ktimer timer{};  // the retries (ibat_retry_interval)
  kernel::Kdpc dpc{};
};

// A multicast group the interface joined or is joining.
struct Group {
  enum class State { kJoining, kJoined, kFailed, kLeaving } state = State::kJoining;
  Gid mgid{};
  bool full = false;       // the host listens (or the broadcast group): full member
  bool broadcast = false;  // the interface's broadcast group
  uint8_t join_state = 0;  // what the join asked (1 full, 8 send-only full, 4 send-only non-member)
  uint64_t join = 0;       // McastJoin handle
  uint64_t av = 0;
  uint16_t mlid = 0;
  uint32_t qkey = 0;
  uint32_t generation = 0;  // bumped at each (re)join: stale answers are ignored
  std::chrono::steady_clock::time_point last_used{};
  std::deque<std::vector<uint8_t>> queued;  // IPoIB packets waiting for the join
};

class Lbfo;

// ---- flow.cc: the send ring's back-pressure to the face ----
// Frames that found the send ring (UD or RC) full wait here, in order, and go when send
// completions free slots; meanwhile the face is told to stop (EthernetFace::StopQueue) and
// told to wake once they are all gone. Only beyond kMaxHeldFrames (a face that does not
// stop) is a frame dropped (Drop::kSendQueueFull).
inline constexpr size_t kMaxHeldFrames = 128;
struct TxFlow {
  std::deque<std::vector<uint8_t>> held;  // host frames, oldest first
  bool draining = false;                  // SendHeldFrames is resending one
  bool again = false;                     // a DPC found it draining: the drainer retries
  bool face_stopped = false;              // the face was told StopQueue, not yet WakeQueue
  std::atomic<bool> pending{false};       // `held` non-empty (read without the lock)
  uint64_t requeued = 0;                  // resent frames that found the ring full again
};

// ---- cm.cc: connected mode (RFC 4755) ----
inline constexpr uint64_t kCmWrBit = uint64_t{1} << 62;  // an RC receive or send (cm.cc)
inline constexpr uint64_t kCmServiceIdBase = 0x1000000000000000ull;
inline constexpr uint32_t kCmMtu = 65520;              // the interface's MTU
inline constexpr uint32_t kCmSlotBytes = 65536 + 128;  // GRH room + 65524 + slack
inline constexpr uint32_t kCmRxSlots = 32, kCmTxSlots = 32;
struct CmConnection;
struct CmState;  // cm.cc

class Interface {
 public:
  Driver* driver = nullptr;
  // LBFO (lbfo.cc): a team's interface has `lbfo` (no QP of its own: two member interfaces,
  // one per port, do the work); a member has `team`. Both null for a plain interface.
  Lbfo* lbfo = nullptr;
  Interface* team = nullptr;
  HwAddr lbfo_sibling{};  // lock: a member's view of the other member's address (lbfo.cc)
  PortFdo* port = nullptr;
  EthernetFace* face = nullptr;
  InterfaceConfig config;
  kernel::Node* node = nullptr;
  kernel::DeviceObject* pdo = nullptr;
  kernel::IbAl* al = nullptr;
  kernel::FileObject* file = nullptr;
  uint64_t al_handle = 0;

  // Verb handles (set-up; constant afterwards).
  uint64_t ca = 0, pd = 0, cq = 0, qp = 0, mr = 0;
  uint32_t lkey = 0;
  uint16_t pkey_index = 0;
  std::vector<uint8_t> memory;  // every buffer: kRxSlots receive then kTxSlots send slots
  uint8_t* rx_base = nullptr;
  uint8_t* tx_base = nullptr;

  kernel::KSpinLock lock;
  // ---- under `lock` ----
  LocalIdentity local;
  uint64_t port_guid_be = 0;
  uint64_t subnet_prefix_be = 0;
  uint16_t lid = 0;
  uint32_t ib_mtu = 0;  // bytes
  uint32_t bcast_qkey = kDefaultQkey;
  bool carrier = false;
  uint32_t face_mtu = 0;  // the MTU the face was last told (InterfaceMtu at creation)
  bool port_up = true;
  bool stopping = false;          // shut down (destroy, CA removal): no new IRPs, frames dropped
  std::atomic<bool> stop{false};  // `stopping`, readable without the lock (Stopping())
  bool shut_down = false;
  NeighbourTable neighbours;
  std::map<Gid, Path> paths;
  std::map<Gid, Group> groups;
  std::vector<uint32_t> tx_free;
  TxFlow flow;  // flow.cc
  Counters counters;
  std::vector<IpAddr> addresses;  // SetAddresses
  // ATS: address (17 bytes: v6 flag, address) → SaReg handle; 0 not registered (yet),
  // kAtsPending while the SA is asked.
  std::map<std::vector<uint8_t>, uint64_t> ats;
  uint32_t generation = 0;  // bumped at each port change
  IbatCache ibat;           // ibat.cc (its timer and DPC: ibat.cc's)

  // IRPs in flight and work queued (completion routines, DPCs): Shutdown waits for 0.
  std::atomic<int64_t> outstanding{0};
  kernel::KEvent idle{kernel::EventType::kNotification};

  // Receive: the CQ's event IRP and the DPC that polls.
  kernel::Kdpc cq_dpc{};
  abi::GetCompletionEventOut cq_event{};
  // Port events: the PnP registration and its event IRP.
  uint64_t pnp_reg = 0;
  bool pnp_settled = false;  // REG_COMPLETE seen: events from then on are news
  abi::GetPnpEventOut pnp_event{};
  // Ageing of send-only groups.
  kernel::Ktimer age_timer{};
  kernel::Kdpc age_dpc{};

  // Connected mode (cm.cc): null in datagram mode.
  CmState* cm = nullptr;

  void Hold() { outstanding.fetch_add(1); }
  void Release() {
    if (outstanding.fetch_sub(1) == 1) kernel::KeSetEvent(&idle);
  }
};

// ---- pdo_call.cc: verb IRPs sent to the interface's PDO ----
// Sends `irp` (built for the PDO with the interface's file) and calls `done(status,
// information)` from its completion routine (<= DISPATCH) after copying up to
// `output_length` bytes of the answer to `output`. The IRP is freed there. The interface
// is held until `done` returned. A null `irp` calls done(INSUFFICIENT_RESOURCES) at once.
using VerbDone = std::function<void(kernel::Status status, uint64_t information)>;
void SendVerb(Interface* i, kernel::Irp* irp, void* output, uint32_t output_length, VerbDone done);
// True when no new control-path IRP may be sent (shutting down).
bool Stopping(Interface* i);

// ---- interface.cc ----
void ShutdownInterface(Interface* i);  // PASSIVE; idempotent
void SetCarrier(Interface* i, bool up);
uint32_t MtuBytes(abi::PathMtu mtu);

// ---- transmit.cc ----
// Posts an IPoIB packet (already translated) on the UD QP. Under `lock`.
void PostPacketLocked(Interface* i, std::span<const uint8_t> packet, uint64_t av, uint32_t qpn,
                      uint32_t qkey);
// Posts from a slot already holding the packet at [offset, offset + length). Under `lock`.
void PostSlotLocked(Interface* i, uint32_t slot, size_t offset, size_t length, uint64_t av,
                    uint32_t qpn, uint32_t qkey);
void CountDropLocked(Interface* i, Drop drop, bool transmit);
// Path resolution for a unicast GID (SA PathRecord, then an AV); frames queued meanwhile are
// sent when it is ready. Under `lock`: starts the IRPs after the caller unlocks via the
// returned flag (true: call StartResolve).
void StartResolve(Interface* i, const Gid& gid);
// Drops every path (their AVs destroyed): they are resolved again on demand.
void FlushPathsLocked(Interface* i, std::vector<uint64_t>* avs_to_destroy);
void DestroyAvs(Interface* i, const std::vector<uint64_t>& avs);

// ---- receive.cc ----
void StartReceive(Interface* i);  // arms the CQ and sends the event IRP
void PostReceiveSlot(Interface* i, uint32_t slot);

// ---- multicast.cc ----
// Joins `mgid` (full member or send-only non-member) unless joined/joining; the broadcast
// group brings the carrier up when joined. Takes `lock` itself.
void JoinGroup(Interface* i, const Gid& mgid, bool full, bool broadcast);
void LeaveGroup(Interface* i, const Gid& mgid);
// Re-joins every group (after a port change). Takes `lock`.
void RejoinAll(Interface* i);
void StartAgeing(Interface* i);
void StopAgeing(Interface* i);

// ---- cm.cc ----
// Bytes the connected mode adds to the one registration (0 in datagram mode).
size_t CmMemoryBytes(const Interface* i);
// PASSIVE at set-up, after the UD QP and the registration: the SRQ and its receives over
// `base` (CmMemoryBytes of the registration), the listen on 0x1000000000000000 | UD QPN.
kernel::Status CmSetUp(Interface* i, uint8_t* base);
// A host frame in connected mode: true when cm.cc took it (sent over RC, queued for a
// connection, fragmented to the UD MTU, or answered with ICMP); false: the UD path sends
// it as it is. Takes `lock` itself.
bool CmTransmit(Interface* i, std::span<const uint8_t> frame, bool resend = false);
// An RC completion (wr_id has kCmWrBit), from the CQ's DPC.
void CmOnCompletion(Interface* i, const abi::WorkCompletion& wc);
// After `stopping` is set, before the AL is released: waits for a CM work item running.
void CmQuiesce(Interface* i);
// After the AL was released (its objects went with it): frees the connections.
void CmShutdown(Interface* i);
// A port change: every connection is dropped (DREQ) and made again on demand.
void CmDropAll(Interface* i);
// Under `lock`: an IP address of the link no longer names `old_hw` (ARP/ND taught another
// hardware address, or the same one without 'C'): the connection to `old_hw` is torn down
// (its QP to ERROR, DREQ); the next frame goes to the new address (RC or UD).
void CmPeerChangedLocked(Interface* i, const HwAddr& old_hw);

// ---- flow.cc ----
// Under `lock`, in Transmit: true when `frame` must wait (the ring it needs is full, or
// older frames wait: `ring_full` false asks only that) and was taken (held, or dropped as
// kSendQueueFull beyond the bound); the face is told StopQueue (under the lock). `resend`:
// the frame is SendHeldFrames' own (it goes back to the front).
bool HoldFrameLocked(Interface* i, std::span<const uint8_t> frame, bool ring_full, bool resend);
// From the CQ's DPC after send completions (lock not held): sends the frames held, in
// order, while slots last; wakes the face once none is left.
void SendHeldFrames(Interface* i);
// Transmit's body; `resend` from SendHeldFrames.
void TransmitFrame(Interface* i, std::span<const uint8_t> frame, bool resend);

// ---- events.cc ----
kernel::Status StartPortEvents(Interface* i);  // PASSIVE, at set-up

// ---- lbfo.cc: one interface over two ports (ipoib.h LbfoMode) ----
kernel::Status CreateLbfo(Driver* driver, const InterfaceConfig& config, EthernetFace* face,
                          Interface** out);
void DestroyLbfo(Interface* team);
void LbfoTransmit(Interface* team, std::span<const uint8_t> frame);
Mac LbfoMac(Interface* team);
uint32_t LbfoMtu(Interface* team);
kernel::Status LbfoQuery(Interface* team, InterfaceInfo* info);
void LbfoSetAddresses(Interface* team, std::span<const IpAddr> addresses);
// A member's packet that its team's other member sent (a broadcast or multicast both members
// hear on one subnet): the team's own, never the host's news. Under the member's lock.
bool LbfoFromSiblingLocked(const Interface* member, const RxSource& source);
size_t LbfoAtsRecords(Interface* team);

// ---- ibat.cc ----
// After set-up (PASSIVE): the interface answers IBAT. Before shutdown (PASSIVE): no more.
void IbatAttach(Interface* i);
void IbatDetach(Interface* i);
// Under `lock`: an Ethernet frame the driver translated (from the host, or delivered to it):
// ARP and ND teach the cache remote IP -> hardware address (through the neighbour table).
void IbatLearnLocked(Interface* i, std::span<const uint8_t> frame, bool from_host);
// Under `lock`: a port change or the carrier's loss: the cache is forgotten.
void IbatForgetLocked(Interface* i);

// ---- ats.cc ----
void UpdateAtsRecords(Interface* i);  // register/deregister per `addresses`
void ReRegisterAts(Interface* i);     // after a port change

}  // namespace softib::ipoib
