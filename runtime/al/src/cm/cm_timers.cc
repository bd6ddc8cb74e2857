// The CM's retry and time-wait timer: one kernel timer due at the earliest CEP deadline
// (an ordered index of the armed CEPs).
// An expired REQ/REP/DREQ is sent again while MaxCMRetries lasts; then a REQ or REP ends
// with REJ(timeout) to the peer and REQ_TIMEOUT/REP_TIMEOUT, a DREQ with DREQ_TIMEOUT and
// time-wait; a LAP with LAP_TIMEOUT, a SIDR_REQ with SIDR_REQ_TIMEOUT; time-wait ends with
// TIMEWAIT_EXIT.
#include <endian.h>

#include <cstring>

#include "runtime/al/src/cm/cm.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

namespace wire = softib::mad;

void ConnectionManager::ArmLocked(CepObj* cep, CepTimer what, std::chrono::nanoseconds timeout,
                                  uint32_t retries) {
  UnqueueLocked(cep);
  cep->timer = what;
  cep->timeout = std::max<std::chrono::nanoseconds>(timeout, std::chrono::microseconds(100));
  cep->retries_left = retries;
  cep->deadline = std::chrono::steady_clock::now() + cep->timeout;
  QueueLocked(cep);
}

void ConnectionManager::DisarmLocked(CepObj* cep) {
  UnqueueLocked(cep);
  cep->timer = CepTimer::NONE;
}

void ConnectionManager::QueueLocked(CepObj* cep) {
  const auto [it, inserted] = deadlines_.emplace(cep->deadline, cep);
  // Only a new earliest deadline moves the kernel timer.
  if (inserted && it == deadlines_.begin()) RescheduleLocked();
}

void ConnectionManager::UnqueueLocked(CepObj* cep) {
  if (cep->timer != CepTimer::NONE) deadlines_.erase({cep->deadline, cep});
}

void ConnectionManager::RescheduleLocked() {
  if (closing_ || deadlines_.empty()) return;
  const auto due = std::max<std::chrono::nanoseconds>(
      deadlines_.begin()->first - std::chrono::steady_clock::now(), std::chrono::microseconds(100));
  kernel::KeSetTimer(&timer_, due, &timer_dpc_);
}

void ConnectionManager::TimerDpc(kernel::Kdpc*, void* context, void*, void*) {
  static_cast<ConnectionManager*>(context)->OnTimer();
}

void ConnectionManager::OnTimer() {
  Work work;
  {
    kernel::SpinLockGuard guard(lock_);
    if (closing_) return;
    const auto now = std::chrono::steady_clock::now();
    std::vector<CepObj*> due;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      due.push_back(deadlines_.begin()->second);  // out of the index; its timer still set
      deadlines_.erase(deadlines_.begin());
    }
    for (CepObj* cep : due) ExpireLocked(cep, work);
    RescheduleLocked();
  }
  Flush(work);
}

void ConnectionManager::ExpireLocked(CepObj* cep, Work& work) {
  const CepTimer what = std::exchange(cep->timer, CepTimer::NONE);
  if (what == CepTimer::TIMEWAIT) {
    Event(cep, abi::CepEventType::TIMEWAIT_EXIT, {}, work);
    RemoveLocked(cep, work);
    return;
  }
  const bool lap = what == CepTimer::LAP;
  if (cep->retries_left > 0 && (cep->has_last || lap)) {
    --cep->retries_left;
    cep->timer = what;
    cep->deadline = std::chrono::steady_clock::now() + cep->timeout;
    deadlines_.emplace(cep->deadline, cep);  // OnTimer reschedules after the expiries
    work.sends.push_back({cep->ca, cep->port, cep->peer_cm, lap ? cep->lap_sent : cep->last});
    retries.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  switch (what) {
    case CepTimer::REQ:
    case CepTimer::REP: {
      // REJ(timeout), the ARI our CA GUID (IBA 12.6.7.2).
      uint8_t ari[8];
      const uint64_t guid = htobe64(cep->ca->guid);
      std::memcpy(ari, &guid, sizeof(ari));
      SendRejLocked(cep, static_cast<uint16_t>(wire::CmRejReason::TIMEOUT), ari, {}, work);
      Event(cep,
            what == CepTimer::REQ ? abi::CepEventType::REQ_TIMEOUT : abi::CepEventType::REP_TIMEOUT,
            {}, work);
      RemoveLocked(cep, work);
      break;
    }
    case CepTimer::DREQ:
      Event(cep, abi::CepEventType::DREQ_TIMEOUT, {}, work);
      EnterTimewaitLocked(cep, work);
      break;
    case CepTimer::LAP:  // the connection stays as it was
      cep->lap_state = LapState::IDLE;
      Event(cep, abi::CepEventType::LAP_TIMEOUT, {}, work);
      break;
    case CepTimer::SIDR:
      Event(cep, abi::CepEventType::SIDR_REQ_TIMEOUT, {}, work);
      RemoveLocked(cep, work);
      break;
    default:
      break;
  }
}

}  // namespace softib::al::cm
