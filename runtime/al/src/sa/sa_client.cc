#include "runtime/al/src/sa/sa_client.h"

#include <endian.h>

#include "runtime/al/src/gsi_agent.h"

namespace softib::al::sa {

using kernel::Status;

namespace {

constexpr uint32_t kQp1Qkey = 0x80010000;
constexpr uint32_t kDefaultTimeoutMs = 1000;

bool IsRedoEvent(abi::AsyncEventType type) {
  return type == abi::AsyncEventType::SM_CHANGE || type == abi::AsyncEventType::LID_CHANGE ||
         type == abi::AsyncEventType::CLIENT_REREGISTER || type == abi::AsyncEventType::PORT_ACTIVE;
}

bool DropsCache(abi::AsyncEventType type) {
  return IsRedoEvent(type) || type == abi::AsyncEventType::PKEY_CHANGE ||
         type == abi::AsyncEventType::PORT_DOWN || type == abi::AsyncEventType::GID_CHANGE;
}

Status StatusOf(abi::WcStatus status) {
  switch (status) {
    case abi::WcStatus::SUCCESS:
      return Status::SUCCESS;
    case abi::WcStatus::CANCELED:
      return Status::CANCELED;
    default:
      return Status::TIMEOUT;  // no answer: retries ran out, or the send itself failed
  }
}

}  // namespace

SaClient::SaClient(AccessLayer* al) : al_(al) {}
SaClient::~SaClient() { Stop(); }

void SaClient::Start() {
  GsiAgentSpec spec;
  spec.mgmt_class = kSaClass;
  spec.mgmt_version = kSaClassVersion;
  spec.rmpp = true;
  spec.methods = {kReport};
  spec.on_receive = [this](GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin) {
    OnReceive(mad, origin, agent.ca()->guid, agent.port());
  };
  agents_ = GsiRegistration::Register(al_, std::move(spec));
}

void SaClient::Stop() { agents_.reset(); }

Status SaClient::FindPort(uint64_t port_guid_be, SaPort* out) {
  for (const auto& ca : al_->Cas()) {
    std::vector<abi::PortAttributes> ports;
    if (!ca->CachedAllPorts(&ports)) continue;  // the port cache (al_internal.h)
    for (std::size_t i = 0; i < ports.size(); ++i) {
      if (ports[i].port_guid != port_guid_be) continue;
      if (ports[i].link_state != 4 || ports[i].sm_lid == 0) return Status::INVALID_PORT_STATE;
      *out = SaPort{ca, static_cast<uint8_t>(i + 1), be64toh(port_guid_be), ports[i]};
      return Status::SUCCESS;
    }
  }
  return Status::INVALID_GUID;
}

Status SaClient::Send(const SaPort& port, const SaRequest& request, uint32_t timeout_ms,
                      uint32_t retries, SaDone done, SaTicket* ticket) {
  if (!agents_) return Status::INSUFFICIENT_RESOURCES;
  GsiAgentRef agent = agents_->Find(port.ca->guid, port.port);
  if (!agent) return Status::INVALID_PORT_STATE;
  MadAddress to;
  to.av.port_num = port.port;
  to.av.dlid = port.attributes.sm_lid;
  to.av.sl = port.attributes.sm_sl;
  to.remote_qpn = 1;
  to.remote_qkey = kQp1Qkey;
  to.pkey_index = 0;
  const std::vector<uint8_t> mad = BuildSaMad(request, next_tid_.fetch_add(1));
  GsiSendOptions options;
  options.response_expected = true;
  options.timeout_ms = timeout_ms != 0 ? timeout_ms : kDefaultTimeoutMs;
  options.retries = retries;
  uint64_t id = 0;
  const Status status = agent->Send(
      to, mad, options,
      [done = std::move(done)](abi::WcStatus wc, std::span<const uint8_t> response,
                               const MadOrigin&) {
        const Status result = StatusOf(wc);
        SaAnswer answer;
        if (result == Status::SUCCESS) answer = ParseSaAnswer(response);
        done(result == Status::SUCCESS && !answer.valid ? Status::TIMEOUT : result, answer);
      },
      &id);
  if (status == Status::SUCCESS && ticket != nullptr) *ticket = {port.ca->guid, port.port, id};
  return status;
}

void SaClient::Cancel(const SaTicket& ticket) {
  if (!ticket || !agents_) return;
  if (GsiAgentRef agent = agents_->Find(ticket.ca_guid, ticket.port)) agent->Cancel(ticket.id);
}

void SaClient::OnReceive(std::span<const uint8_t> mad, const MadOrigin& origin, uint64_t ca_guid,
                         uint8_t port) {
  if (mad.size() < kMadBytes || mad[3] != kReport) return;
  // ReportResponse: the Report's headers and data back, the method flipped (IBA 13.4.8.1).
  std::vector<uint8_t> answer(mad.begin(), mad.begin() + kMadBytes);
  answer[3] = kReportResponse;
  answer[4] = answer[5] = 0;
  if (GsiAgentRef agent = agents_ ? agents_->Find(ca_guid, port) : GsiAgentRef()) {
    MadAddress to = ReturnAddress(origin);
    to.av.port_num = port;
    agent->Send(to, answer, GsiSendOptions{}, nullptr);
  }
  reports.fetch_add(1);
  const uint16_t attribute = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  if (attribute != kNoticeAttribute) return;
  const std::span<const uint8_t> notice = mad.subspan(kSaHeaderEnd, kNoticeBytes);
  for (SaRedo* entry : HeldOnPort(ca_guid, port)) {
    entry->OnReport(notice);
    entry->Release();
  }
}

std::vector<SaRedo*> SaClient::HeldOnPort(uint64_t ca_guid, uint8_t port) {
  std::vector<SaRedo*> out;
  kernel::SpinLockGuard guard(lock_);
  for (SaRedo* redo : redo_) {
    if (!redo->OnPort(ca_guid, port)) continue;
    redo->Hold();
    out.push_back(redo);
  }
  return out;
}

void SaClient::OnPortEvent(AlCa& ca, uint8_t port, abi::AsyncEventType type) {
  if (!DropsCache(type)) return;
  abi::PortAttributes attributes;  // refreshed for this event before it came here
  if (ca.CachedPortAttributes(port, &attributes)) {
    path_cache_.Invalidate(be64toh(attributes.port_guid));
  }
  if (!IsRedoEvent(type)) return;
  for (SaRedo* redo : HeldOnPort(ca.guid, port)) {
    redone.fetch_add(1);
    redo->Redo();
    redo->Release();
  }
}

void SaClient::AddRedo(SaRedo* redo) {
  redo->Hold();
  kernel::SpinLockGuard guard(lock_);
  redo_.insert(redo);
}

void SaClient::RemoveRedo(SaRedo* redo) {
  bool listed;
  {
    kernel::SpinLockGuard guard(lock_);
    listed = redo_.erase(redo) != 0;
  }
  if (listed) redo->Release();
}

SaClient* SaOf(AccessLayer* al) { return al->sa_client.get(); }

}  // namespace softib::al::sa
