// The special QPs the AL owns: QP0 (SMI) and QP1 (GSI) of every port of every CA, created at
// the CA's arrival. Clients never post on them: they reach them through alias QPs
// (SMI_ALIAS/GSI_ALIAS from GetSpecialQp) and MAD services (mad_service.h). Each special QP
// has its own CQ, receive buffers and send slots in one kernel MR; its completions arrive as
// the CA's completion events (AlCa::Dispatch, at DISPATCH) and its timeouts from a timer DPC.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/mad_agent.h"
#include "softib/abi/ci.h"
#include "softib/kernel/irp_task.h"
#include "softib/kernel/timer.h"

namespace softib::rmpp {
class RmppSender;
class RmppReceiver;
}  // namespace softib::rmpp

namespace softib::al {

using rmpp::RmppReceiver;
using rmpp::RmppSender;

// Where a MAD goes (the UD addressing of a send).
struct MadAddress {
  abi::AddressVector av{};
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;  // host order
  uint16_t pkey_index = 0;
};

// A request's redirection (IBA 13.5.3.3, mad_redirect.cc): where the client sent it, how
// many redirects it followed, and the Get(ClassPortInfo) the AL asks when a redirect came
// without one.
struct RedirectState {
  MadAddress original;
  bool eligible = false;    // a GMP request to QP1: redirects are followed
  bool redirected = false;  // `to` is not `original` (a redirect or the cache)
  uint32_t hops = 0;
  uint32_t retry_count = 0;      // as asked: a followed redirect starts them again
  bool querying = false;         // the Get(ClassPortInfo) is out instead of the request
  bool segmented = false;        // the request is an RMPP transfer
  std::vector<uint8_t> request;  // the client's MAD while querying
  uint64_t request_tid = 0;
};
// The redirect cache's key: class, and the remote port's LID.
using RedirectKey = std::pair<uint8_t, uint16_t>;

// One send of a MAD service: a single MAD, or an RMPP transfer (rmpp set), whose wire
// completions, response and retries the special QP tracks. Guarded by SpecialQp::lock.
struct MadSend {
  AgentRef svc;  // the agent that sent it
  uint64_t send_id = 0;
  uint64_t context = 0;
  std::vector<uint8_t> mad;  // one MAD, or the whole RMPP transfer
  MadAddress to;
  uint64_t tid = 0;
  uint8_t mgmt_class = 0;
  bool response_expected = false;
  uint32_t timeout_ms = 0;
  uint32_t retries_left = 0;
  std::chrono::steady_clock::time_point deadline{};
  bool waiting = false;  // a deadline runs (response, or an RMPP ACK)
  uint32_t on_wire = 0;  // posted, not completed
  bool done = false;
  std::unique_ptr<RmppSender> rmpp;
  RedirectState redirect;  // mad_redirect.cc
  ~MadSend();
};

// What a receive reports besides the MAD.
struct MadOrigin {
  abi::WorkCompletion wc{};
  abi::Gid sgid{};
  bool grh = false;
};

// Where to answer a MAD that arrived from `origin`: its LID, SL, path bits and QP (with
// its GRH's source as destination when it came with one), QP1's Q_Key, the P_Key it came
// with. One rule for every responder (the CM, the DevMgt agent, RMPP ACKs, ReportResponse).
inline MadAddress ReturnAddress(const MadOrigin& origin) {
  MadAddress back;
  back.av.dlid = static_cast<uint16_t>(origin.wc.slid);
  back.av.sl = origin.wc.sl;
  back.av.src_path_bits = origin.wc.dlid_path_bits;
  if (origin.grh) {
    back.av.grh_present = 1;
    back.av.grh.dgid = origin.sgid;
    back.av.grh.hop_limit = 0xFF;
  }
  back.remote_qpn = origin.wc.src_qp;
  back.remote_qkey = 0x80010000;  // QP1's well-known Q_Key (IBA 10.2.5)
  back.pkey_index = origin.wc.pkey_index;
  return back;
}

class SpecialQp {
 public:
  static constexpr uint32_t kRecvDepth = 512;  // Linux's mad_recvq_size
  static constexpr uint32_t kSendSlots = 512;

