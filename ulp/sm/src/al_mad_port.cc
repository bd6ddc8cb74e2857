// MadPort over the AL's user-mode MAD services (runtime/al MAD services, through the channel
// with the generated proxies). One thread: every service keeps several overlapped
// GetMadEvents pending (so the AL completes events while the SM works, without a round trip
// each), all signalling one event; Receive() re-arms the ones it consumed, then looks at
// every request and only then sleeps, so a completion is either seen or wakes it.
#include "softib/sm/al_mad_port.h"

#include <endian.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "softib/channel/protocol.h"
#include "softib/sm/sa.h"
#include "softib/sm/smp.h"
#include "softib/user/access_layer.h"
#include "softib/user/completion_event.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace softib::sm {
namespace {

namespace proxy = user::proxy;
using user::Status;
using SvcHandle = abi::Handle<abi::ObjectType::MadSvc>;

constexpr uint32_t kQKeyGsi = 0x80010000;
constexpr uint32_t kRmppRetries = 3;  // timeouts without progress before the AL gives up
constexpr std::size_t kEventBytes = sizeof(abi::GetMadEventOut);
// GetMadEvents kept pending: the SM's SMP window answers many at a time, the SA's fewer and
// larger (a whole RMPP transfer each).
constexpr std::size_t kSmiWaits = 16;
constexpr std::size_t kSaWaits = 4;
// How many of the caller's timeouts the AL waits for an answer.
constexpr uint32_t kLateAnswers = 4;
constexpr std::chrono::milliseconds kRecheck{5};

// One GetMadEvent kept pending on a service.
struct Wait {
  SvcHandle svc{};
  std::vector<uint8_t> output;  // GetMadEventOut, then the MAD
  user::Overlapped overlapped{};
  bool pending = false;
};

// One registered service; `waits` never resizes once armed (the overlapped must not move).
struct Service {
  SvcHandle svc{};
  std::vector<Wait> waits;
};

std::string Text(const char* what, Status s) { return std::string(what) + ": " + abi::ToString(s); }

class AlMadPort final : public MadPort {
 public:
  ~AlMadPort() override { Close(); }

  bool Open(const AlMadPortOptions& o, std::string* error, AlPortInfo* info) {
    const char* dir = o.run_dir.empty() ? nullptr : o.run_dir.c_str();
    if (Status s = user::OpenAl(dir, &al_); s != Status::SUCCESS)
      return Fail("no node answers in " + (dir ? o.run_dir : user::DefaultRunDir()) +
                      " (is softibd running?): " + abi::ToString(s),
                  error);
    al_open_ = true;
    uint64_t guid = htobe64(o.ca_guid);
    if (o.ca_guid == 0) {
      uint64_t guids[64] = {};
      abi::GetCaGuidsOut out{};
      if (Status s = proxy::GetCaGuids(al_.device, {al_.al}, out, guids); s != Status::SUCCESS)
        return Fail(Text("GetCaGuids", s), error);
      if (out.num_cas == 0) return Fail("the node has no CA", error);
      guid = guids[0];
    }
    if (Status s = user::OpenCaByGuid(al_, guid, 0, &ca_); s != Status::SUCCESS)
      return Fail(Text("OpenCa", s), error);
    ca_open_ = true;
    if (!PickPort(o.port, error)) return false;
    if (o.issm && o.sm_agents && !SetIsSm(true, error)) return false;
    if (!SpecialQps(error)) return false;
    abi::CreateMadPoolOut pool{};
    if (Status s = proxy::CreateMadPool(ca_.device, {ca_.al, 16, 0, 16, 0}, pool);
        s != Status::SUCCESS)
      return Fail(Text("CreateMadPool", s), error);
    pool_ = pool.pool;
    const std::array<uint8_t, 3> sm_methods = {kMethodGet, kMethodSet, kMethodTrap};
    if (o.sm_agents) {
      // One service takes both SMP classes (0x81 and 0x01 are one class to an AL agent).
      if (!Register(smi_qp_, kClassSubnDr, 1, abi::MadSvcType::DEFAULT, sm_methods, kSmiWaits,
                    kMadBytes, &smi_, error))
        return false;
    }
    if (o.sa_agent) {
      std::vector<uint8_t> methods;
      if (o.sa_server)
        methods = {kSaMethodGet, kSaMethodSet, kSaMethodGetTable, kSaMethodDelete,
                   kSaMethodGetMulti};
      if (!Register(gsi_qp_, kClassSubnAdm, kSaClassVersion, abi::MadSvcType::RMPP, methods,
                    kSaWaits, AlMaxRmppBytes(), &sa_, error))
        return false;
    }
    description_ = "AL " + (dir ? o.run_dir : user::DefaultRunDir()) + " CA " + Hex(be64toh(guid)) +
                   " port " + std::to_string(port_num_);
    if (info) *info = info_;
    return true;
  }

