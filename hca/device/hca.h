// The software HCA's device core: the tables of its objects (PDs, MRs, AHs, CQs, QPs), its
// ports, and the transports that turn work requests into packets and packets into
// completions. The transport code is split by role, as Linux rxe splits it:
//   requester.cc  send queue → packets, RC retransmission and timers (PostSend, Tick)
//   responder.cc  requests → receive queue / memory, ACK/NAK/read responses (Receive)
//   completer.cc  RC ACKs and responses → work completions, flushing
//
// The other objects have a file each: srq.cc (shared receive queues and the receive-queue
// indirection), mw.cc (memory windows), mcast.cc (multicast), special_qp.cc (QP0/QP1),
// attributes.cc (QueryCa/QueryPort/tables/ModifyCa), counters.h (what the PMA reads).
//
// QP handles: every method taking a `qpn` takes the number CreateQp returned (the QPN
// itself) or the handle CreateSpecialQp returned (QPNs 0 and 1 exist once per port).
//
// Threading: not synchronized. Its owner (the HCA driver) serializes calls into one Hca;
// the callbacks it supplies run inside those calls and must not re-enter the Hca.
// Time: none of its own; the owner calls Tick(now) to run the RC timers.
// Upward news (async events, completion events) leaves only through those callbacks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "hca/device/ah.h"
#include "hca/device/cq.h"
#include "hca/device/events.h"
#include "hca/device/mcast.h"
#include "hca/device/mr.h"
#include "hca/device/pd.h"
#include "hca/device/port.h"
#include "hca/device/qp.h"
#include "hca/device/srq.h"
#include "hca/device/write_combiner.h"
#include "softib/abi/types.h"