  // type SMI or GSI: the port's QP0/QP1; MAD: a client's MAD QP (mad_qp.cc), a UD QP the
  // client brings up with ModifyQp, its port learnt at INIT.
  SpecialQp(AlCa* ca, uint8_t port, abi::QpType type);
  ~SpecialQp();
  SpecialQp(const SpecialQp&) = delete;
  SpecialQp& operator=(const SpecialQp&) = delete;

  // QP0/QP1 at the CA's arrival: the setup chain of CI IRPs (PD, CQ, MR, QP, INIT, RTR,
  // RTS), `done` with its status in the last completion (maybe at DISPATCH). DISPATCH or
  // below. A QP whose chain failed is stopped (Stop) by its starter. A client's MAD QP
  // (type MAD, mad_qp.cc): PD, CQ, MR and a UD QP the client brings up itself.
  void Start(std::function<void(kernel::Status)> done);
  // DISPATCH or below: sends CANCELED, the device QP's destruction sent (a CiDestroyQp
  // IRP), nothing queued any more.
  void Close();
  // PASSIVE: Close, then its DPCs and CI IRPs waited for and its resources released by CI
  // IRPs (AHs, then MR, CQ and PD in that order), waited for as the removal's I/O.
  void Stop();

  AlCa* ca() const { return ca_; }
  uint8_t port() const { return port_; }
  bool smi() const { return type_ == abi::QpType::SMI; }
  bool gsi() const { return type_ == abi::QpType::GSI; }
  uint32_t cq() const { return cq_; }
  uint32_t qp_number() const { return qp_; }  // the device's QP (its number on the wire)
  // The CQ's notification fired: the completions are processed from the QP's DPC, never
  // inline (a CI call made under this QP's lock may complete the CA's event IRP at once).
  void OnCompletion();

  // MAD services on this QP (mad_dispatch.cc): RESOURCE_BUSY when an unsolicited service of
  // the same class and version already takes one of the methods.
  kernel::Status AddService(MadAgent* svc);
  void RemoveService(MadAgent* svc);  // its sends finish CANCELED first

  // Starts a send (tracked until it completes); INSUFFICIENT_RESOURCES when no slot is free.
  kernel::Status Send(std::shared_ptr<MadSend> send);
  kernel::Status Cancel(MadAgent* svc, uint64_t send_id);

  // Counters for tests and diagnostics.
  std::atomic<uint64_t> dropped{0};     // received MADs nobody took
  std::atomic<uint64_t> unmatched{0};   // responses that matched no send
  std::atomic<uint64_t> retries{0};     // resends after a timeout
  std::atomic<uint64_t> redirected{0};  // requests re-sent where a redirect pointed
  std::atomic<uint64_t> ahs_made{0};    // CiCreateAh IRPs sent (the AH cache's misses)

  // MAD QPs (mad_qp.cc): the client's ModifyQp went through; RESET->INIT posts the
  // receive buffers and fixes the port.
  void OnModified(const abi::QpModifyAttributes& attributes);

  // Posts one MAD outside any tracked send (SMA responses, RMPP ACKs); lock held.
  kernel::Status PostRawLocked(const uint8_t* mad, const MadAddress& to);

  kernel::KSpinLock lock;

 private:
  using After = std::vector<std::function<void()>>;
  friend class MadDispatch;

  // The AHs of the AL's PD the sends go through (special_qp_ah.cc): one per address
  // (AddressVector, port included), made by a CiCreateAh IRP at its first use and kept for
  // the next sends there. An AH holds only the address (the HCA takes the SLID, P_Key and
  // the port's other state at each send), so it stays right across port and LID changes.
  struct AhEntry {
    abi::AddressVector av{};
    uint32_t ah = 0;                // 0 while its CiCreateAh is in flight
    uint32_t uses = 0;              // slots posted with it or waiting for it
    bool cached = true;             // false: destroyed once its last slot is done
    bool creating = true;           // its CiCreateAh has not completed yet
    std::vector<uint32_t> waiting;  // slots to post once it exists, in order
  };
  static constexpr std::size_t kAhCacheSize = 64;