  PortStatus Send(const MadBytes& mad, const MadAddress& to, int timeout_ms) override {
    // The port's own SMA is not reached through QP0: the LocalMad verb answers it.
    if (mad[1] == kClassSubnDr && mad[7] == 0 && !(mad[3] & 0x80)) return AskLocalSma(mad);
    Service* svc = ServiceFor(mad[1]);
    if (!svc) return Error("no service for management class " + std::to_string(mad[1]));
    abi::SendMadIn in = SendParams(*svc, to);
    // The AL matches the response to the send only while the send waits for one; retries
    // stay with Transactions (same TID), so the AL sends once, and keeps waiting past
    // Transactions' deadline so that a late answer still completes the transaction.
    if (!(mad[3] & 0x80) && timeout_ms > 0) {
      in.params.response_expected = 1;
      in.params.timeout_ms = static_cast<uint32_t>(timeout_ms) * kLateAnswers;
    }
    in.mad_length = kMadBytes;
    abi::SendMadOut out{};
    if (Status s = proxy::SendMad(ca_.device, in, mad, out); s != Status::SUCCESS)
      return Error(Text("SendMad", s));
    return PortStatus::kOk;
  }

  std::size_t MaxRmppBytes() const override { return sa_.svc.value ? AlMaxRmppBytes() : 0; }

  PortStatus SendRmpp(std::span<const uint8_t> transfer, const MadAddress& to) override {
    if (!sa_.svc.value) return Error("no SubnAdm service");
    if (transfer.size() < kSaHeaderBytes || transfer.size() > AlMaxRmppBytes())
      return Error("RMPP transfer of " + std::to_string(transfer.size()) + " bytes (56.." +
                   std::to_string(AlMaxRmppBytes()) + ")");
    abi::SendMadIn in = SendParams(sa_, to);
    in.params.rmpp_version = 1;
    in.params.retry_count = kRmppRetries;
    in.mad_length = static_cast<uint32_t>(transfer.size());
    abi::SendMadOut out{};
    if (Status s = proxy::SendMad(ca_.device, in, transfer, out); s != Status::SUCCESS)
      return Error(Text("SendMad (RMPP)", s));
    return PortStatus::kOk;
  }

