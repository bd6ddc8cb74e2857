#include "test_sa.h"

#include <endian.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/al/access_layer.h"
#include "softib/codec/engine.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib::test {

using kernel::Status;

namespace {

constexpr uint8_t kSubnAdm = 0x03, kSubnAdmVersion = 2;
constexpr uint8_t kGet = 0x01, kSet = 0x02, kGetTable = 0x12, kDelete = 0x15;
constexpr size_t kSaHeader = 56;
constexpr uint16_t kErrNoRecords = 0x0300, kErrReqInvalid = 0x0200;

kernel::CompletionAction Signal(kernel::DeviceObject*, kernel::Irp*, void* context) {
  kernel::KeSetEvent(static_cast<kernel::KEvent*>(context));
  return kernel::CompletionAction::kMoreProcessingRequired;
}

// A direct call with an IRP of its own, waited for (PASSIVE).
Status Call(kernel::Node* node, const std::function<Status(kernel::Irp*)>& call) {
  kernel::Irp* irp = kernel::IoAllocateIrp(1);
  kernel::IoSetIrpNode(irp, node);
  kernel::KEvent done(kernel::EventType::kNotification);
  kernel::IoSetCompletionRoutine(irp, &Signal, &done, true, true, true);
  call(irp);
  kernel::KeWaitForSingleObject(&done);
  const Status status = irp->IoStatus.Status;
  kernel::IoFreeIrp(irp);
  return status;
}

bool Ok(Status status, const char* what) {
  if (status != Status::SUCCESS)
    std::fprintf(stderr, "test SA: %s answered %d\n", what, static_cast<int>(status));
  return status == Status::SUCCESS;
}

Status Dispatch(kernel::DeviceObject*, kernel::Irp* irp) {
  irp->IoStatus.Status = Status::UNSUPPORTED;
  kernel::IoCompleteRequest(irp);
  return Status::UNSUPPORTED;
}

}  // namespace

bool TestSa::OpenPort(Port& port) {
  abi::OpenCaOut ca{};
  if (!Ok(kernel::IbOpenCa(al_, {{kernel::IbGetAlHandle(al_)}, htobe64(port.ca_guid), 0}, ca),
          "OpenCa")) {
    return false;
  }
  port.ca = ca.ca.value;
  std::vector<uint8_t> query(sizeof(abi::QueryCaOut) + 8 * sizeof(abi::PortAttributes));
  abi::QueryCaOut out{};
  std::span<abi::PortAttributes> ports(
      reinterpret_cast<abi::PortAttributes*>(query.data() + sizeof(abi::QueryCaOut)), 8);
  if (!Ok(kernel::IbQueryCa(al_, {{port.ca}}, out, ports), "QueryCa")) return false;
  const abi::PortAttributes& attributes = ports[port.port_num - 1u];
  port.lid = attributes.lid;
  std::memcpy(port.gid.data(), &attributes.subnet_prefix, 8);
  std::memcpy(port.gid.data() + 8, &attributes.port_guid, 8);
  abi::AllocPdOut pd{};
  if (!Ok(kernel::IbAllocPd(al_, {{port.ca}, abi::PdType{}, 0, 0}, pd), "AllocPd")) return false;
  port.pd = pd.pd.value;
  abi::CreateCqOut cq{};
  if (!Ok(Call(node_,
               [&](kernel::Irp* irp) {
                 return kernel::IbCreateCq(al_, {{port.ca}, 64, 0, 0}, cq, irp);
               }),
          "CreateCq")) {
    return false;
  }
  port.cq = cq.cq.value;
  abi::GetSpecialQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.port_guid = attributes.port_guid;
  qp_in.params.qp_type = abi::QpType::GSI_ALIAS;
  qp_in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  if (!Ok(kernel::IbGetSpecialQp(al_, qp_in, qp), "GetSpecialQp")) return false;
  port.qp = qp.qp.value;
  abi::CreateMadPoolOut pool{};
  if (!Ok(kernel::IbCreateMadPool(al_, {{kernel::IbGetAlHandle(al_)}, 8, 0, 8, 0}, pool),
          "CreateMadPool")) {
    return false;
  }
  port.pool = pool.pool.value;
  abi::MadSvcParams params{};
  params.svc_type = abi::MadSvcType::DEFAULT;
  params.mgmt_class = kSubnAdm;
  params.mgmt_version = kSubnAdmVersion;
  params.support_unsolicited = 1;
  for (uint8_t method : {kGet, kSet, kGetTable, kDelete}) {
    params.method_mask[method / 8] |= static_cast<uint8_t>(1u << (method % 8));
  }
  abi::RegMadSvcOut svc{};
  if (!Ok(kernel::IbRegMadSvc(al_, {{port.qp}, {port.pool}, params}, svc), "RegMadSvc")) {
    return false;
  }
  port.svc = svc.svc.value;
  return true;
}