  struct Slot {
    std::shared_ptr<MadSend> send;  // null: a raw send
    AhEntry* ah = nullptr;          // the AH it went (or goes) through
  };

  kernel::Status PostLocked(const std::shared_ptr<MadSend>& send, const uint8_t* mad,
                            const MadAddress& to);
  // special_qp_ah.cc, lock held. The entry for `av` (made, and its CiCreateAh queued to the
  // AH DPC, when there is none); null when the address cannot be one (INVALID_SETTING).
  AhEntry* AhForLocked(const abi::AddressVector& av);
  // Posts slot `index`'s MAD through its AH (which exists): the CA's status.
  kernel::Status PostSlotLocked(uint32_t index, const MadAddress& to);
  void ReleaseAhLocked(AhEntry* entry);     // a slot is done with it (or gave it up)
  void DropIfUnusedLocked(AhEntry* entry);  // uncached, unused, created: destroyed
  void FlushAhsLocked();                    // Stop: every AH destroyed
  static void AhDpc(kernel::Kdpc*, void* context, void*, void*);
  void CreateAhs();
  kernel::IrpTask CreateAhTask(AhEntry* entry, abi::AddressVector av);
  void OnAhCreated(AhEntry* entry, kernel::Status status, uint32_t ah);
  kernel::Status PostRecv(uint32_t index);
  void Drain();
  void OnSendDone(const abi::WorkCompletion& wc, After& after);
  void OnReceive(const abi::WorkCompletion& wc);
  // By value: the caller's reference may be the service table's entry, which this erases.
  void Finish(std::shared_ptr<MadSend> send, abi::WcStatus status, After& after);
  void Wait(const std::shared_ptr<MadSend>& send);  // arms its deadline
  void ArmTimerLocked();
  static void TimerDpc(kernel::Kdpc*, void* context, void*, void*);
  static void CompletionDpc(kernel::Kdpc*, void* context, void*, void*);
  void ProcessCompletions();
  void OnTimer();
  void InitResources();  // DPCs, timer, buffers and slots
  kernel::IrpTask StartTask(std::function<void(kernel::Status)> done);
  // Redirection (IBA 13.5.3.3, mad_redirect.cc): a request to QP1 goes where the cache
  // says; a response asking for a redirect is consumed (true) and the request re-sent.
  void ApplyRedirectLocked(MadSend& send);
  bool OnRedirectLocked(const std::shared_ptr<MadSend>& send, const uint8_t* response,
                        std::size_t length, After& after);
  void FollowRedirectLocked(const std::shared_ptr<MadSend>& send, const uint8_t* info,
                            After& after);
  void QueryClassPortInfoLocked(const std::shared_ptr<MadSend>& send, After& after);
  void RedirectTimeoutLocked(MadSend& send);  // back to the original address
  kernel::Status ResendLocked(const std::shared_ptr<MadSend>& send);
  // RMPP (rmpp_flow.cc).
  kernel::Status StartRmppLocked(const std::shared_ptr<MadSend>& send, After& after);
  void PumpRmppLocked(const std::shared_ptr<MadSend>& send, After& after);
  // An RMPP-active MAD: true when an RMPP transfer took it (false: route it as a plain MAD,
  // e.g. to a service that wants raw segments).
  bool OnRmppReceive(const uint8_t* mad, const MadOrigin& origin, MadAgent* owner, After& after);
  void RmppTimeoutLocked(const std::shared_ptr<MadSend>& send, After& after);
  kernel::Status PostSegmentsLocked(const std::shared_ptr<MadSend>& send);
  bool OnRmppControlLocked(const uint8_t* mad, After& after);
  bool StrayRmppControlLocked(const uint8_t* mad, MadAgent* owner);
  void OnRmppDataLocked(const uint8_t* mad, const MadOrigin& origin, MadAgent* svc, After& after);
  void ExpireInboundLocked(std::chrono::steady_clock::time_point now);
  std::chrono::steady_clock::time_point EarliestInboundLocked() const;
  std::shared_ptr<MadSend> AnsweredLocked(MadAgent* owner, const uint8_t* response);
  // The receive path (mad_dispatch.cc).
  void Route(const uint8_t* mad, const MadOrigin& origin);
  void DeliverLocked(MadAgent* svc, std::vector<uint8_t> mad, const MadOrigin& origin,
                     const std::shared_ptr<MadSend>& answered, After& after);
  MadAgent* FindRequestServiceLocked(const uint8_t* mad);
  // smi.cc. False: `after_smi` (256 bytes) holds the SMP as the receive-side rules left it
  // (ReturnPath, HopPointer), which goes on to the MAD services.
  bool SmiReceive(const uint8_t* mad, const MadOrigin& origin, uint8_t* after_smi);
  // QP1: a PerfMgt request no service took goes to the port's PMA (the CI's LocalMad), as a
  // real HCA's firmware answers it; false when it is not one.
  bool GsiLocalAgent(const uint8_t* mad, const MadOrigin& origin);  // smi.cc
  kernel::Status SmiPrepareSend(MadSend& send);                     // smi.cc
  // The port's SMA/PMA answering as a CiLocalMad IRP (smi.cc, issue 17): what its response
  // becomes in the IRP's completion.
  enum class LocalAnswer { kNone, kSma, kSmaDirected, kPma };
  void LocalAgent(const uint8_t* mad, const MadOrigin& origin, LocalAnswer answer);
  kernel::IrpTask LocalAgentTask(abi::CiLocalMadIn in, MadOrigin origin, LocalAnswer answer);
  void SmaRespond(uint8_t* response, const MadOrigin& origin, bool directed);
  void PmaRespond(const uint8_t* response, const MadOrigin& origin);
  // CI IRPs of this QP in flight (local MADs, releases): Stop waits for none, as a WDM
  // driver's removal waits on its remove lock for its I/O.
  std::atomic<uint32_t> ci_in_flight_{0};
  // A release nobody waits for the answer of (DestroyQp, DestroyAh, ...): sent as its IRP
  // and counted in ci_in_flight_ until its completion. DISPATCH or below, any lock held.
  void SendRelease(kernel::Irp* irp);
  kernel::IrpTask ReleaseTask(kernel::Irp* irp);
  void WaitForCiIrps();  // PASSIVE

