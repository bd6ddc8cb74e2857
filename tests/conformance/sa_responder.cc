#include "sa_responder.h"

#include <endian.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "claimed_irp.h"
#include "kernel/runtime_ioctls_direct.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/abi/abi_status.h"
#include "softib/al/access_layer.h"
#include "softib/codec/engine.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"

namespace softib::conformance {

using abi::Status;

namespace {

constexpr uint8_t kSubnAdm = 0x03, kSubnAdmVersion = 2;
constexpr uint8_t kSaGet = 0x01, kSaSet = 0x02, kSaGetTable = 0x12, kSaDelete = 0x15;
constexpr uint8_t kSaGetResp = 0x81, kSaGetTableResp = 0x92, kSaDeleteResp = 0x95;
constexpr uint16_t kSaMcMemberRecord = 0x38;
constexpr uint16_t kSaErrNoRecords = 0x0300;  // IBA 15.2.1.1: class-specific status 3
constexpr std::size_t kSaHeaderBytes = 56;    // MAD header, RMPP header, SA header
constexpr std::size_t kSaMlidOffset = 36;     // in an MCMemberRecord
constexpr uint16_t kSaMlid = 0xC010;          // the group every join gets
constexpr auto kSaStopCheck = std::chrono::milliseconds(50);

bool SaStep(Status status, const char* what) {
  if (status != Status::SUCCESS) {
    std::fprintf(stderr, "conformance harness: the SA responder's %s answered %s\n", what,
                 abi::ToString(status));
  }
  return status == Status::SUCCESS;
}

}  // namespace

bool SaResponder::Start(uint64_t client_ca_guid) {
  if (!end_.Open()) return false;
  kernel::IbAl* al = end_.al();
  abi::GetSpecialQpIn qp_in{};
  qp_in.pd.value = end_.pd();
  qp_in.send_cq.value = end_.cq();
  qp_in.recv_cq.value = end_.cq();
  qp_in.port_guid = end_.port_guid_be();
  qp_in.params.qp_type = abi::QpType::GSI_ALIAS;
  qp_in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  if (!SaStep(kernel::IbGetSpecialQp(al, qp_in, qp), "GetSpecialQp")) return false;
  qp_ = qp.qp.value;
  abi::CreateMadPoolOut pool{};
  if (!SaStep(kernel::IbCreateMadPool(al, {{kernel::IbGetAlHandle(al)}, 8, 0, 8, 0}, pool),
              "CreateMadPool")) {
    return false;
  }
  pool_ = pool.pool.value;
  abi::MadSvcParams params{};
  params.svc_type = abi::MadSvcType::DEFAULT;
  params.mgmt_class = kSubnAdm;
  params.mgmt_version = kSubnAdmVersion;
  params.support_unsolicited = 1;
  for (uint8_t method : {kSaGet, kSaSet, kSaGetTable, kSaDelete}) {
    params.method_mask[method / 8] |= static_cast<uint8_t>(1u << (method % 8));
  }
  abi::RegMadSvcOut svc{};
  if (!SaStep(kernel::IbRegMadSvc(al, {{qp_}, {pool_}, params}, svc), "RegMadSvc")) return false;
  svc_ = svc.svc.value;
  thread_ = std::thread([this] { Run(); });
  // The SM change reaches the AL as an event that drops the port's cached paths before it is
  // posted to PnP clients: seeing the PnP event, the tests start on a settled port.
  abi::RegisterPnpOut reg{};
  if (!SaStep(CallWithIrp(node_,
                          [&](kernel::Irp* irp) {
                            return kernel::IbRegisterPnp(
                                al, {{kernel::IbGetAlHandle(al)}, abi::PnpClass::PORT, {}, 0}, reg,
                                irp);
                          }),
              "RegisterPnp")) {
    return false;
  }
  if (!NextPnpEvent(reg.reg.value, abi::PnpEvent::REG_COMPLETE, 0) ||
      !SetMasterSm(client_ca_guid) ||
      !NextPnpEvent(reg.reg.value, abi::PnpEvent::SM_CHANGE, htobe64(client_ca_guid))) {
    return false;
  }
  return SaStep(
      CallWithIrp(node_,
                  [&](kernel::Irp* irp) { return kernel::IbDeregisterPnp(al, {reg.reg}, irp); }),
      "DeregisterPnp");
}

// Skips the registration's events up to `event` (of CA `ca_guid_be`, when not 0).
bool SaResponder::NextPnpEvent(uint64_t reg, abi::PnpEvent event, uint64_t ca_guid_be) {
  for (;;) {
    abi::GetPnpEventOut out{};
    const Status status = CallWithIrp(node_, [&](kernel::Irp* irp) {
      return kernel::IbGetPnpEvent(end_.al(), {{reg}}, out, irp);
    });
    if (!SaStep(status, "GetPnpEvent")) return false;
    if (out.record.event == event && (ca_guid_be == 0 || out.record.ca_guid == ca_guid_be)) {
      return true;
    }
  }
}

void SaResponder::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  end_.Close();
}