// PortInfo:MasterSMLID of the port set to `sm_lid` (SubnGet then SubnSet, states unchanged).
bool TestSa::SetMasterSm(Port& port, uint16_t sm_lid) {
  abi::LocalMadIn in{};
  in.ca.value = port.ca;
  in.port_num = port.port_num;
  in.request[0] = 1;
  in.request[1] = 0x01;
  in.request[2] = 1;
  in.request[3] = kGet;
  in.request[17] = 0x15;           // PortInfo
  in.request[23] = port.port_num;  // AttributeModifier: the port
  abi::LocalMadOut got{};
  if (!Ok(kernel::IbLocalMad(al_, in, got), "LocalMad Get")) return false;
  in.request[3] = kSet;
  std::copy(got.response + 64, got.response + 128, in.request + 64);
  in.request[64 + 18] = static_cast<uint8_t>(sm_lid >> 8);
  in.request[64 + 19] = static_cast<uint8_t>(sm_lid);
  in.request[64 + 32] &= 0xF0;
  in.request[64 + 33] &= 0x0F;
  return Ok(kernel::IbLocalMad(al_, in, got), "LocalMad Set");
}

bool TestSa::SetPortState(Port& port, uint8_t state) {
  abi::LocalMadIn in{};
  in.ca.value = port.ca;
  in.port_num = port.port_num;
  in.request[0] = 1;
  in.request[1] = 0x01;
  in.request[2] = 1;
  in.request[3] = kGet;
  in.request[17] = 0x15;           // PortInfo
  in.request[23] = port.port_num;  // AttributeModifier: the port
  abi::LocalMadOut got{};
  if (!Ok(kernel::IbLocalMad(al_, in, got), "LocalMad Get")) return false;
  if ((got.response[64 + 32] & 0x0F) == 4) return true;  // Active already (another link)
  in.request[3] = kSet;
  std::copy(got.response + 64, got.response + 128, in.request + 64);
  in.request[64 + 32] = static_cast<uint8_t>((in.request[64 + 32] & 0xF0) | state);
  in.request[64 + 33] &= 0x0F;
  return Ok(kernel::IbLocalMad(al_, in, got), "LocalMad Set(PortState)");
}

bool TestSa::ActivatePorts() {
  for (uint8_t state : {uint8_t{3}, uint8_t{4}}) {  // Armed, Active
    for (Port& port : ports_) {
      if (!SetPortState(port, state)) return false;
    }
  }
  return true;
}

