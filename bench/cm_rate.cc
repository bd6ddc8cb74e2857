// CM connection establishment and teardown rate (issue 5): kernel clients on the two CAs of
// an in-process node (cabled back to back) connect N RC QP pairs through the AL's CM —
// REQ, then the passive side's REP and RTR, the active side's RTR, RTS and RTU, the passive
// side's RTS at the RTU — with up to W connections being set up at once; all N are held,
// then torn down (DREQ, DREP) W at a time, and every CEP and QP is destroyed; the node's
// object counts must come back to where they were (no leak).
//
// The floor, measured in the same run: MAD round trips (a vendor-class request answered by a
// response) between the same two ports through the same GSI path, W in flight. A connection
// is 3 MADs (REQ, REP, RTU: 1.5 round trips) and a teardown 2 (DREQ, DREP: one): the ratios
// say how close the CM, with its QP transitions, gets to the MAD transport it runs on.
//
//   softib_bench_cm [connections (10000)] [window (256)]
#include <endian.h>

#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "bench_util.h"
#include "kernel/runtime_ioctls_direct.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cm_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_direct.h"
#include "kernel/verbs_qp_ib.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/io.h"
#include "softib/kernel/object_call.h"
#include "softib/mad/mad_sa.h"
#include "softib/stack/node_stack.h"

namespace softib::bench {
namespace {

using kernel::Irp;
using kernel::Status;
constexpr const char* kProgram = "softib_bench_cm";
constexpr uint64_t kServiceId = 0x00000000CB000001ull;
constexpr uint8_t kVendorClass = 0x09;

void Check(Status s, const char* what) {
  if (s != Status::SUCCESS && s != Status::PENDING)
    Die(kProgram, std::string(what) + ": status " + std::to_string(static_cast<int>(s)));
}

// Events of the direct calls that pend (CepGetEvent, GetMadEvent): their IRPs complete
// into one queue the main thread drains.
struct Completion {
  uint64_t tag;  // what the wait was for
  Status status;
};
class Inbox {
 public:
  void Push(Completion c) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(c);
    cv_.notify_one();
  }
  Completion Pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return !queue_.empty(); }))
      Die(kProgram, "no event for 20 s");
    Completion c = queue_.front();
    queue_.pop_front();
    return c;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Completion> queue_;
};

// One outstanding wait: an IRP whose completion routine reports `tag` to the inbox.
struct Wait {
  Inbox* inbox = nullptr;
  uint64_t tag = 0;
  Irp* irp = nullptr;
  abi::CepGetEventOut cep_out{};
  abi::GetMadEventOut mad_out{};
  std::array<uint8_t, 256> mad{};
  Wait() { irp = kernel::IoAllocateIrp(1); }
  ~Wait() { kernel::IoFreeIrp(irp); }
  Irp* Arm() {
    kernel::IoReuseIrp(irp, Status::PENDING);
    kernel::IoSetCompletionRoutine(irp, &Done, this, true, true, true);
    return irp;
  }
  static kernel::CompletionAction Done(kernel::DeviceObject*, Irp* irp, void* context) {
    auto* self = static_cast<Wait*>(context);
    self->inbox->Push({self->tag, irp->IoStatus.Status});
    return kernel::CompletionAction::kMoreProcessingRequired;
  }
};

