// AL-internal QP1 agents: a MadAgent whose news go to callbacks instead of a client's event
// queue, and the registration that puts one on every port of every CA.
#include "runtime/al/src/gsi_agent.h"

#include <thread>

#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"

namespace softib::al {

using kernel::Status;

namespace {

MadOrigin OriginOf(const abi::MadEventRecord& record) {
  MadOrigin origin;
  origin.wc.src_qp = record.remote_qpn;
  origin.wc.slid = static_cast<uint16_t>(record.remote_lid);
  origin.wc.pkey_index = record.pkey_index;
  origin.wc.sl = record.remote_sl;
  origin.wc.dlid_path_bits = record.path_bits;
  origin.wc.flags = record.wc_flags;
  origin.grh = (record.wc_flags & abi::WcFlags::GRH) == abi::WcFlags::GRH;
  origin.sgid = record.sgid;
  return origin;
}

}  // namespace

// ---- GsiAgent ------------------------------------------------------------------------------

GsiAgent::GsiAgent(GsiRegistration* registration, SpecialQp* sqp, const abi::MadSvcParams& params)
    : MadAgent(params), registration_(registration), sqp_(sqp) {}

GsiAgent::~GsiAgent() = default;

void GsiAgent::Release() {
  if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

Status GsiAgent::Send(const MadAddress& to, std::span<const uint8_t> mad,
                      const GsiSendOptions& options, GsiSendDone done, uint64_t* id) {
  if (mad.size() != mad::kMadSize) return Status::INVALID_SETTING;
  if (options.response_expected && options.timeout_ms == 0) return Status::INVALID_SETTING;
  uint64_t ours;
  {
    kernel::SpinLockGuard guard(lock_);
    if (closed_) return Status::INSUFFICIENT_RESOURCES;
    ours = next_id_++;
    pending_[ours].done = std::move(done);
  }
  MadSendSpec spec;
  spec.to = to;
  spec.context = ours;
  spec.response_expected = options.response_expected;
  spec.timeout_ms = options.timeout_ms;
  spec.retries = options.retries;
  auto send = MakeMadSend(this, mad, spec);
  const Status s = sqp_->Send(send);
  kernel::SpinLockGuard guard(lock_);
  auto it = pending_.find(ours);
  if (s != Status::SUCCESS) {
    if (it != pending_.end()) pending_.erase(it);
    return s;
  }
  if (it != pending_.end()) it->second.send_id = send->send_id;
  if (id != nullptr) *id = ours;
  return Status::SUCCESS;
}

Status GsiAgent::Cancel(uint64_t id) {
  uint64_t send_id;
  {
    kernel::SpinLockGuard guard(lock_);
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.send_id == 0) return Status::NOT_FOUND;
    send_id = it->second.send_id;
  }
  return sqp_->Cancel(this, send_id);
}

// A response is kept until its send completes (the special QP posts the two in that order);
// the completion calls the send's callback once.
void GsiAgent::Post(const abi::MadEventRecord& record, std::vector<uint8_t> mad) {
  GsiSendDone done;
  std::vector<uint8_t> response;
  MadOrigin origin;
  {
    kernel::SpinLockGuard guard(lock_);
    if (closed_) return;
    if (record.kind == abi::MadEventKind::RECEIVED && record.send_id != 0) {
      auto it = pending_.find(record.send_context);
      if (it != pending_.end()) {
        it->second.response = std::move(mad);
        it->second.origin = OriginOf(record);
      }
      return;
    }
    if (record.kind == abi::MadEventKind::SEND_COMPLETED) {
      auto it = pending_.find(record.send_context);
      if (it == pending_.end()) return;
      done = std::move(it->second.done);
      response = std::move(it->second.response);
      origin = it->second.origin;
      pending_.erase(it);
      if (!done) return;
    }
    registration_->in_callbacks_.fetch_add(1, std::memory_order_acq_rel);
  }
  if (done) {
    done(record.status, response, origin);
  } else if (registration_->spec_.on_receive) {
    registration_->spec_.on_receive(*this, mad, OriginOf(record));
  }
  registration_->in_callbacks_.fetch_sub(1, std::memory_order_acq_rel);
}

void GsiAgent::Close() {
  sqp_->RemoveService(this);  // outstanding sends complete CANCELED (their callbacks run)
  std::map<uint64_t, Pending> left;
  {
    kernel::SpinLockGuard guard(lock_);
    closed_ = true;
    left.swap(pending_);  // completions another DPC still carries are dropped: answer here
  }
  for (auto& [id, pending] : left) {
    if (pending.done) pending.done(abi::WcStatus::CANCELED, {}, MadOrigin{});
  }
}

// ---- GsiRegistration -----------------------------------------------------------------------

GsiRegistration::GsiRegistration(AccessLayer* al, GsiAgentSpec spec)
    : al_(al), spec_(std::move(spec)) {
  params_.mgmt_class = spec_.mgmt_class;
  params_.mgmt_version = spec_.mgmt_version;
  params_.svc_type = spec_.rmpp ? abi::MadSvcType::RMPP : abi::MadSvcType::DEFAULT;
  for (uint8_t method : spec_.methods) {
    params_.method_mask[method / 8] |= static_cast<uint8_t>(1u << (method % 8));
  }
  params_.support_unsolicited = spec_.methods.empty() ? 0 : 1;
}

std::unique_ptr<GsiRegistration> GsiRegistration::Register(AccessLayer* al, GsiAgentSpec spec) {
  std::unique_ptr<GsiRegistration> registration(new GsiRegistration(al, std::move(spec)));
  al->pnp_mutex.Acquire();
  al->gsi_registrations.insert(registration.get());
  for (const auto& ca : al->Cas()) {
    if (!ca->removed.load()) registration->Start(ca.get());
  }
  al->pnp_mutex.Release();
  return registration;
}

GsiRegistration::~GsiRegistration() { Deregister(); }

void GsiRegistration::Deregister() {
  al_->pnp_mutex.Acquire();
  al_->gsi_registrations.erase(this);
  std::vector<AlCa*> cas;
  {
    kernel::SpinLockGuard guard(lock_);
    for (const auto& [key, agent] : agents_) cas.push_back(key.first);
  }
  for (AlCa* ca : cas) Stop(ca);
  al_->pnp_mutex.Release();
  // A callback another DPC started before its agent closed ends before the spec goes.
  while (in_callbacks_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void GsiRegistration::Start(AlCa* ca) {
  for (uint8_t port = 1; port <= ca->ci->num_ports(); ++port) {
    const std::size_t index = (port - 1u) * 2u + 1u;
    if (index >= ca->special_qps.size()) break;
    {
      kernel::SpinLockGuard guard(lock_);
      if (agents_.contains({ca, port})) continue;
    }
    auto* agent = new GsiAgent(this, ca->special_qps[index].get(), params_);
    if (agent->sqp_->AddService(agent) != Status::SUCCESS) {
      agent->Release();  // QP1 did not start, or a client took the methods first
      continue;
    }
    kernel::SpinLockGuard guard(lock_);
    agents_[{ca, port}] = agent;
  }
}

void GsiRegistration::Stop(AlCa* ca) {
  std::vector<GsiAgent*> gone;
  {
    kernel::SpinLockGuard guard(lock_);
    for (auto it = agents_.begin(); it != agents_.end();) {
      if (it->first.first == ca) {
        gone.push_back(it->second);
        it = agents_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (GsiAgent* agent : gone) {
    agent->Close();
    agent->Release();
  }
}

GsiAgentRef GsiRegistration::Find(uint64_t ca_guid, uint8_t port) {
  kernel::SpinLockGuard guard(lock_);
  for (const auto& [key, agent] : agents_) {
    if (key.first->guid == ca_guid && key.second == port) return GsiAgentRef(agent);
  }
  return {};
}

void GsiRegistration::OnCaArrival(AccessLayer* al, AlCa* ca) {
  for (GsiRegistration* registration : al->gsi_registrations) registration->Start(ca);
}

void GsiRegistration::OnCaRemoval(AccessLayer* al, AlCa* ca) {
  for (GsiRegistration* registration : al->gsi_registrations) registration->Stop(ca);
}

}  // namespace softib::al