namespace softib::hca {

// Limits and identity. Defaults follow a ConnectX-3 class HCA (its published device
// limits) where the device can honour them; SGEs and inline data are bounded by the
// work-request structures of the ABI.
struct HcaConfig {
  uint8_t num_ports = 1;
  uint64_t node_guid = 0x0002C90300000001ull;
  uint64_t system_image_guid = 0;  // 0: the node GUID
  uint32_t vendor_id = 0x0002C9;   // IEEE OUI of the GUIDs above
  uint32_t device_id = 0x1003;
  uint32_t hw_revision = 0;
  uint64_t fw_version = 0x0002002A0000ull;  // 2.42.0
  uint32_t max_qps = 131000;
  uint32_t max_cqes = 1u << 16;
  uint32_t max_cqs = 65408;
  uint32_t max_wrs = 1u << 14;
  uint32_t max_sges = 16;  // abi::SendWorkRequest holds 16
  uint32_t max_inline = 16 * sizeof(abi::LocalDataSegment);
  uint32_t max_pds = 32764;
  uint32_t max_mrs = 524032;  // regions and windows share the key table, as on hardware
  uint32_t max_mws = 524032;
  uint32_t max_ahs = 1u << 24;
  uint32_t max_srqs = 65472;
  uint32_t max_srq_wrs = 16383;
  uint32_t max_srq_sges = 16;
  uint32_t max_mcast_grps = 8192;
  uint32_t max_qps_per_mcast_grp = 248;
  uint32_t max_mcast_qp_attach = 8192 * 248;
  uint8_t max_qp_resp_res = 16;     // responder resources per QP (max_dest_rd_atomic)
  uint8_t max_qp_init_depth = 128;  // initiator depth per QP (max_rd_atomic)
  uint16_t pkey_table_size = 128;
  uint16_t gid_table_size = 128;
  uint8_t local_ack_delay = 15;  // 4.096 us * 2^15
  abi::PathMtu max_mtu = abi::PathMtu::MTU_4096;
  uint8_t active_speed = 4;  // LinkSpeedActive: 10.0 Gb/s per lane (QDR)
  uint8_t active_width = 2;  // LinkWidthActive: 4x
  uint8_t max_vls = 8;
  // What the ports' SMA reports (IBA 14.2.5.6 encodings): 1X | 4X, SDR | DDR | QDR.
  uint8_t link_width_supported = 0x03;
  uint8_t link_speed_supported = 0x07;
  std::string description = "softib HCA";  // NodeDescription, at most 64 bytes
  // Test mode of the driver (hca/driver): every CI IRP (idl/ci.idl) is pended and completed
  // later from a DPC, to prove that its callers never assume inline completion. The node
  // stack sets it for every CA when SOFTIB_CI_PEND=1.
  bool pend_ci = false;
};

// What a port's management agents (SMA, PMA) made of a local MAD (ProcessLocalMad).
enum class LocalMadResult : uint8_t {
  kReply,    // the response MAD is filled in (a GetResp, possibly with an error status)
  kNoReply,  // consumed without an answer: an M_Key violation, a response, a trap
  kBad,      // not a MAD for these agents: bad port, base version, management class
};

// Which special QP CreateSpecialQp makes (IBA 3.9.4 / 10.2.3.1: per port).
inline constexpr uint32_t kSmiQpn = 0;
inline constexpr uint32_t kGsiQpn = 1;
// The well-known Q_Key of QP1: a GSI packet with any other Q_Key is a Q_Key violation.
inline constexpr uint32_t kGsiQkey = 0x80010000;
// The handles of special QPs: QPNs 0 and 1 exist once per port, so the device names them
// by a handle outside the 24-bit QPN space: kSpecialQpHandle | port << 1 | qpn.
inline constexpr uint32_t kSpecialQpHandle = 0x01000000;
// BTH:DestQP of every multicast packet (IBA: the multicast QP number, 0xFFFFFF).
inline constexpr uint32_t kMulticastQpn = 0xFFFFFF;

// PortInfo:VLCap for a port with `max_vls` data VLs.
uint8_t VlCap(uint8_t max_vls);

class Hca {
 public:
  // How much of a SEND/WRITE the requester reads from the sender's memory at once: enough
  // to make the system call per window cheap against the copy, small enough to stay in
  // cache while the packets are cut from it.
  static constexpr uint32_t kGatherWindowBytes = 128 * 1024;

  explicit Hca(const HcaConfig& config = {});

  // Callbacks for upward news; set before use (empty ones drop the news).
  AsyncEventSink async_events;
  CompletionEventSink completion_events;

  Port& port(uint8_t number) { return ports_.at(number - 1); }
  const Port& port(uint8_t number) const { return ports_.at(number - 1); }
  const HcaConfig& config() const { return config_; }
  // The counters of port `number` (1-based), for the PMA.
  const PortCounters& counters(uint8_t number) const { return port(number).counters; }

  // --- attributes (attributes.cc) ------------------------------------------------------
  abi::CaAttributes QueryCa() const;
  // INVALID_PORT outside 1..num_ports.
  abi::Status QueryPort(uint8_t port_number, abi::PortAttributes* out) const;
  // Up to out.size() entries from `start`; *count says how many were written.
  // INVALID_INDEX when `start` is past the table. P_Keys in network order, as QueryPkeyTable.
  abi::Status QueryGidTable(uint8_t port_number, uint32_t start, std::span<abi::Gid> out,
                            uint32_t* count) const;
  abi::Status QueryPkeyTable(uint8_t port_number, uint32_t start, std::span<uint16_t> out,
                             uint32_t* count) const;
  // The ModifyCa verb's effect on the device: Q_Key/P_Key violation counters reset, port
  // shutdown, InitTypeReply, system image GUID (network order), CapabilityMask set/clear.
  // INVALID_PORT for a bad port with a port flag; INVALID_SETTING for flag bits outside
  // the mask or unknown capability bits. A CapabilityMask change raises trap 144.
  abi::Status ModifyCa(uint8_t port_number, abi::ModifyCaFlags flags, abi::PortCapabilities cap_set,
                       abi::PortCapabilities cap_clear, uint8_t init_type,
                       uint64_t system_image_guid);