  PortStatus Receive(ReceivedMad& out, int timeout_ms) override {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (!local_.empty()) {
        out = std::move(local_.front());
        local_.pop_front();
        return PortStatus::kOk;
      }
      const std::vector<Wait*> waits = Waits();
      for (Wait* w : waits) {
        if (w->pending) continue;
        if (!Arm(*w)) return PortStatus::kError;
        recheck_ = true;
      }
      // Round robin, so a busy service cannot starve the others.
      for (std::size_t i = 0; i < waits.size(); ++i) {
        Wait& w = *waits[(next_ + i) % waits.size()];
        uint32_t bytes = 0;
        const Status st = user::GetOverlappedResult(ca_.device, &w.overlapped, &bytes, false);
        if (st == Status::PENDING) continue;
        w.pending = false;
        next_ = (next_ + i + 1) % waits.size();
        const PortStatus r = Consume(w, st, bytes, out);
        if (r != PortStatus::kTimeout) return r;  // a MAD, or a broken channel
      }
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= std::chrono::milliseconds::zero()) return PortStatus::kTimeout;
      // The runtime signals a completion just before its status turns final, and arming a
      // request resets the shared event: a completion signalled before that reset may not
      // be final at the check above. After arming, look again soon rather than sleep on it.
      if (recheck_) {
        if (!event_.WaitFor(std::min(left, kRecheck))) recheck_ = false;
      } else {
        event_.WaitFor(left);
      }
    }
  }

  std::string Describe() const override { return description_; }
  std::string LastError() const override { return error_; }

 private:
  static std::string Hex(uint64_t v) {
    char text[20];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return text;
  }

  bool Fail(const std::string& message, std::string* error) {
    if (error) *error = message;
    return false;
  }
  PortStatus Error(std::string message) {
    error_ = std::move(message);
    return PortStatus::kError;
  }

  bool PickPort(int wanted, std::string* error) {
    std::vector<abi::PortAttributes> ports(8);
    abi::QueryCaOut q{};
    if (Status s = proxy::QueryCa(ca_.device, {ca_.ca}, q, ports); s != Status::SUCCESS)
      return Fail(Text("QueryCa", s), error);
    ports.resize(std::min<std::size_t>(q.num_ports, ports.size()));
    if (ports.empty()) return Fail("the CA has no port", error);
    const abi::PortAttributes* chosen = &ports[0];
    if (wanted > 0) {
      if (static_cast<std::size_t>(wanted) > ports.size())
        return Fail("the CA has " + std::to_string(ports.size()) + " port(s), not " +
                        std::to_string(wanted),
                    error);
      chosen = &ports[static_cast<std::size_t>(wanted) - 1];
    } else {
      for (const abi::PortAttributes& p : ports)
        if (p.link_state == 4) {
          chosen = &p;
          break;
        }
    }
    port_guid_ = chosen->port_guid;
    port_num_ = chosen->port_num;
    info_ = {chosen->lid, chosen->sm_lid, chosen->port_num, chosen->link_state};
    return true;
  }

  bool SpecialQps(std::string* error) {
    abi::AllocPdOut pd{};
    if (Status s = proxy::AllocPd(ca_.device, {ca_.ca, abi::PdType::ALIAS, 0, 0}, pd);
        s != Status::SUCCESS)
      return Fail(Text("AllocPd", s), error);
    abi::CreateCqOut cq{};
    if (Status s = proxy::CreateCq(ca_.device, {ca_.ca, 16, 0, 0}, cq); s != Status::SUCCESS)
      return Fail(Text("CreateCq", s), error);
    for (auto [type, qp] : {std::pair{abi::QpType::SMI_ALIAS, &smi_qp_},
                            std::pair{abi::QpType::GSI_ALIAS, &gsi_qp_}}) {
      abi::GetSpecialQpIn in{};
      in.pd = pd.pd;
      in.send_cq = cq.cq;
      in.recv_cq = cq.cq;
      in.port_guid = port_guid_;
      in.params.qp_type = type;
      in.params.caps = {16, 16, 1, 1, 0, 0};
      abi::GetSpecialQpOut out{};
      if (Status s = proxy::GetSpecialQp(ca_.device, in, out); s != Status::SUCCESS)
        return Fail(Text(type == abi::QpType::SMI_ALIAS ? "GetSpecialQp SMI_ALIAS"
                                                        : "GetSpecialQp GSI_ALIAS",
                         s),
                    error);
      *qp = out.qp;
    }
    return true;
  }

  bool Register(abi::Handle<abi::ObjectType::Qp> qp, uint8_t mgmt_class, uint8_t version,
                abi::MadSvcType type, std::span<const uint8_t> methods, std::size_t waits,
                std::size_t mad_bytes, Service* out, std::string* error) {
    abi::RegMadSvcIn reg{};
    reg.qp = qp;
    reg.pool = pool_;
    reg.params.svc_type = type;
    reg.params.mgmt_class = mgmt_class;
    reg.params.mgmt_version = version;
    reg.params.support_unsolicited = methods.empty() ? 0 : 1;
    for (uint8_t m : methods) reg.params.method_mask[m / 8] |= static_cast<uint8_t>(1u << (m % 8));
    abi::RegMadSvcOut svc{};
    if (Status s = proxy::RegMadSvc(ca_.device, reg, svc); s != Status::SUCCESS)
      return Fail("RegMadSvc class 0x" + Hex(mgmt_class).substr(14) + ": " + abi::ToString(s),
                  error);
    out->svc = svc.svc;
    out->waits.resize(waits);
    for (Wait& w : out->waits) {
      w.svc = svc.svc;
      w.output.resize(kEventBytes + mad_bytes);
    }
    return true;
  }

  std::vector<Wait*> Waits() {
    std::vector<Wait*> out;
    for (Service* s : {&smi_, &sa_})
      for (Wait& w : s->waits) out.push_back(&w);
    return out;
  }

  Service* ServiceFor(uint8_t mgmt_class) {
    Service* s = mgmt_class == kClassSubnDr || mgmt_class == kClassSubnLid ? &smi_
                 : mgmt_class == kClassSubnAdm                             ? &sa_
                                                                           : nullptr;
    return s && s->svc.value ? s : nullptr;
  }

  abi::SendMadIn SendParams(const Service& svc, const MadAddress& to) const {
    abi::SendMadIn in{};
    in.svc = svc.svc;
    in.params.remote_qpn = to.qpn;
    in.params.remote_qkey = htobe32(to.qpn == 1 && to.qkey == 0 ? kQKeyGsi : to.qkey);
    in.params.remote_lid = to.lid;
    in.params.remote_sl = to.sl;
    return in;
  }

  PortStatus AskLocalSma(const MadBytes& mad) {
    abi::LocalMadIn in{};
    in.ca = ca_.ca;
    in.port_num = port_num_;
    std::memcpy(in.request, mad.data(), kMadBytes);
    abi::LocalMadOut out{};
    const Status s = proxy::LocalMad(ca_.device, in, out);
    if (s == Status::SUCCESS) {
      ReceivedMad rx;
      std::memcpy(rx.mad.data(), out.response, kMadBytes);
      rx.mad[3] |= 0x80;  // a response, coming back (D) along the empty path
      rx.mad[4] |= 0x80;
      rx.from.lid = kDirectedRouteLid;
      rx.from.qpn = 0;
      local_.push_back(std::move(rx));
      return PortStatus::kOk;
    }
    // An SMA that does not answer (M_Key) looks like an SMP that got lost: the caller times out.
    if (s == Status::INVALID_PERMISSION || s == Status::INVALID_SETTING) return PortStatus::kOk;
    return Error(Text("LocalMad", s));
  }

  bool Arm(Wait& w) {
    w.overlapped = {};
    w.overlapped.Event = &event_;
    const Status st =
        proxy::GetMadEventAsync(ca_.device, {w.svc}, w.output.data(),
                                static_cast<uint32_t>(w.output.size()), &w.overlapped);
    if (st != Status::PENDING && st != Status::SUCCESS && st != Status::INSUFFICIENT_MEMORY) {
      Error(Text("GetMadEvent", st));
      return false;
    }
    w.pending = true;  // even when already complete: GetOverlappedResult reports it
    return true;
  }

  PortStatus Consume(Wait& s, Status st, uint32_t bytes, ReceivedMad& out) {
    if (st == Status::INSUFFICIENT_MEMORY) {
      abi::GetMadEventOut ev{};
      std::memcpy(&ev, s.output.data(), std::min<std::size_t>(bytes, kEventBytes));
      return Error("a received MAD of " + std::to_string(ev.mad_length) +
                   " bytes does not fit the channel's " + std::to_string(s.output.size()) +
                   "-byte answer");
    }
    if (st != Status::SUCCESS) return Error(Text("GetMadEvent", st));
    return DecodeMadEvent(s.output, bytes, out, &error_);
  }

  // PortInfo:CapabilityMask.IsSM of our port (the port's SMA sends trap 144 to the master);
  // the AL clears it too when this process's CA file closes.
  bool SetIsSm(bool on, std::string* error) {
    abi::ModifyCaIn in{};
    in.ca = ca_.ca;
    in.flags = abi::ModifyCaFlags::PORT_CAPABILITIES;
    (on ? in.cap_set : in.cap_clear) = abi::PortCapabilities::IS_SM;
    in.port_num = port_num_;
    if (Status s = proxy::ModifyCa(ca_.device, in); s != Status::SUCCESS)
      return Fail(Text("ModifyCa(IS_SM)", s), error);
    is_sm_ = on;
    return true;
  }

  void Close() {
    if (is_sm_) (void)SetIsSm(false, nullptr);
    if (ca_open_) {
      // The pending GetMadEvents complete CANCELED before CloseDevice returns; the file's
      // cleanup destroys the services, pool, QPs, CQ and PD (CloseCa would answer busy).
      user::CloseDevice(ca_.device);
      ca_ = {};
    }
    if (al_open_) user::CloseAl(&al_);
    ca_open_ = al_open_ = false;
  }

  user::AlFile al_;
  user::CaFile ca_;
  bool al_open_ = false;
  bool ca_open_ = false;
  bool is_sm_ = false;
  uint64_t port_guid_ = 0;  // network order
  uint8_t port_num_ = 0;
  AlPortInfo info_;
  abi::Handle<abi::ObjectType::Qp> smi_qp_{};
  abi::Handle<abi::ObjectType::Qp> gsi_qp_{};
  abi::Handle<abi::ObjectType::MadPool> pool_{};
  Service smi_, sa_;
  user::CompletionEvent event_;
  std::size_t next_ = 0;
  bool recheck_ = false;
  std::deque<ReceivedMad> local_;
  std::string description_;
  std::string error_;
};

}  // namespace

