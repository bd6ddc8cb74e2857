// The communication manager (IBA 12): one per AccessLayer, an AL-internal QP1 agent of the
// ComMgt class (0x07, version 2) on every port, the CEP tables (by local communication ID;
// by remote communication ID and CA GUID for duplicates and stale connections; the
// listens), and one timer for retries and time-wait. One file per role: cm_active.cc (REQ
// out, REP in, RTU out), cm_passive.cc (REQ in, REP out, RTU in, MRA), cm_reject.cc,
// cm_disconnect.cc, cm_timers.cc, cm_qp_attrs.cc, cm_lap.cc (LAP/APR), cm_sidr.cc (SIDR).
//
// Locking: the CM's lock guards the tables and every CEP's connection state. Messages and
// events are collected under it (Work) and sent/posted after it is released.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "runtime/al/src/cm/cep.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "runtime/al/src/gsi_agent.h"
#include "softib/kernel/timer.h"
#include "softib/mad/mad_cm.h"
#include "softib/mad/mad_common.h"

namespace softib::al::cm {

inline constexpr uint8_t kCmClass = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;

// What a call collected under the CM's lock to do after it.
struct Work {
  struct Outgoing {
    std::shared_ptr<AlCa> ca;
    uint8_t port = 0;
    MadAddress to;
    std::array<uint8_t, 256> mad{};
  };
  std::vector<Outgoing> sends;
  std::vector<std::pair<kernel::ObjectRef, CepEvent>> events;
  std::vector<kernel::ObjectRef> released;  // table references dropped
  std::vector<kernel::ObjectRef> pumps;     // listens with a new CEP queued
};

class ConnectionManager {
 public:
  explicit ConnectionManager(AccessLayer* al);  // PASSIVE: its agents registered
  ~ConnectionManager();                         // PASSIVE
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  // The verbs (cm_handlers.cc checked handles and lengths).
  kernel::Status Listen(CepObj* cep, const abi::CepListenIn& in);
  // SendReq/SendRep take the QP's attributes as the CA answered CiQueryQp (the verb's
  // coroutine asked, after the checks of Check*, which need no CA).
  static kernel::Status CheckReq(QpObj* qp, const abi::CmReqParams& params);
  static kernel::Status CheckRep(const abi::CmRepParams& params);
  kernel::Status SendReq(CepObj* cep, QpObj* qp, const abi::CmReqParams& params,
                         std::span<const uint8_t> private_data, const abi::QpAttributes& qa);
  kernel::Status SendRep(CepObj* cep, QpObj* qp, const abi::CmRepParams& params,
                         std::span<const uint8_t> private_data, const abi::QpAttributes& qa);
  kernel::Status SendRtu(CepObj* cep, std::span<const uint8_t> private_data);
  kernel::Status SendRej(CepObj* cep, uint16_t reason, std::span<const uint8_t> ari,
                         std::span<const uint8_t> private_data);
  kernel::Status SendMra(CepObj* cep, uint8_t service_timeout,
                         std::span<const uint8_t> private_data);
  kernel::Status SendDreq(CepObj* cep, std::span<const uint8_t> private_data);
  kernel::Status SendDrep(CepObj* cep, std::span<const uint8_t> private_data);
  kernel::Status SendLap(CepObj* cep, std::span<const uint8_t> path, uint8_t response_timeout,
                         std::span<const uint8_t> private_data);  // cm_lap.cc
  kernel::Status SendApr(CepObj* cep, uint8_t status, std::span<const uint8_t> info,
                         std::span<const uint8_t> private_data);
  kernel::Status SendSidrReq(CepObj* cep, uint64_t service_id,  // cm_sidr.cc
                             std::span<const uint8_t> path, uint32_t timeout_ms,
                             uint32_t max_retries, std::span<const uint8_t> private_data);
  kernel::Status SendSidrRep(CepObj* cep, QpObj* qp, uint8_t status, uint32_t qkey,
                             std::span<const uint8_t> info, std::span<const uint8_t> private_data);
  kernel::Status RtrAttributes(CepObj* cep, abi::QpModifyAttributes* out);
  kernel::Status RtsAttributes(CepObj* cep, abi::QpModifyAttributes* out);
  // The CEP's handle went (DestroyCep, file cleanup): a listen stops, a connection being
  // set up is rejected, an established one disconnected (the CM keeps it through DREQ and
  // time-wait).
  void OnCepDestroyed(CepObj* cep);

  // Counters for tests and diagnostics.
  std::atomic<uint64_t> resent{0};    // answers sent again for a duplicate (REP, MRA, RTU, DREP)
  std::atomic<uint64_t> retries{0};   // REQ/REP/DREQ sent again after a timeout
  std::atomic<uint64_t> rejected{0};  // REJs the CM sent on its own (no listen, stale, ...)

 private:
  // A CM MAD from QP1 (DISPATCH, no AL lock held).
  void OnMad(GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin);
  void Flush(Work& work);  // after the lock
  // Runs `body(work)` under the lock, then sends and posts what it collected.
  template <typename Body>
  kernel::Status Locked(Body&& body) {
    Work work;
    kernel::Status status;
    {
      kernel::SpinLockGuard guard(lock_);
      status = body(work);
    }
    Flush(work);
    return status;
  }