class Bench {
 public:
  Bench(uint32_t connections, uint32_t window) : n_(connections), window_(window) {
    stack::NodeConfig config;
    config.name = "cm-bench";
    Status status;
    node_ = stack::NodeStack::Boot(config, &status);
    Check(status, "boot");
    Check(kernel::IoCreateDriver(node_->node(), "cm_bench", &Init, nullptr, &driver_), "driver");
    Check(kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_), "device");
    Check(kernel::IbOpenAl(node_->node(), device_, &al_), "IbOpenAl");
    const auto guids = node_->ca_guids();
    a_ = OpenSide(guids[0]);
    b_ = OpenSide(guids[1]);
  }
  ~Bench() {
    // Releasing the AL destroys what is left (the CAs, PDs, CQs, the GSI aliases and their
    // PDs) as a closing file does; the public structures are freed after it.
    kernel::IbReleaseAl(al_);
    for (SideObjects* s : {&a_, &b_}) {
      delete s->alias_pd;
      delete s->cq;
      delete s->pd;
      delete s->ca;
    }
    kernel::IoDeleteDevice(device_);
    kernel::IoUnloadDriver(driver_);
  }

  // The floor: MAD round trips per second between the same two ports (a vendor-class Get
  // from CA A's GSI service, answered by CA B's), `window_` in flight.
  double RunMadFloor(uint32_t round_trips) {
    const uint64_t svc_a = MadService(a_, false), svc_b = MadService(b_, true);
    Inbox inbox;
    Wait wa, wb;
    wa.inbox = wb.inbox = &inbox;
    wa.tag = 0;
    wb.tag = 1;
    auto arm = [&](Wait& w, uint64_t svc) {
      (void)kernel::IbGetMadEvent(al_, {{svc}}, w.mad_out, w.mad, w.Arm());
    };
    auto send = [&](uint64_t svc, uint16_t lid, uint8_t method, uint64_t tid, bool response) {
      std::array<uint8_t, 256> m{};
      m[0] = 1;
      m[1] = kVendorClass;
      m[2] = 1;
      m[3] = method;
      for (int i = 0; i < 8; ++i) m[8 + i] = static_cast<uint8_t>(tid >> (56 - 8 * i));
      m[17] = 0x10;
      abi::SendMadIn in{};
      in.svc.value = svc;
      in.params.remote_qpn = 1;
      in.params.remote_qkey = htobe32(0x80010000);
      in.params.remote_lid = lid;
      in.params.timeout_ms = response ? 2000 : 0;
      in.params.retry_count = response ? 3 : 0;
      in.params.response_expected = response ? 1 : 0;
      in.mad_length = 256;
      abi::SendMadOut out{};
      Check(kernel::IbSendMad(al_, in, m, out), "SendMad");
    };
    arm(wa, svc_a);
    arm(wb, svc_b);
    uint32_t sent = 0, done = 0;
    const uint64_t t0 = NowNs();
    while (sent < round_trips && sent < window_) send(svc_a, b_.lid, 0x01, ++sent, true);
    while (done < round_trips) {
      const Completion c = inbox.Pop();
      Check(c.status, "GetMadEvent");
      Wait& w = c.tag == 0 ? wa : wb;
      const abi::MadEventRecord record = w.mad_out.event;
      if (c.tag == 1 && record.kind == abi::MadEventKind::RECEIVED) {
        std::array<uint8_t, 256> answer = w.mad;
        uint64_t tid = 0;
        for (int i = 0; i < 8; ++i) tid = tid << 8 | answer[8 + i];
        send(svc_b, static_cast<uint16_t>(record.remote_lid), 0x81, tid, false);
      } else if (c.tag == 0 && record.kind == abi::MadEventKind::RECEIVED) {
        ++done;
        if (sent < round_trips) send(svc_a, b_.lid, 0x01, ++sent, true);
      }
      arm(w, c.tag == 0 ? svc_a : svc_b);
    }
    const double rate = round_trips / ((NowNs() - t0) / 1e9);
    // The services go (their pending waits complete CANCELED into the local inbox first).
    Check(kernel::IbDeregMadSvc(al_, {{svc_a}}), "DeregMadSvc");
    Check(kernel::IbDeregMadSvc(al_, {{svc_b}}), "DeregMadSvc");
    for (int i = 0; i < 2; ++i) (void)inbox.Pop();
    return rate;
  }

  // Connections per second, and teardowns per second; leaks checked.
  void RunCm(double* connect_rate, double* teardown_rate) {
    const abi::ObjectCounts before = al::QueryNodeObjectCounts(node_->access_layer());
    std::vector<kernel::IB_QP*> qa(n_), qb(n_);
    for (uint32_t i = 0; i < n_; ++i) {
      qa[i] = NewQp(a_);
      qb[i] = NewQp(b_);
    }
    // CEPs: active i has tag i, passive i has tag n + i, the listen 2n.
    std::vector<uint64_t> cep(2 * n_ + 1, 0);
    std::vector<Wait> waits(2 * n_ + 1);
    for (std::size_t t = 0; t < waits.size(); ++t) {
      waits[t].inbox = &inbox_;
      waits[t].tag = t;
    }
    const uint64_t listen_tag = 2 * n_;
    cep[listen_tag] = CreateCep(listen_tag);
    abi::CepListenIn listen{};
    listen.cep.value = cep[listen_tag];
    listen.service_id = htobe64(kServiceId);
    Check(kernel::IbCepListen(al_, listen), "CepListen");
    auto arm = [&](uint64_t tag) {
      Wait& w = waits[tag];
      // Answered at once or later, the IRP's completion reports it.
      (void)kernel::IbCepGetEvent(al_, {{cep[tag]}}, w.cep_out, w.Arm());
    };
    arm(listen_tag);

    uint32_t next = 0, established = 0, passive_next = 0;
    auto start_one = [&] {
      const uint32_t i = next++;
      cep[i] = CreateCep(i);
      abi::CepSendReqIn req{};
      req.cep.value = cep[i];
      req.qp.value = qa[i]->handle;
      req.params = ReqParams();
      Check(kernel::IbCepSendReq(al_, req, {}), "CepSendReq");
      arm(i);
    };
    const uint64_t t0 = NowNs();
    while (next < n_ && next < window_) start_one();
    uint32_t halves = 0;  // each connection finishes twice: RTU sent, RTU received
    while (halves < 2 * n_) {
      const Completion c = inbox_.Pop();
      Check(c.status, "CepGetEvent");
      Wait& w = waits[c.tag];
      const abi::CepEventType event = w.cep_out.event;
      if (c.tag == listen_tag) {
        if (event != abi::CepEventType::REQ_RECEIVED)
          Die(kProgram, "listen: event " + std::to_string(static_cast<int>(event)));
        const uint32_t j = passive_next++;
        const uint64_t tag = n_ + j;
        cep[tag] = w.cep_out.new_cep.value;
        abi::CepSendRepIn rep{};
        rep.cep.value = cep[tag];
        rep.qp.value = qb[j]->handle;
        rep.params.starting_psn = 0x222222;
        rep.params.responder_resources = 1;
        rep.params.initiator_depth = 1;
        rep.params.rnr_retry_count = 7;
        Check(kernel::IbCepSendRep(al_, rep, {}), "CepSendRep");
        ToRtr(cep[tag], qb[j]);
        arm(tag);
        arm(listen_tag);
      } else if (c.tag < n_) {  // active: the REP
        if (event != abi::CepEventType::REP_RECEIVED) Die(kProgram, "active: no REP");
        ToRtr(cep[c.tag], qa[c.tag]);
        ToRts(cep[c.tag], qa[c.tag]);
        abi::CepSendRtuIn rtu{};
        rtu.cep.value = cep[c.tag];
        Check(kernel::IbCepSendRtu(al_, rtu, {}), "CepSendRtu");
        ++halves;
        if (next < n_) start_one();
      } else {  // passive: the RTU
        if (event != abi::CepEventType::RTU_RECEIVED) Die(kProgram, "passive: no RTU");
        ToRts(cep[c.tag], qb[c.tag - n_]);
        ++halves;
        ++established;
      }
    }
    const uint64_t t1 = NowNs();
    *connect_rate = n_ / ((t1 - t0) / 1e9);
    std::printf("  %u RC connections established and held (QPs in RTS on both sides)\n",
                established);

    // Teardown: DREQ from the active side, W at a time; the passive side answers DREP.
    uint32_t dreq_next = 0, torn = 0;
    auto dreq_one = [&] {
      const uint32_t i = dreq_next++;
      abi::CepSendDreqIn dreq{};
      dreq.cep.value = cep[i];
      Check(kernel::IbCepSendDreq(al_, dreq, {}), "CepSendDreq");
      arm(i);
    };
    for (uint32_t j = 0; j < n_; ++j) arm(n_ + j);
    const uint64_t t2 = NowNs();
    while (dreq_next < n_ && dreq_next < window_) dreq_one();
    while (torn < n_) {
      const Completion c = inbox_.Pop();
      Check(c.status, "CepGetEvent");
      Wait& w = waits[c.tag];
      if (c.tag < n_) {
        if (w.cep_out.event == abi::CepEventType::DREP_RECEIVED) {
          ++torn;
          if (dreq_next < n_) dreq_one();
        } else if (w.cep_out.event != abi::CepEventType::TIMEWAIT_EXIT) {
          arm(c.tag);
        }
      } else if (c.tag != listen_tag && w.cep_out.event == abi::CepEventType::DREQ_RECEIVED) {
        abi::CepSendDrepIn drep{};
        drep.cep.value = cep[c.tag];
        Check(kernel::IbCepSendDrep(al_, drep, {}), "CepSendDrep");
      }
    }
    const uint64_t t3 = NowNs();
    *teardown_rate = n_ / ((t3 - t2) / 1e9);

    // Everything goes; the counts come back once the CEPs left time-wait.
    for (uint64_t c : cep) {
      if (c != 0) (void)kernel::IbDestroyCep(al_, {{c}}, nullptr);
    }
    for (uint32_t i = 0; i < n_; ++i) {
      for (kernel::IB_QP* qp : {qa[i], qb[i]}) {
        Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbDestroyQp(qp, irp); }),
              "IbDestroyQp");
      }
    }
    abi::ObjectCounts after{};
    for (int i = 0; i < 2000; ++i) {
      after = al::QueryNodeObjectCounts(node_->access_layer());
      if (after.cep == before.cep && after.qp == before.qp) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The waits of the passive CEPs (and the listen) still pending are cancelled by now.
    if (after.cep != before.cep || after.qp != before.qp)
      Die(kProgram, "leak: CEPs " + std::to_string(after.cep) + " (before " +
                        std::to_string(before.cep) + "), QPs " + std::to_string(after.qp));
    std::printf("  torn down and destroyed: CEPs %u -> %u, QPs %u -> %u (no leak)\n", before.cep,
                after.cep, before.qp, after.qp);
  }

 private:
  // Made through the kernel object API (kernel/<module>_ib.h).
  struct SideObjects {
    kernel::IB_CA* ca = nullptr;
    kernel::IB_PD* pd = nullptr;
    kernel::IB_CQ* cq = nullptr;
    kernel::IB_PD* alias_pd = nullptr;
    uint16_t lid = 0;
    uint64_t port_guid_be = 0;
  };
  static Status Init(kernel::DriverObject* driver, void*) {
    driver->Unload = [](kernel::DriverObject*) {};
    return Status::SUCCESS;
  }
  SideObjects OpenSide(uint64_t guid) {
    SideObjects s;
    kernel::IB_CA_CREATE ca;
    ca.ca_guid = htobe64(guid);
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbOpenCa(al_, &ca, irp); }, &s.ca),
          "IbOpenCa");
    std::vector<abi::PortAttributes> ports(s.ca->num_ports);
    abi::QueryCaOut q{};
    Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbQueryCa(s.ca, &q, ports, irp); }),
          "IbQueryCa");
    s.lid = ports[0].lid;
    s.port_guid_be = ports[0].port_guid;
    const kernel::IB_PD_CREATE pd;
    Check(
        kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbAllocPd(s.ca, &pd, irp); }, &s.pd),
        "IbAllocPd");
    kernel::IB_CQ_CREATE cq;
    cq.size = 64;
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbCreateCq(s.ca, &cq, irp); },
                                  &s.cq),
          "IbCreateCq");
    return s;
  }
  // A GSI alias of port 1, a pool and a vendor-class service (answering Gets, or not).
  uint64_t MadService(SideObjects& s, bool answers) {
    kernel::IB_PD_CREATE alias;
    alias.type = abi::PdType::ALIAS;
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbAllocPd(s.ca, &alias, irp); },
                                  &s.alias_pd),
          "IbAllocPd alias");
    // GetSpecialQp has no object form yet (kernel/verbs_qp_ib.h): by handle.
    abi::GetSpecialQpIn in{};
    in.pd.value = s.alias_pd->handle;
    in.send_cq.value = s.cq->handle;
    in.recv_cq.value = s.cq->handle;
    in.port_guid = s.port_guid_be;
    in.params.qp_type = abi::QpType::GSI_ALIAS;
    in.params.caps = {16, 16, 1, 1, 0, 0};
    abi::GetSpecialQpOut qp{};
    Check(kernel::IbGetSpecialQp(al_, in, qp), "GetSpecialQp");
    abi::CreateMadPoolOut pool{};
    Check(kernel::IbCreateMadPool(al_, {{kernel::IbGetAlHandle(al_)}, 4, 0, 0, 0}, pool),
          "CreateMadPool");
    abi::RegMadSvcIn reg{};
    reg.qp = qp.qp;
    reg.pool = pool.pool;
    reg.params.mgmt_class = kVendorClass;
    reg.params.mgmt_version = 1;
    if (answers) {
      reg.params.support_unsolicited = 1;
      reg.params.method_mask[0] = 1u << 0x01;  // Get
    }
    abi::RegMadSvcOut svc{};
    Check(kernel::IbRegMadSvc(al_, reg, svc), "RegMadSvc");
    return svc.svc.value;
  }
  kernel::IB_QP* NewQp(const SideObjects& s) {
    kernel::IB_QP_CREATE create;
    create.send_cq = s.cq;
    create.recv_cq = s.cq;
    create.params.qp_type = abi::QpType::RC;
    create.params.sq_signaled = 1;
    create.params.caps = {1, 1, 1, 1, 0, 0};
    kernel::IB_QP* qp = nullptr;
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbCreateQp(s.pd, &create, irp); },
                                  &qp),
          "IbCreateQp");
    abi::ModifyQpIn init{};
    using M = abi::QpAttrMask;
    init.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
    init.attributes.state = abi::QpState::INIT;
    init.attributes.port_num = 1;
    init.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE;
    Modify(qp, init.attributes, "IbModifyQp INIT");
    return qp;
  }
  void Modify(kernel::IB_QP* qp, const abi::QpModifyAttributes& attributes, const char* what) {
    const abi::ModifyQpIn in{{}, attributes};
    Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbModifyQp(qp, in, irp); }), what);
  }
  uint64_t CreateCep(uint64_t context) {
    abi::CreateCepOut out{};
    Check(kernel::IbCreateCep(al_, {{kernel::IbGetAlHandle(al_)}, context}, out), "CreateCep");
    return out.cep.value;
  }
  abi::CmReqParams ReqParams() const {
    abi::CmReqParams p{};
    p.service_id = htobe64(kServiceId);
    softib::mad::PathRecord path;
    path.SLID = a_.lid;
    path.DLID = b_.lid;
    path.P_Key = 0xFFFF;
    path.MTU = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
    path.Rate = 3;  // 2.5 Gb/s
    path.Reversible = 1;
    const auto bytes = path.Pack();
    std::memcpy(p.primary_path, bytes.data(), bytes.size());
    p.starting_psn = 0x111111;
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.remote_cm_response_timeout = 20;
    p.local_cm_response_timeout = 20;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    p.max_cm_retries = 3;
    return p;
  }
  void ToRtr(uint64_t cep, kernel::IB_QP* qp) {
    abi::CepGetRtrAttributesOut r{};
    Check(kernel::IbCepGetRtrAttributes(al_, {{cep}}, r), "CepGetRtrAttributes");
    Modify(qp, r.attributes, "IbModifyQp RTR");
  }
  void ToRts(uint64_t cep, kernel::IB_QP* qp) {
    abi::CepGetRtsAttributesOut r{};
    Check(kernel::IbCepGetRtsAttributes(al_, {{cep}}, r), "CepGetRtsAttributes");
    Modify(qp, r.attributes, "IbModifyQp RTS");
  }

  const uint32_t n_, window_;
  std::unique_ptr<stack::NodeStack> node_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::IbAl* al_ = nullptr;
  SideObjects a_, b_;
  Inbox inbox_;
};

}  // namespace
}  // namespace softib::bench

int main(int argc, char** argv) {
  using namespace softib::bench;
  const uint32_t n = argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 10000;
  const uint32_t window =
      argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 256;
  if (n == 0 || window == 0) Die(kProgram, "usage: softib_bench_cm [connections] [window]");
  Bench bench(n, window);
  std::printf("CM: %u RC connections between the two CAs of one node, %u being set up at once\n", n,
              window);
  const double floor = bench.RunMadFloor(std::max<uint32_t>(n, 2000));
  double connect = 0, teardown = 0;
  bench.RunCm(&connect, &teardown);
  std::printf("  floor     %10.0f MAD round trips/s (vendor Get/GetResp, same ports)\n", floor);
  // A connection is 3 MADs one way (REQ, REP, RTU), a teardown 2 (DREQ, DREP): as round
  // trips, 1.5 and 1.
  std::printf("  connect   %10.0f connections/s     (%.2fx the floor's rate / 1.5)\n", connect,
              connect * 1.5 / floor);
  std::printf("  teardown  %10.0f disconnections/s  (%.2fx the floor's rate)\n", teardown,
              teardown / floor);
  return 0;
}