// PortInfo:MasterSMLID of port 1 of CA `ca_guid` set to the SA's LID (SubnGet, then SubnSet
// with PortState and PortPhysicalState "no change"); the port's SMA reports the SM change.
bool SaResponder::SetMasterSm(uint64_t ca_guid) {
  kernel::IbAl* al = end_.al();
  abi::OpenCaOut ca{};
  if (!SaStep(kernel::IbOpenCa(al, {{kernel::IbGetAlHandle(al)}, htobe64(ca_guid), 0}, ca),
              "OpenCa")) {
    return false;
  }
  abi::LocalMadIn in{};
  in.ca = ca.ca;
  in.port_num = 1;
  in.request[0] = 1;     // BaseVersion
  in.request[1] = 0x01;  // SubnMgt, LID-routed
  in.request[2] = 1;
  in.request[3] = kSaGet;
  in.request[17] = 0x15;  // PortInfo
  abi::LocalMadOut got{};
  if (!SaStep(kernel::IbLocalMad(al, in, got), "LocalMad SubnGet(PortInfo)")) return false;
  in.request[3] = kSaSet;
  std::copy(got.response + 64, got.response + 128, in.request + 64);
  in.request[64 + 18] = static_cast<uint8_t>(end_.lid() >> 8);  // MasterSMLID
  in.request[64 + 19] = static_cast<uint8_t>(end_.lid());
  in.request[64 + 32] &= 0xF0;  // PortState: no change
  in.request[64 + 33] &= 0x0F;  // PortPhysicalState: no change
  return SaStep(kernel::IbLocalMad(al, in, got), "LocalMad SubnSet(PortInfo)");
}

void SaResponder::Run() {
  kernel::IbAl* al = end_.al();
  std::vector<uint8_t> mad(4096);
  while (!stopping_) {
    // GetMadEvent pends until a MAD or a send completion arrives; the thread checks for
    // Stop while it waits and then cancels it.
    kernel::Irp* irp = kernel::IoAllocateIrp(1);
    kernel::IoSetIrpNode(irp, node_);
    ClaimedIrpWait wait;
    kernel::IoSetCompletionRoutine(irp, &ClaimedIrpDone, &wait, true, true, true);
    abi::GetMadEventOut out{};
    std::fill(mad.begin(), mad.end(), 0);
    Status status = kernel::IbGetMadEvent(al, {{svc_}}, out, mad, irp);
    {
      std::lock_guard lock(idle_mutex_);
      waiting_on_ = &wait.done;
    }
    idle_cv_.notify_all();
    bool cancelled = false;
    while (kernel::KeWaitForSingleObject(&wait.done, kSaStopCheck) != Status::SUCCESS) {
      if (stopping_ && !cancelled) {
        kernel::IoCancelIrp(irp);
        cancelled = true;
      }
    }
    {
      std::lock_guard lock(idle_mutex_);
      waiting_on_ = nullptr;
    }
    if (status == Status::PENDING) status = irp->IoStatus.Status;
    kernel::IoFreeIrp(irp);
    if (stopping_) break;
    if (!SaStep(status, "GetMadEvent")) break;
    if (out.event.kind != abi::MadEventKind::RECEIVED) continue;  // our answers' completions
    Answer(out.event, std::vector<uint8_t>(mad.begin(), mad.begin() + out.mad_length));
  }
}

void SaResponder::Settle() {
  std::unique_lock lock(idle_mutex_);
  // Bounded: a thread that stopped answering fails the verb it was asked for, not the run.
  idle_cv_.wait_for(lock, std::chrono::seconds(5), [&] {
    return stopping_ || !thread_.joinable() || (waiting_on_ != nullptr && !waiting_on_->IsSet());
  });
}

void SaResponder::Answer(const abi::MadEventRecord& from, const std::vector<uint8_t>& request) {
  if (request.size() < kSaHeaderBytes) return;
  std::vector<uint8_t> answer(request.begin(), request.end());
  answer.resize(256, 0);
  uint16_t status = 0;
  switch (request[3]) {
    case kSaGet:
    case kSaSet:
      answer[3] = kSaGetResp;
      break;
    case kSaDelete:
      answer[3] = kSaDeleteResp;
      break;
    case kSaGetTable:  // no tables: no records
      answer[3] = kSaGetTableResp;
      status = kSaErrNoRecords;
      std::fill(answer.begin() + kSaHeaderBytes, answer.end(), 0);
      break;
    default:
      return;
  }
  answer[4] = static_cast<uint8_t>(status >> 8);
  answer[5] = static_cast<uint8_t>(status);
  std::fill(answer.begin() + 24, answer.begin() + 36, 0);  // no RMPP
  const uint16_t attribute = static_cast<uint16_t>(request[16] << 8 | request[17]);
  if (const codec::FormatDesc* desc = codec::FindAttribute(kSubnAdm, attribute)) {
    const uint16_t offset = static_cast<uint16_t>((desc->size + 7) / 8);  // AttributeOffset
    answer[44] = static_cast<uint8_t>(offset >> 8);
    answer[45] = static_cast<uint8_t>(offset);
  }
  uint8_t* record = answer.data() + kSaHeaderBytes;
  if (attribute == kSaMcMemberRecord && record[kSaMlidOffset] == 0 &&
      record[kSaMlidOffset + 1] == 0) {
    record[kSaMlidOffset] = static_cast<uint8_t>(kSaMlid >> 8);
    record[kSaMlidOffset + 1] = static_cast<uint8_t>(kSaMlid);
  }
  abi::SendMadIn in{};
  in.svc.value = svc_;
  in.params.remote_qpn = from.remote_qpn;
  in.params.remote_qkey = htobe32(0x80010000);
  in.params.remote_lid = static_cast<uint16_t>(from.remote_lid);
  in.params.pkey_index = from.pkey_index;
  in.mad_length = static_cast<uint32_t>(answer.size());
  abi::SendMadOut sent{};
  if (SaStep(kernel::IbSendMad(end_.al(), in, answer, sent), "SendMad")) answered_.fetch_add(1);
}

}  // namespace softib::conformance