PortStatus DecodeMadEvent(std::span<const uint8_t> output, uint32_t bytes, ReceivedMad& out,
                          std::string* error) {
  abi::GetMadEventOut ev{};
  if (bytes > output.size() || bytes < kEventBytes) {
    *error = "GetMadEvent answered " + std::to_string(bytes) + " bytes (an event is " +
             std::to_string(kEventBytes) + ")";
    return PortStatus::kError;
  }
  std::memcpy(&ev, output.data(), kEventBytes);
  if (ev.mad_length > bytes - kEventBytes) {
    *error = "GetMadEvent answered " + std::to_string(bytes - kEventBytes) +
             " bytes for a MAD of " + std::to_string(ev.mad_length);
    return PortStatus::kError;
  }
  // Send completions: timeouts and lost sends are Transactions' business (it retries with
  // the same TID). A MAD too short for its common header is dropped, as a runt on a wire.
  if (ev.event.kind != abi::MadEventKind::RECEIVED || ev.mad_length < 24)
    return PortStatus::kTimeout;
  const uint8_t* mad = output.data() + kEventBytes;
  out = ReceivedMad{};
  std::memcpy(out.mad.data(), mad, std::min<std::size_t>(ev.mad_length, kMadBytes));
  const bool rmpp_active = ev.mad_length >= 36 && mad[24] != 0 && (mad[26] & 1);
  if (ev.mad_length != kMadBytes || (rmpp_active && mad[1] == kClassSubnAdm))
    out.transfer.assign(mad, mad + ev.mad_length);
  out.from.lid = static_cast<uint16_t>(ev.event.remote_lid);
  out.from.qpn = ev.event.remote_qpn;
  out.from.sl = ev.event.remote_sl;
  out.from.qkey = kQKeyGsi;
  return PortStatus::kOk;
}

std::size_t AlMaxRmppBytes() {
  const std::size_t send = channel::kMaxInputBytes - sizeof(abi::SendMadIn);
  const std::size_t receive = channel::kMaxOutputBytes - kEventBytes;
  return std::min<std::size_t>({abi::kMaxRmppData, send, receive});
}

std::unique_ptr<MadPort> OpenAlMadPort(const AlMadPortOptions& options, std::string* error,
                                       AlPortInfo* info) {
  auto port = std::make_unique<AlMadPort>();
  if (!port->Open(options, error, info)) return nullptr;
  return port;
}

}  // namespace softib::sm