  // Plugs a cable into port `port_number` (nullptr unplugs it). A port entering or leaving
  // ACTIVE reports PORT_ACTIVE / PORT_DOWN through async_events (object: the port number);
  // so does ModifyCa's SHUTDOWN_PORT on an ACTIVE port.
  void SetPortLink(uint8_t port_number, Link* link);

  // --- the ports' management agents: SMA (sma.cc, sma_port_info.cc, sma_tables.cc) and
  // PMA (pma.cc) -------------------------------------------------------------------------
  // The port's "firmware" answering one MAD (256 bytes) as if it had arrived on
  // `port_number` (mlx4's MAD_IFC, IBAL's ib_local_mad): SubnGet/SubnSet, LID-routed
  // (class 0x01) or directed-route (0x81; the path fields are the SMI's business, the
  // response only gets D = 1), with M_Key protection; PerfMgt (0x04) Get/Set of
  // ClassPortInfo, PortCounters and PortCountersExtended. The response is the request
  // turned into a GetResp with the attribute and the status the spec gives.
  // SubnSet PortInfo drives the port's logical state (Init → Armed → Active, Down) and
  // sets the LID, LMC, SM LID/SL and P_Keys the data path uses; the events it causes
  // (PORT_ACTIVE, PORT_DOWN, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, GID_CHANGE,
  // CLIENT_REREGISTER) leave through async_events.
  LocalMadResult ProcessLocalMad(uint8_t port_number, std::span<const uint8_t, 256> request,
                                 std::span<uint8_t, 256> response);

  // --- the ports' traps (sma_traps.cc) -----------------------------------------------------
  // A port's SMA reports to its MasterSMLID (IBA 14.2.5.1): 144 when ModifyCa changes its
  // CapabilityMask, 256 when an SMP fails its M_Key check, 257/258 when a datagram or a
  // connected packet is dropped for its P_Key / Q_Key. Each is a SubnTrap(Notice) from QP0,
  // sent at once and again every subnet timeout (on Tick) with the same TID until the SM's
  // TrapRepress; one per trap number and port is outstanding, so a flood of bad packets
  // becomes one trap. A port without a LID or a MasterSMLID has nobody to tell, and a port
  // whose MasterSMLID is its own hosts the SM: nothing is queued (the SM reads the port's
  // state when it sweeps).
  // True while some trap waits for its TrapRepress: the owner keeps calling Tick.
  bool traps_pending() const;
  // When the next trap is due to go out again (the Tick clock; UINT64_MAX: none waits), so
  // the owner ticks then rather than every millisecond while an SM does not answer.
  uint64_t next_trap_ns() const;

  // --- a device without special QPs (management.cc) -------------------------------------
  // softibd's light hosts have no Access Layer above the device to own QP0 and QP1: their
  // ports answer MADs from the device alone. With a sink set, a datagram for QP0/QP1 of a
  // port where that special QP does not exist passes every check the special QP's receive
  // makes (VL15, DLID, UD transport, QP1's P_Key and Q_Key, MTU) and goes to the sink, with
  // what the receive's completion would report, instead of being dropped. The sink runs
  // inside Receive and must not call the Hca (it keeps the MAD and answers afterwards).
  struct ManagementDatagram {
    uint8_t port = 0;
    uint32_t qpn = 0;  // 0 (SMI) or 1 (GSI)
    uint32_t src_qp = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint16_t pkey_index = 0;       // QP1: the P_Key table entry that matched
    std::span<const uint8_t> mad;  // the payload
  };
  std::function<void(const ManagementDatagram&)> management_sink;
  // Where SendManagement sends a MAD.
  struct ManagementAddress {
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint16_t pkey_index = 0;  // QP1's P_Key (QP0 always sends the default one)
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  };
  // Sends `mad` from QP0 or QP1 (`src_qpn`) of `port_number` exactly as that special QP's
  // UD send would (headers, PSN sequence, port counters). False when no packet was built.
  bool SendManagement(uint8_t port_number, uint32_t src_qpn, const ManagementAddress& to,
                      std::span<const uint8_t> mad);

