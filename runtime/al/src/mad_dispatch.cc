// Who gets a MAD that arrived on a special QP (IBA 13.5.3, as Linux's mad.c and IBAL's
// al_mad.c route them): a response goes to the agent whose id is in the high half of its
// TID and answers the send with that TID; a request goes to the service registered for its
// class, version and method; RMPP segments go through reassembly first (rmpp_flow.cc).
#include <endian.h>

#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Status;

namespace {

bool SameClass(uint8_t a, uint8_t b) {
  // LID-routed and directed-route SMPs are one class to an agent (the SM takes both).
  return a == b || (mad::IsSmpClass(a) && mad::IsSmpClass(b));
}

bool MethodsOverlap(const abi::MadSvcParams& a, const abi::MadSvcParams& b) {
  for (int i = 0; i < 16; ++i) {
    if ((a.method_mask[i] & b.method_mask[i]) != 0) return true;
  }
  return false;
}

}  // namespace

Status SpecialQp::AddService(MadAgent* svc) {
  kernel::SpinLockGuard guard(lock);
  if (stopped_) return Status::INSUFFICIENT_RESOURCES;
  if (svc->params.support_unsolicited != 0) {
    for (const MadAgent* other : services_) {
      if (other->params.support_unsolicited == 0) continue;
      if (!SameClass(other->params.mgmt_class, svc->params.mgmt_class)) continue;
      if (other->params.mgmt_version != svc->params.mgmt_version) continue;
      if (MethodsOverlap(other->params, svc->params)) return Status::RESOURCE_BUSY;
    }
  }
  svc->agent_id = ca_->next_agent_id.fetch_add(1, std::memory_order_relaxed);
  agents_[svc->agent_id] = svc;
  services_.insert(svc);
  return Status::SUCCESS;
}

void SpecialQp::RemoveService(MadAgent* svc) {
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    std::vector<std::shared_ptr<MadSend>> sends;
    for (auto& [id, send] : svc->sends) sends.push_back(send);
    for (auto& send : sends) Finish(send, abi::WcStatus::CANCELED, after);
    agents_.erase(svc->agent_id);
    services_.erase(svc);
    std::erase_if(reassembly_,
                  [svc](const auto& entry) { return std::get<0>(entry.first) == svc; });
  }
  for (auto& f : after) f();
}

MadAgent* SpecialQp::FindRequestServiceLocked(const uint8_t* m) {
  for (MadAgent* svc : services_) {
    if (!SameClass(svc->params.mgmt_class, mad::Class(m))) continue;
    if (svc->params.mgmt_version != mad::ClassVersion(m)) continue;
    if (svc->TakesUnsolicited(mad::Method(m) & 0x7F)) return svc;
  }
  return nullptr;
}

void SpecialQp::DeliverLocked(MadAgent* svc, std::vector<uint8_t> bytes, const MadOrigin& origin,
                              const std::shared_ptr<MadSend>& answered, After& after) {
  abi::MadEventRecord record{};
  record.kind = abi::MadEventKind::RECEIVED;
  record.status = abi::WcStatus::SUCCESS;
  if (answered) {
    record.send_id = answered->send_id;
    record.send_context = answered->context;
  }
  record.remote_qpn = origin.wc.src_qp;
  record.remote_lid = origin.wc.slid;
  record.pkey_index = origin.wc.pkey_index;
  record.remote_sl = origin.wc.sl;
  record.path_bits = origin.wc.dlid_path_bits;
  record.wc_flags = origin.wc.flags;
  record.sgid = origin.sgid;
  svc->Hold();  // until the event is posted
  after.push_back([svc, record, bytes = std::move(bytes)]() mutable {
    svc->Post(record, std::move(bytes));
    svc->Release();
  });
}

// The outstanding send of `owner` that `response` answers (by TID and class).
std::shared_ptr<MadSend> SpecialQp::AnsweredLocked(MadAgent* owner, const uint8_t* response) {
  if (owner == nullptr) return nullptr;
  const uint64_t tid = mad::Tid(response);
  for (auto& [id, send] : owner->sends) {
    if (send->response_expected && !send->done && send->tid == tid &&
        SameClass(send->mgmt_class, mad::Class(response))) {
      return send;
    }
  }
  return nullptr;
}

// An ACK, STOP or ABORT of no transfer the AL runs, on its way to a service the AL does
// RMPP for: it is neither that service's answer nor a request. (A service without RMPP
// gets such bytes as they are: to it they are its class's data.)
bool SpecialQp::StrayRmppControlLocked(const uint8_t* m, MadAgent* owner) {
  if (!rmpp::IsActive(m) || rmpp::Type(m) == rmpp::kTypeData) return false;
  MadAgent* target = mad::IsResponse(m) ? owner : FindRequestServiceLocked(m);
  return target != nullptr && target->rmpp();
}

void SpecialQp::Route(const uint8_t* m, const MadOrigin& origin) {
  if (m[0] != 1) {  // BaseVersion 1 only (IBA 13.4.3)
    dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint8_t after_smi[mad::kMadSize];
  if (smi()) {
    if (SmiReceive(m, origin, after_smi)) return;
    m = after_smi;  // an SM's agent answers a directed-route SMP along its recorded path
  }
  After after;
  bool unclaimed_request = false;
  {
    kernel::SpinLockGuard guard(lock);
    if (stopped_) return;
    MadAgent* owner = nullptr;
    if (auto a = agents_.find(mad::AgentOfTid(mad::Tid(m))); a != agents_.end()) owner = a->second;
    if (rmpp::IsActive(m) && OnRmppReceive(m, origin, owner, after)) {
      // taken by an RMPP transfer (rmpp_flow.cc)
    } else if (StrayRmppControlLocked(m, owner)) {
      dropped.fetch_add(1, std::memory_order_relaxed);
    } else if (mad::IsResponse(m)) {
      std::shared_ptr<MadSend> answered = AnsweredLocked(owner, m);
      if (answered && OnRedirectLocked(answered, m, mad::kMadSize, after)) {
        // a redirect the AL follows (mad_redirect.cc)
      } else if (answered) {
        DeliverLocked(owner, std::vector<uint8_t>(m, m + mad::kMadSize), origin, answered, after);
        Finish(answered, abi::WcStatus::SUCCESS, after);
      } else {
        unmatched.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (MadAgent* svc = FindRequestServiceLocked(m)) {
      DeliverLocked(svc, std::vector<uint8_t>(m, m + mad::kMadSize), origin, nullptr, after);
    } else {
      unclaimed_request = true;
    }
  }
  for (auto& f : after) f();
  if (unclaimed_request && !(!smi() && GsiLocalAgent(m, origin)))
    dropped.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace softib::al
