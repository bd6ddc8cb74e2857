// The user-process backend: control verbs are IOCTLs through the channel to softibd (the
// generated proxies), the speed path runs on the rings MapCqRing/MapQpRings share.
#pragma once

#include <endian.h>
#include <sched.h>

#include <cstdio>
#include <string>

#include "backend.h"
#include "softib/user/access_layer.h"
#include "softib/user/mapped_rings.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_mr_mw_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace softib::perf {

namespace proxy = user::proxy;

class UserBackend final : public Backend {
 public:
  UserBackend(std::string run_dir, bool busy_poll)
      : run_dir_(std::move(run_dir)), busy_poll_(busy_poll) {}
  ~UserBackend() override { Close(); }

  Status OpenCa(uint64_t guid, int default_index, std::string* error) override {
    Status status = user::OpenAl(run_dir_.empty() ? nullptr : run_dir_.c_str(), &al_);
    if (status != Status::SUCCESS) {
      *error = std::string("no node answers in ") +
               (run_dir_.empty() ? user::DefaultRunDir() : run_dir_) +
               " (is softibd running?): " + abi::ToString(status);
      return status;
    }
    if (guid == 0) {
      uint64_t guids[64] = {};
      abi::GetCaGuidsIn in{};
      in.al = al_.al;
      abi::GetCaGuidsOut out{};
      status = proxy::GetCaGuids(al_.device, in, out, guids);
      if (status != Status::SUCCESS) {
        *error = std::string("GetCaGuids: ") + abi::ToString(status);
        return status;
      }
      guid = DefaultCa(guids, out.num_cas, default_index, error);
      if (guid == 0) return Status::INVALID_GUID;
    }
    status = user::OpenCaByGuid(al_, htobe64(guid), 0, &ca_);
    if (status != Status::SUCCESS) {
      char text[96];
      std::snprintf(text, sizeof text, "cannot open CA %016llx: %s",
                    static_cast<unsigned long long>(guid), abi::ToString(status));
      *error = text;
      return status;
    }
    guid_ = guid;
    return Status::SUCCESS;
  }
  abi::Handle<abi::ObjectType::Ca> ca() const override { return ca_.ca; }
  // The files the CM and SA client verbs go through (service_session.h).
  const user::AlFile& al_file() const { return al_; }
  const user::CaFile& ca_file() const { return ca_; }
  uint64_t ca_guid() const override { return guid_; }

  Status QueryCa(abi::QueryCaOut* out, std::span<abi::PortAttributes> ports) override {
    abi::QueryCaIn in{};
    in.ca = ca_.ca;
    return proxy::QueryCa(ca_.device, in, *out, ports);
  }
  Status AllocPd(const abi::AllocPdIn& in, abi::AllocPdOut* out) override {
    return proxy::AllocPd(ca_.device, in, *out);
  }
  Status DeallocPd(const abi::DeallocPdIn& in) override { return proxy::DeallocPd(ca_.device, in); }
  Status RegMem(const abi::RegMemIn& in, abi::RegMemOut* out) override {
    return proxy::RegMem(ca_.device, in, *out);
  }
  Status DeregMr(const abi::DeregMrIn& in) override { return proxy::DeregMr(ca_.device, in); }
  Status CreateCq(const abi::CreateCqIn& in, abi::CreateCqOut* out) override {
    return proxy::CreateCq(ca_.device, in, *out);
  }
  Status DestroyCq(const abi::DestroyCqIn& in) override { return proxy::DestroyCq(ca_.device, in); }
  Status CreateQp(const abi::CreateQpIn& in, abi::CreateQpOut* out) override {
    return proxy::CreateQp(ca_.device, in, *out);
  }
  Status ModifyQp(const abi::ModifyQpIn& in) override { return proxy::ModifyQp(ca_.device, in); }
  Status DestroyQp(const abi::DestroyQpIn& in) override { return proxy::DestroyQp(ca_.device, in); }
  Status CreateAv(const abi::CreateAvIn& in, abi::CreateAvOut* out) override {
    return proxy::CreateAv(ca_.device, in, *out);
  }
  Status DestroyAv(const abi::DestroyAvIn& in) override { return proxy::DestroyAv(ca_.device, in); }

  Status MapRings(abi::Handle<abi::ObjectType::Cq> cq,
                  abi::Handle<abi::ObjectType::Qp> qp) override {
    const Status status = cq_.Map(ca_.device, cq);
    if (status != Status::SUCCESS) return status;
    return qp_.Map(ca_.device, qp);
  }
  Status PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* posted) override {
    return qp_.queue().PostSend(wrs, posted);
  }
  Status PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* posted) override {
    return qp_.queue().PostRecv(wrs, posted);
  }
  Status PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* count) override {
    return cq_.queue().PollCq(wcs, count);
  }
  void Idle() override {
    if (busy_poll_) return;
    // hca/uvp/README.md: on two CPUs a poller hands its CPU over with sched_yield, then
    // sleeps on the CQ's doorbell when nothing came for 50 us (bounded, so that the caller
    // still sees its deadline); it sleeps at once when no CPU is free.
    uvp::WaitPolicy policy;
    policy.spin_ns = 50000;
    policy.yield_while_spinning = true;
    policy.sleep_timeout_ns = 10'000'000;
    policy.adaptive = true;  // no spinning while every CPU is busy (issue 19, under load)
    cq_.queue().Wait(policy);
  }

  void Close() override {
    if (ca_.device != nullptr) user::CloseCaFile(&ca_);
    if (al_.device != nullptr) user::CloseAl(&al_);
  }

 private:
  std::string run_dir_;
  bool busy_poll_;
  user::AlFile al_;
  user::CaFile ca_;
  uint64_t guid_ = 0;
  user::MappedCq cq_;
  user::MappedQp qp_;
};

}  // namespace softib::perf