  // --- objects -------------------------------------------------------------------------
  PdId AllocPd() { return pds_.Allocate(); }
  abi::Status FreePd(PdId pd);

  abi::Status RegisterMr(PdId pd, uint64_t iova, uint64_t length, uint64_t addr,
                         abi::AccessFlags access, std::shared_ptr<DmaAccessor> dma, uint32_t* key);
  // RESOURCE_BUSY while windows are bound to it.
  abi::Status DeregisterMr(uint32_t key) { return mrs_.Deregister(key); }
  // Changes what `what` selects (TRANSLATION: iova/length/addr/dma; PD; ACCESS) of the
  // region `key`; on success the region answers to *new_key only (same index, next key
  // byte) and the old key is dead. On any error nothing changes. INVALID_MR_HANDLE,
  // INVALID_PD_HANDLE, RESOURCE_BUSY (windows bound), and RegisterMr's checks.
  abi::Status ReregisterMr(uint32_t key, abi::MrReregFlags what, PdId pd, uint64_t iova,
                           uint64_t length, uint64_t addr, abi::AccessFlags access,
                           std::shared_ptr<DmaAccessor> dma, uint32_t* new_key);
  const MrTable& mrs() const { return mrs_; }

  abi::Status CreateAh(PdId pd, const abi::AddressVector& av, uint32_t* number);
  abi::Status DestroyAh(uint32_t number) { return ahs_.Destroy(number); }
  // The speed path's AV translation (ah.h): a user file's AV handle names the AH in its PD.
  abi::Status BindAhHandle(uint32_t number, uint64_t handle) {
    return ahs_.BindHandle(number, handle);
  }
  // The AH number `handle` names in `pd`; false when it names none there.
  bool TranslateAhHandle(PdId pd, uint64_t handle, uint32_t* number) const {
    return ahs_.FindByHandle(pd, handle, number) != nullptr;
  }

  abi::Status CreateCq(uint32_t capacity, uint32_t* number);
  abi::Status DestroyCq(uint32_t number);
  CompletionQueue* Cq(uint32_t number);
  // Resizes a CQ to `capacity` (*granted: the size now in force). INVALID_CQ_SIZE for 0,
  // above max_cqes, or fewer than the completions it holds; INVALID_CQ_HANDLE.
  abi::Status ResizeCq(uint32_t number, uint32_t capacity, uint32_t* granted);

  abi::Status CreateQp(PdId pd, const abi::QpCreateParams& params, uint32_t send_cq,
                       uint32_t recv_cq, uint32_t* qpn);
  // A QP that receives from SRQ `srq` (0: its own receive queue). With an SRQ,
  // caps.rq_depth must be 0 and the SRQ must be in the same PD (INVALID_SETTING);
  // INVALID_SRQ_HANDLE for an unknown SRQ.
  abi::Status CreateQp(PdId pd, const abi::QpCreateParams& params, uint32_t send_cq,
                       uint32_t recv_cq, uint32_t srq, uint32_t* qpn);
  // QP0 (type SMI) or QP1 (type GSI) of `port_number`, in RESET. *handle names it in every
  // other call (kSpecialQpHandle | port << 1 | qpn); its QP number on the wire and in
  // completions is 0 or 1. INVALID_PORT, INVALID_SERVICE_TYPE (other types),
  // RESOURCE_BUSY (that port's QP already exists), and CreateQp's checks.
  abi::Status CreateSpecialQp(PdId pd, uint8_t port_number, const abi::QpCreateParams& params,
                              uint32_t send_cq, uint32_t recv_cq, uint32_t* handle);
  abi::Status ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attrs);
  abi::Status QueryQp(uint32_t qpn, abi::QpAttributes* out) const;
  abi::Status DestroyQp(uint32_t qpn);
  QueuePair* Qp(uint32_t qpn);