bool TestSa::Start(const std::vector<std::pair<uint64_t, uint8_t>>& ends) {
  if (ends.empty() || ends.size() % 2 != 0) return false;
  if (kernel::IoCreateDriver(
          node_, "ipoib_test_sa",
          [](kernel::DriverObject* driver, void*) {
            for (auto& dispatch : driver->MajorFunction) dispatch = &Dispatch;
            driver->Unload = [](kernel::DriverObject*) {};
            return Status::SUCCESS;
          },
          this, &driver_) != Status::SUCCESS ||
      kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_) != Status::SUCCESS ||
      kernel::IbOpenAl(node_, device_, &al_) != Status::SUCCESS) {
    return false;
  }
  ports_ = std::vector<Port>(ends.size());
  for (size_t n = 0; n < ends.size(); ++n) {
    ports_[n].ca_guid = ends[n].first;
    ports_[n].port_num = ends[n].second;
    ports_[n].link = one_subnet_ ? 0 : n / 2;
    if (!OpenPort(ports_[n])) return false;
  }
  for (Port& port : ports_) port.thread = std::thread([this, &port] { Run(&port); });
  for (size_t n = 0; n + 1 < ports_.size(); n += 2) {
    // One subnet: the ports of further pairs ask the first pair (an even index ends[1], an odd
    // one ends[0]), so that only the first two ports answer SA requests.
    const size_t a = one_subnet_ && n > 0 ? 1 : n + 1, b = one_subnet_ && n > 0 ? 0 : n;
    if (!SetMasterSm(ports_[n], ports_[a].lid) || !SetMasterSm(ports_[n + 1], ports_[b].lid)) {
      return false;
    }
  }
  return true;
}

bool TestSa::Start(uint64_t ca_a, uint64_t ca_b) { return Start({{ca_a, 1}, {ca_b, 1}}); }

void TestSa::Stop() {
  stopping_ = true;
  for (Port& port : ports_) {
    if (port.thread.joinable()) port.thread.join();
  }
  if (al_ != nullptr) kernel::IbReleaseAl(std::exchange(al_, nullptr));
  if (device_ != nullptr) kernel::IoDeleteDevice(std::exchange(device_, nullptr));
  if (driver_ != nullptr) kernel::IoUnloadDriver(std::exchange(driver_, nullptr));
}

std::map<Gid, SaGroup> TestSa::groups() const {
  std::lock_guard guard(mutex_);
  return groups_;
}

size_t TestSa::services() const {
  std::lock_guard guard(mutex_);
  return services_.size();
}

size_t TestSa::services_of(const Gid& gid) const {
  std::lock_guard guard(mutex_);
  size_t count = 0;
  for (const auto& bytes : services_) {
    mad::ServiceRecord record{};
    record.Unpack({bytes.data(), mad::ServiceRecord::kSize});
    count += record.ServiceGID == gid ? 1 : 0;
  }
  return count;
}

void TestSa::Run(Port* port) {
  std::vector<uint8_t> mad(4096);
  while (!stopping_) {
    kernel::Irp* irp = kernel::IoAllocateIrp(1);
    kernel::IoSetIrpNode(irp, node_);
    kernel::KEvent done(kernel::EventType::kNotification);
    kernel::IoSetCompletionRoutine(irp, &Signal, &done, true, true, true);
    abi::GetMadEventOut out{};
    std::fill(mad.begin(), mad.end(), 0);
    kernel::IbGetMadEvent(al_, {{port->svc}}, out, mad, irp);
    bool cancelled = false;
    while (kernel::KeWaitForSingleObject(&done, std::chrono::milliseconds(50)) != Status::SUCCESS) {
      if (stopping_ && !cancelled) {
        kernel::IoCancelIrp(irp);
        cancelled = true;
      }
    }
    const Status status = irp->IoStatus.Status;
    kernel::IoFreeIrp(irp);
    if (stopping_ || status != Status::SUCCESS) break;
    if (out.event.kind != abi::MadEventKind::RECEIVED) continue;
    Answer(port, out.event, std::vector<uint8_t>(mad.begin(), mad.begin() + out.mad_length));
  }
}