  // ---- Under lock_ ----
  // Tables.
  void InsertLocked(CepObj* cep);  // a new local ID; the tables hold a reference
  void InsertRemoteLocked(CepObj* cep);
  void RemoveLocked(CepObj* cep, Work& work);  // out of the tables, back to IDLE
  CepObj* FindLocalLocked(uint32_t local_id);
  CepObj* FindRemoteLocked(uint32_t remote_id, uint64_t remote_ca_guid);
  // The CEP a received message names by its RemoteCommunicationID (null: malformed or
  // unknown).
  template <typename Message>
  CepObj* AddressedLocked(std::span<const uint8_t> mad, Message* message) {
    if (!message->Unpack(CmMessage(mad))) return nullptr;
    return FindLocalLocked(message->RemoteCommunicationID);
  }
  CepObj* FindListenLocked(uint64_t service_id, uint64_t port_guid,
                           std::span<const uint8_t> private_data);
  // A request on `listen` (REQ, SIDR_REQ): the new CEP (the listen's owner, context and
  // parent; null when the listen is going), then `type` with it queued on the listen.
  CepObj* NewCepLocked(CepObj* listen);
  void OfferCepLocked(CepObj* listen, CepObj* cep, abi::CepEventType type,
                      std::span<const uint8_t> mad, Work& work);
  // Sending.
  void SendLocked(CepObj* cep, uint16_t attribute, std::span<const uint8_t> message, Work& work,
                  bool keep = true);
  void Event(CepObj* cep, abi::CepEventType type, std::span<const uint8_t> mad, Work& work);
  // Roles.
  void OnReqLocked(GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin,
                   const abi::PortAttributes& port, Work& work);  // cm_passive.cc
  void OnRepLocked(std::span<const uint8_t> mad, Work& work);     // cm_active.cc
  void OnRtuLocked(std::span<const uint8_t> mad, Work& work);     // cm_passive.cc
  void OnMraLocked(std::span<const uint8_t> mad, Work& work);     // cm_passive.cc
  void OnRejLocked(std::span<const uint8_t> mad, Work& work);     // cm_reject.cc
  void OnDreqLocked(GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin,
                    Work& work);                                         // cm_disconnect.cc
  void OnDrepLocked(std::span<const uint8_t> mad, Work& work);           // cm_disconnect.cc
  void OnLapLocked(std::span<const uint8_t> mad, Work& work);            // cm_lap.cc
  void OnAprLocked(std::span<const uint8_t> mad, Work& work);            // cm_lap.cc
  bool OnMraLapLocked(CepObj* cep, const softib::mad::MsgRcptAck& mra);  // cm_lap.cc
  bool SendMraLapLocked(CepObj* cep, softib::mad::MsgRcptAck* mra);      // cm_lap.cc
  void SendLapExchangeLocked(CepObj* cep, uint16_t attribute, std::span<const uint8_t> message,
                             Work& work);  // cm_lap.cc: kept in lap_sent
  void OnSidrReqLocked(GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin,
                       const abi::PortAttributes& port, Work& work);  // cm_sidr.cc
  void OnSidrRepLocked(std::span<const uint8_t> mad, Work& work);     // cm_sidr.cc
  void SendSidrRepLocked(CepObj* cep, uint8_t status, uint32_t qpn, uint32_t qkey,
                         std::span<const uint8_t> info, std::span<const uint8_t> private_data,
                         Work& work);
  // A REJ answering a message no CEP takes (cm_reject.cc).
  void RejectUnknownLocked(const std::shared_ptr<AlCa>& ca, uint8_t port, const MadAddress& to,
                           uint32_t local_id, uint32_t remote_id, uint8_t message, uint16_t reason,
                           Work& work);
  // MessageRejected follows the state: REQ before our REP, REP after the peer's, else other.
  void SendRejLocked(CepObj* cep, uint16_t reason, std::span<const uint8_t> ari,
                     std::span<const uint8_t> private_data, Work& work);
  void SendDreqLocked(CepObj* cep, std::span<const uint8_t> private_data, Work& work);
  void SendDrepLocked(CepObj* cep, std::span<const uint8_t> private_data, Work& work);
  void EnterTimewaitLocked(CepObj* cep, Work& work);
  // Timers (cm_timers.cc).
  void ArmLocked(CepObj* cep, CepTimer what, std::chrono::nanoseconds timeout, uint32_t retries);
  void DisarmLocked(CepObj* cep);
  // The deadline index: a CEP is in it while its timer is set (under its deadline).
  void QueueLocked(CepObj* cep);
  void UnqueueLocked(CepObj* cep);
  void RescheduleLocked();
  static void TimerDpc(kernel::Kdpc*, void* context, void*, void*);
  void OnTimer();
  void ExpireLocked(CepObj* cep, Work& work);

  AccessLayer* const al_;
  kernel::KSpinLock lock_;
  std::map<uint32_t, CepObj*> by_local_;
  std::map<std::pair<uint32_t, uint64_t>, CepObj*> by_remote_;
  // The same CEPs by the peer's (CA GUID, QPN): a new REQ from a QP we are connected to
  // finds the stale connection without a scan.
  std::multimap<std::pair<uint64_t, uint32_t>, CepObj*> by_remote_qp_;
  std::set<CepObj*> listens_;
  std::map<std::pair<uint32_t, uint16_t>, CepObj*> sidr_by_remote_;  // RequestID, SLID
  uint32_t next_id_;
  bool closing_ = false;
  // CEPs with a timer set, earliest deadline first: arming, expiry and the kernel timer's
  // next due time cost O(log n), not a scan of every CEP (10,000 connections being set up).
  std::set<std::pair<std::chrono::steady_clock::time_point, CepObj*>> deadlines_;
  kernel::Ktimer timer_{};
  kernel::Kdpc timer_dpc_{};
  std::unique_ptr<GsiRegistration> agents_;  // reset first: its callbacks use the rest
};

// 4.096 us * 2^value, as the CM's timeout fields say.
std::chrono::nanoseconds CmTime(uint8_t value);

}  // namespace softib::al::cm