  AlCa* const ca_;
  uint8_t port_;  // a MAD QP's is set at INIT (lock)
  const abi::QpType type_;
  bool started_ = false;
  bool receiving_ = false;  // MAD QPs: the receive buffers are posted
  bool stopped_ = false;
  bool released_ = false;
  uint32_t pd_ = 0, cq_ = 0, qp_ = 0, key_ = 0;
  std::vector<uint8_t> memory_;  // receive buffers, then send slots
  std::vector<Slot> slots_;
  std::vector<MadAddress> slot_to_;      // where a slot waiting for its AH goes
  std::list<AhEntry> ahs_;               // lock
  std::vector<AhEntry*> ahs_to_create_;  // lock: for the AH DPC
  kernel::Kdpc ah_dpc_{};
  std::vector<uint32_t> free_slots_;
  std::set<MadAgent*> services_;
  std::map<uint32_t, MadAgent*> agents_;  // agent id (TID high half) -> service
  // RMPP transfers being received (rmpp_flow.cc), by service, TID and sender (LID, QPN);
  // a complete one stays until its deadline to answer a retransmitted last segment.
  struct Inbound {
    std::unique_ptr<RmppReceiver> receiver;
    std::chrono::steady_clock::time_point deadline;
    MadAddress from;
    std::vector<uint8_t> first;  // the first segment, to address an ABORT at the stall
  };
  using InboundKey = std::tuple<MadAgent*, uint64_t, uint64_t>;
  std::map<InboundKey, Inbound> reassembly_;
  // Where the agent of a class at a remote port redirected us (mad_redirect.cc).
  std::map<RedirectKey, MadAddress> redirects_;
  uint32_t next_query_tid_ = 0;
  kernel::Ktimer timer_{};
  kernel::Kdpc timer_dpc_{};
  kernel::Kdpc completion_dpc_{};
  kernel::KSpinLock dpc_gate_;  // completion_dpc_ is queued only while open
  bool dpc_closed_ = false;
};

}  // namespace softib::al