void TestSa::Answer(Port* port, const abi::MadEventRecord& from, std::vector<uint8_t> request) {
  if (request.size() < kSaHeader + 8) return;
  std::vector<uint8_t> answer(request);
  answer.resize(256, 0);
  const uint8_t method = request[3];
  const uint16_t attribute = static_cast<uint16_t>(request[16] << 8 | request[17]);
  uint64_t mask = 0;
  for (int n = 0; n < 8; ++n) mask = mask << 8 | request[48 + n];
  uint8_t* record = answer.data() + kSaHeader;
  uint16_t status = 0;
  answer[3] = method == kDelete ? 0x95 : method == kGetTable ? 0x92 : 0x81;
  {
    std::lock_guard guard(mutex_);
    if (attribute == mad::PathRecord::kAttributeId && method == kGet) {
      ++path_queries_;
      mad::PathRecord path{};
      path.Unpack({record, mad::PathRecord::kSize});
      const Port* to = nullptr;
      const Port* src = nullptr;
      for (const Port& p : ports_) {
        if (p.gid == path.DGID) to = &p;
        if (p.gid == path.SGID) src = &p;
      }
      if (to == nullptr || src == nullptr || to->link != src->link) {
        status = kErrNoRecords;
      } else {
        path.DLID = to->lid;
        path.SLID = src->lid;
        path.Reversible = 1;
        path.NumbPath = 1;
        path.MTUSelector = 2;
        path.MTU = 4;
        path.RateSelector = 2;
        path.Rate = 3;
        path.PacketLifeTimeSelector = 2;
        path.PacketLifeTime = packet_life_time_.load();
        path.Pack({record, mad::PathRecord::kSize});
      }
    } else if (attribute == mad::MCMemberRecord::kAttributeId &&
               (method == kSet || method == kDelete)) {
      mad::MCMemberRecord member{};
      member.Unpack({record, mad::MCMemberRecord::kSize});
      auto it = groups_.find(member.MGID);
      if (method == kDelete) {
        if (it == groups_.end() || it->second.members.erase(member.PortGID) == 0) {
          status = kErrNoRecords;
        }
      } else if (it == groups_.end() && (mask & (1ull << 2)) == 0) {
        ++refused_joins_;
        status = kErrReqInvalid;  // an unknown group, no create components
      } else {
        if (it == groups_.end()) {
          SaGroup group;
          group.mlid = next_mlid_++;
          group.qkey = member.Q_Key;
          const uint8_t cap = max_group_mtu_.load();
          group.mtu = cap != 0 && member.MTU > cap ? cap : member.MTU;
          group.pkey = member.P_Key;
          it = groups_.emplace(member.MGID, group).first;
        }
        it->second.members[member.PortGID] |= member.JoinState;
        member.MLID = it->second.mlid;
        member.Q_Key = it->second.qkey;
        member.MTU = it->second.mtu;
        member.MTUSelector = 2;
        member.P_Key = it->second.pkey;
        member.Pack({record, mad::MCMemberRecord::kSize});
      }
    } else if (attribute == mad::ServiceRecord::kAttributeId &&
               (method == kSet || method == kDelete)) {
      std::vector<uint8_t> bytes(record, record + mad::ServiceRecord::kSize);
      auto it = std::find(services_.begin(), services_.end(), bytes);
      if (method == kSet) {
        if (it == services_.end()) services_.push_back(bytes);
      } else if (it == services_.end()) {
        status = kErrNoRecords;
      } else {
        services_.erase(it);
      }
    } else {
      status = kErrNoRecords;
      std::fill(answer.begin() + kSaHeader, answer.end(), 0);
    }
  }
  answer[4] = static_cast<uint8_t>(status >> 8);
  answer[5] = static_cast<uint8_t>(status);
  std::fill(answer.begin() + 24, answer.begin() + 36, 0);  // no RMPP
  if (const codec::FormatDesc* desc = codec::FindAttribute(kSubnAdm, attribute)) {
    const auto offset = static_cast<uint16_t>((desc->size + 7) / 8);
    answer[44] = static_cast<uint8_t>(offset >> 8);
    answer[45] = static_cast<uint8_t>(offset);
  }
  abi::SendMadIn in{};
  in.svc.value = port->svc;
  in.params.remote_qpn = from.remote_qpn;
  in.params.remote_qkey = htobe32(0x80010000);
  in.params.remote_lid = static_cast<uint16_t>(from.remote_lid);
  in.params.pkey_index = from.pkey_index;
  in.mad_length = static_cast<uint32_t>(answer.size());
  abi::SendMadOut sent{};
  kernel::IbSendMad(al_, in, answer, sent);
}

}  // namespace softib::ipoib::test