  // --- shared receive queues (srq.cc) ----------------------------------------------------
  // INVALID_MAX_WRS (0 or above max_srq_wrs), INVALID_MAX_SGE, INVALID_SETTING (limit >
  // max_wr). *granted: the sizes in force.
  abi::Status CreateSrq(PdId pd, const abi::SrqAttributes& attrs, uint32_t* number,
                        abi::SrqAttributes* granted);
  // MAX_WR resizes (INVALID_SRQ_SIZE below the WRs queued or above the limit); LIMIT arms
  // the one-shot SRQ_LIMIT_REACHED event (0 disarms; INVALID_SETTING above max_wr).
  abi::Status ModifySrq(uint32_t number, abi::SrqAttrMask mask, const abi::SrqAttributes& attrs);
  abi::Status QuerySrq(uint32_t number, abi::SrqAttributes* out) const;
  abi::Status DestroySrq(uint32_t number);  // RESOURCE_BUSY while a QP uses it
  abi::Status PostSrqRecv(uint32_t number, const abi::RecvWorkRequest& wr);
  SharedReceiveQueue* Srq(uint32_t number);

  // --- memory windows (mw.cc) ------------------------------------------------------------
  // Keys as regions': 24-bit table index + 8-bit key. *mw is the window's handle (its
  // index, stable across binds), *rkey its current R_Key.
  abi::Status AllocMw(PdId pd, abi::MwType type, uint32_t* mw, uint32_t* rkey);
  abi::Status QueryMw(uint32_t mw, PdId* pd, abi::MwType* type, uint32_t* rkey) const;
  abi::Status DestroyMw(uint32_t mw);  // INVALID_MW_HANDLE
  // The BindMw verb (type 1 windows): queues a bind on the QP's send queue and returns
  // the R_Key the window will have once it executes; the bind completes like a send
  // (WcOpcode MW_BIND; MW_BIND_ERR for a bind the checks refuse, which takes the QP to
  // Error). Immediate errors: INVALID_MW_HANDLE, INVALID_QP_HANDLE, INVALID_MR_HANDLE,
  // INVALID_QP_STATE, INVALID_SERVICE_TYPE (UD/special QP, or a type 2 window),
  // INVALID_PERMISSION (access bits that are not remote rights), INSUFFICIENT_RESOURCES.
  abi::Status BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                     uint32_t* rkey);

  // --- multicast (mcast.cc) --------------------------------------------------------------
  // INVALID_SERVICE_TYPE (not UD), INVALID_LID (outside 0xC000..0xFFFE), INVALID_GID (not a
  // multicast GID: first byte 0xFF), MAX_MCAST_QPS_REACHED, INSUFFICIENT_RESOURCES.
  // Attaching twice is idempotent.
  abi::Status AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid);
  abi::Status DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid);  // NOT_FOUND
  const McastTable& mcast() const { return mcast_; }

  // --- data path (requester.cc, responder.cc) -------------------------------------------
  // UD: wr.av.value is the AH number. Immediate errors (bad QP state, too many SGEs, full
  // queue, wrong operation for the QP type) return a status and queue nothing; anything
  // found later completes the request with an error status.
  abi::Status PostSend(uint32_t qpn, const abi::SendWorkRequest& wr);
  abi::Status PostRecv(uint32_t qpn, const abi::RecvWorkRequest& wr);
  // A packet arrived on `port_number` (LRH through VCRC).
  // `sealed` false: an unsealed packet from an in-daemon link (packet.h), CRCs unchecked.
  void Receive(uint8_t port_number, std::span<const uint8_t> packet, bool sealed = true);

  // --- time -------------------------------------------------------------------------------
  // The HCA has no clock of its own: its owner advances time (nanoseconds, any origin)
  // and the RC timers that expired by then run inside this call (local ACK timeout,
  // RNR wait). Timers are armed relative to the last time given.
  void Tick(uint64_t now_ns);
  // Advances time without running timers: work posted now arms its timers from now, not
  // from the last tick (which may be long ago when the QP was idle).
  void SetNow(uint64_t now_ns) { now_ns_ = now_ns; }

  // Places the RDMA WRITE payload the responder staged (write_combiner.h). The HCA's owner
  // calls it before any control operation; the data path flushes by itself.
  void FlushStagedWrites();
  uint64_t staged_write_runs() const { return staged_writes_.runs_placed(); }
  uint64_t now() const { return now_ns_; }

 private:
  abi::Status CheckQpCreate(const abi::QpCaps& caps, uint32_t srq, PdId pd) const;
  // SQ_DRAINED once a draining SQD QP that asked for it has nothing outstanding.
  void ReportSqDrained(QueuePair& qp);
  // attributes.cc: PORT_ACTIVE / PORT_DOWN when the link state crossed ACTIVE.
  void ReportPortChange(const Port& p, uint8_t link_state_before);
  // sma.cc, sma_port_info.cc, sma_tables.cc: SMA attributes; each answers a MAD status
  // and leaves the attribute's current value in `data` (a refused Set changes nothing).
  using SmpData = std::span<uint8_t, 64>;
  LocalMadResult ProcessSmp(Port& port, std::span<const uint8_t, 256> request,
                            std::span<uint8_t, 256> response);
  uint16_t SmaDispatch(Port& port, bool set, uint16_t attribute, uint32_t modifier, bool hide_mkey,
                       SmpData data);
  uint16_t NodeInfoGet(const Port& port, uint32_t modifier, SmpData data) const;
  uint16_t NodeDescriptionGet(uint32_t modifier, SmpData data) const;
  uint16_t GuidInfoAccess(Port& port, bool set, uint32_t modifier, SmpData data);
  uint16_t PortInfoAccess(Port& port, bool set, uint32_t modifier, bool hide_mkey, SmpData data);
  uint16_t PortInfoSet(Port& port, std::span<const uint8_t> data);
  void PortInfoGet(const Port& port, uint8_t local_port, bool hide_mkey, SmpData data) const;
  uint16_t PKeyTableAccess(Port& port, bool set, uint32_t modifier, SmpData data);
  uint16_t SlToVlAccess(Port& port, bool set, uint32_t modifier, SmpData data);
  uint16_t VlArbAccess(Port& port, bool set, uint32_t modifier, SmpData data);
  void Report(abi::AsyncEventType type, uint32_t object) {
    if (async_events) async_events(DeviceEvent{type, object});
  }
  // sma_traps.cc
  void RaiseTrap(Port& port, uint8_t type, uint16_t trap, std::span<const uint8_t> details);
  void RaiseKeyTrap(Port& port, uint16_t trap, const PacketHeaders& hdr, uint32_t key);
  void SendDueTraps(Port& port);
  // pma.cc
  LocalMadResult ProcessPerfMgt(Port& port, std::span<const uint8_t, 256> request,
                                std::span<uint8_t, 256> response);
  // requester.cc
  void ProgressSend(QueuePair& qp);
  abi::WcStatus SendUd(QueuePair& qp, const abi::SendWorkRequest& wr, uint32_t* length);
  abi::WcStatus Gather(const QueuePair& qp, const abi::SendWorkRequest& wr,
                       std::vector<uint8_t>* payload);
  PacketHeaders PathHeaders(const Port& out, const abi::AddressVector& av) const;
  // The headers of a connected QP's packet on its current path: LRH/GRH, BTH:P_Key,
  // DestQP and MigReq (set once migrated, IBA 17.2.8).
  PacketHeaders ConnectedHeaders(const QueuePair& qp) const;
  bool Transmit(Port& out, const PacketHeaders& hdr, std::span<const uint8_t> payload);
  // RC requester (requester.cc)
  abi::Status PostSendRc(QueuePair& qp, const abi::SendWorkRequest& wr);
  void ProgressSendRc(QueuePair& qp);
  abi::WcStatus StartRc(QueuePair& qp, RcSendWqe& wqe);
  abi::WcStatus ReadLocal(const QueuePair& qp, const abi::SendWorkRequest& wr, uint64_t offset,
                          std::span<uint8_t> out);
  // [offset, offset + length) of `wr`'s gather list as memory of this process, when it lies
  // in one SGE of a region this process can address directly (MemcpyDma) and passes the
  // local key check; empty otherwise (then ReadLocal copies it).
  std::span<const uint8_t> DirectLocal(const QueuePair& qp, const abi::SendWorkRequest& wr,
                                       uint64_t offset, uint64_t length) const;
  // Packet `index` of an RC/UC request; its payload read from the sender's memory unless
  // `gathered` holds it already.
  void TransmitRc(QueuePair& qp, const RcSendWqe& wqe, uint32_t index,
                  const std::span<const uint8_t>* gathered = nullptr);
  // Every packet of a SEND/WRITE, the first time: the sender's memory is read a window of
  // packets at a time (one DMA per SGE piece of a window — for a user process one
  // process_vm_readv — instead of one per packet). Retransmissions go packet by packet.
  void TransmitRcMessage(QueuePair& qp, const RcSendWqe& wqe);
  void RetransmitFrom(QueuePair& qp, uint32_t psn);
  void ArmAckTimer(QueuePair& qp);
  void RunRcTimers(QueuePair& qp);
  // APM (IBA 17.2.8): the QP moves to its alternate path and reports QP_PATH_MIGRATED.
  void MigratePath(QueuePair& qp);
  // responder.cc
  void ReceiveUd(Port& port, QueuePair& qp, const ParsedPacket& packet, uint16_t pkey_index);
  void ReceiveRc(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveRcDuplicate(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveUc(QueuePair& qp, const ParsedPacket& packet);
  // Datagram checks and delivery to one QP (UD, GSI, SMI): P_Key, Q_Key, VL15.
  void ReceiveDatagram(Port& in, QueuePair& qp, const ParsedPacket& packet);
  // QP1's checks (IBA 10.9.3, 10.2.4): a P_Key of the port's table (its index returned)
  // and the well-known Q_Key; nullopt after counting the violation.
  std::optional<uint16_t> GsiKeysMatch(Port& in, const PacketHeaders& hdr);
  // management.cc: what ReceiveDatagram and ReceiveUd check, for a port without QP0/QP1.
  void ReceiveManagement(Port& in, const ParsedPacket& packet);
  // UD headers of a datagram `qp_type` sends (requester.cc: SendUd and SendManagement).
  PacketHeaders DatagramHeaders(const Port& out, const abi::AddressVector& av, abi::QpType qp_type,
                                uint16_t pkey_index) const;
  // mcast.cc: a multicast packet to every QP of `in` attached to (DGID, DLID), except
  // `except` (the sender, for the local copy).
  void ReceiveMulticast(Port& in, const ParsedPacket& packet, const QueuePair* except);
  bool ContinuesStagedWrite(const PacketHeaders& hdr) const;
  QueuePair* DestinationQp(uint8_t port_number, uint32_t dest_qpn);
  // srq.cc: the receive queue, whichever it is (own or SRQ).
  bool RecvAvailable(const QueuePair& qp);
  abi::RecvWorkRequest TakeRecv(QueuePair& qp);
  void UntakeRecv(QueuePair& qp, const abi::RecvWorkRequest& wr);
  void ReportLastWqe(QueuePair& qp);
  // mw.cc: memory-management work requests (no packets): BIND_MW, LOCAL_INV.
  abi::WcStatus ExecuteBind(QueuePair& qp, const abi::SendWorkRequest& wr, bool type1);
  abi::WcStatus ExecuteLocalInvalidate(QueuePair& qp, uint32_t rkey);
  bool RemoteInvalidate(QueuePair& qp, uint32_t rkey);
  // Places one in-sequence SEND / RDMA WRITE packet; on failure, what to answer (RC NAK
  // code) and how the receive being filled completes.
  static constexpr uint8_t kPlaced = 0xFF;
  struct Placement {
    uint8_t nak_code;
    abi::WcStatus recv_status;
  };
  Placement PlacePacket(QueuePair& qp, const RequestShape& shape, const ParsedPacket& packet);
  // The last packet of a message was placed: count it, complete the receive it consumed.
  void FinishMessage(QueuePair& qp, const RequestShape& shape, const PacketHeaders& hdr);
  void RespondRead(QueuePair& qp, uint32_t psn, const wire::RETH& reth);
  void SendAck(QueuePair& qp, uint32_t psn, uint8_t syndrome);
  void SendAtomicAck(QueuePair& qp, uint32_t psn, uint64_t original);
  // A request the responder cannot execute: NAK it, complete the receive it was filling
  // (if any) with `recv_status`, and take the QP to Error (IBA 9.9.3.1 class C/D errors).
  void ResponderFatal(QueuePair& qp, uint32_t psn, uint8_t nak_code, abi::WcStatus recv_status);
  // completer.cc
  void CompleteSend(QueuePair& qp, const abi::SendWorkRequest& wr, abi::WcStatus status,
                    uint32_t length);
  void CompleteRecv(QueuePair& qp, abi::WorkCompletion wc, bool solicited);
  // A completion found its CQ overrun: the QP goes to Error without flushing into the
  // dead CQ (IBA 11.6.3: CQ overrun), and QP_FATAL goes out for it.
  void CqOverrun(QueuePair& qp);
  void EnterError(QueuePair& qp);    // QP to ERROR, outstanding work flushed
  void EnterSqError(QueuePair& qp);  // QP to SQE, outstanding sends flushed
  void Flush(QueuePair& qp);
  void FlushSend(QueuePair& qp);
  // RC completer: ACKs, NAKs, read responses and atomic ACKs retire send WQEs in order.
  void ReceiveRcResponse(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveRcNak(QueuePair& qp, uint32_t psn, uint8_t syndrome);
  bool AcceptReadResponse(QueuePair& qp, RcSendWqe& wqe, const ParsedPacket& packet);
  void RetryFrom(QueuePair& qp, uint32_t psn);  // once per PSN until progress
  void RetireRc(QueuePair& qp);

  HcaConfig config_;
  std::vector<Port> ports_;
  PdTable pds_;
  MrTable mrs_;
  AhTable ahs_;
  std::map<uint32_t, std::unique_ptr<CompletionQueue>> cqs_;
  std::map<uint32_t, std::unique_ptr<QueuePair>> qps_;
  // RC QPs (by handle, the key of qps_) whose ACK or RNR timer may run: what Tick looks at.
  std::set<uint32_t> timed_qps_;
  std::map<uint32_t, std::unique_ptr<SharedReceiveQueue>> srqs_;
  McastTable mcast_;
  uint32_t next_srq_ = 1;
  uint64_t now_ns_ = 0;
  WriteCombiner staged_writes_;
  uint32_t next_cq_ = 1;
  uint32_t next_qpn_ = 0x48;  // below: QP0/QP1 and numbers kept out of use, as on hardware
  // SendManagement's next PSN of QP0 and QP1 per port.
  std::vector<std::array<uint32_t, 2>> management_psns_;
};

}  // namespace softib::hca
