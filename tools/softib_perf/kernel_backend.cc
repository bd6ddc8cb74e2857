// Kernel clients of an in-process node: the verbs through the kernel object API over
// public structures (kernel/*_ib.h: IbCreateQp(IB_PD*, ...), each on an IRP of ours,
// waited for with IbCallAndWait) and the kernel speed path over those objects
// (IbPostSend(IB_QP*), IbPollCq(IB_CQ*) straight to the HCA). The Backend interface is the
// user backend's too, so it names objects by handle: the backend maps each handle to the
// public structure it got.
#include "kernel_backend.h"

#include <atomic>
#include <thread>
#include <unordered_map>

#include "session.h"

#include <endian.h>
#include <sched.h>

#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_mr_mw_ib.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_ib.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/device.h"
#include "softib/kernel/object_call.h"
#include "softib/stack/node_stack.h"

namespace softib::perf {

namespace {

// The client's own driver and device: the AL holds a reference on the device, as it does
// for every kernel client.
class ClientDriver {
 public:
  Status Create(kernel::Node* node, const std::string& name) {
    Status status = kernel::IoCreateDriver(node, name.c_str(), &Init, nullptr, &driver_);
    if (status != Status::SUCCESS) return status;
    return kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_);
  }
  ~ClientDriver() {
    if (device_ != nullptr) kernel::IoDeleteDevice(device_);
    if (driver_ != nullptr) kernel::IoUnloadDriver(driver_);
  }
  kernel::DeviceObject* device() const { return device_; }

 private:
  static Status Init(kernel::DriverObject* driver, void*) {
    driver->Unload = [](kernel::DriverObject*) {};
    return Status::SUCCESS;
  }
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
};

// The public structures a backend created, by the handle the Backend interface names.
template <typename Object>
class ObjectsByHandle {
 public:
  Object* Find(uint64_t handle) const {
    const auto it = objects_.find(handle);
    return it == objects_.end() ? nullptr : it->second;
  }
  void Add(Object* object) { objects_[object->handle] = object; }
  void Remove(uint64_t handle) { objects_.erase(handle); }
  // After IbReleaseAl destroyed what was left: frees the structures.
  void FreeAll() {
    for (auto& [handle, object] : objects_) delete object;
    objects_.clear();
  }

 private:
  std::unordered_map<uint64_t, Object*> objects_;
};

// Creates with `call(irp)` and records the object; `*object` is null after a failure.
template <typename Object, typename Call>
Status CreateObject(ObjectsByHandle<Object>& table, Object** object, Call&& call) {
  const Status status = kernel::IbCreateAndWait(call, object);
  if (status == Status::SUCCESS) table.Add(*object);
  return status;
}

// Destroys `object` with `call(irp)` and forgets it when that succeeds.
template <typename Object, typename Call>
Status DestroyObject(ObjectsByHandle<Object>& table, Object* object, Call&& call) {
  const uint64_t handle = object->handle;
  const Status status = kernel::IbCallAndWait(call);
  if (status == Status::SUCCESS) table.Remove(handle);
  return status;
}

class KernelBackend final : public Backend {
 public:
  KernelBackend(kernel::Node* node, bool busy_poll) : node_(node), busy_poll_(busy_poll) {}
  ~KernelBackend() override { Close(); }

  Status Start(const std::string& name) {
    Status status = driver_.Create(node_, name);
    if (status != Status::SUCCESS) return status;
    return kernel::IbOpenAl(node_, driver_.device(), &al_);
  }

  Status OpenCa(uint64_t guid, int default_index, std::string* error) override {
    if (guid == 0) {
      uint64_t guids[abi::kMaxCas] = {};
      abi::GetCaGuidsIn in{};
      in.al.value = kernel::IbGetAlHandle(al_);
      abi::GetCaGuidsOut out{};
      const Status status = kernel::IbGetCaGuids(al_, in, out, guids);
      if (status != Status::SUCCESS) {
        *error = std::string("GetCaGuids: ") + abi::ToString(status);
        return status;
      }
      guid = DefaultCa(guids, out.num_cas, default_index, error);
      if (guid == 0) return Status::INVALID_GUID;
    }
    kernel::IB_CA_CREATE create;
    create.ca_guid = htobe64(guid);
    const Status status = kernel::IbCreateAndWait(
        [&](kernel::Irp* irp) { return kernel::IbOpenCa(al_, &create, irp); }, &ca_obj_);
    if (status != Status::SUCCESS) {
      *error = std::string("OpenCa: ") + abi::ToString(status);
      return status;
    }
    ca_.value = ca_obj_->handle;
    guid_ = guid;
    return Status::SUCCESS;
  }
  abi::Handle<abi::ObjectType::Ca> ca() const override { return ca_; }
  uint64_t ca_guid() const override { return guid_; }

  Status QueryCa(abi::QueryCaOut* out, std::span<abi::PortAttributes> ports) override {
    if (ca_obj_ == nullptr) return Status::INVALID_CA_HANDLE;
    return kernel::IbCallAndWait(
        [&](kernel::Irp* irp) { return kernel::IbQueryCa(ca_obj_, out, ports, irp); });
  }
  Status AllocPd(const abi::AllocPdIn& in, abi::AllocPdOut* out) override {
    if (ca_obj_ == nullptr || in.ca.value != ca_obj_->handle) return Status::INVALID_CA_HANDLE;
    kernel::IB_PD_CREATE create;
    create.type = in.type;
    create.context = in.context;
    kernel::IB_PD* pd = nullptr;
    const Status status = CreateObject(
        pds_, &pd, [&](kernel::Irp* irp) { return kernel::IbAllocPd(ca_obj_, &create, irp); });
    if (status == Status::SUCCESS) out->pd.value = pd->handle;
    return status;
  }
  Status DeallocPd(const abi::DeallocPdIn& in) override {
    kernel::IB_PD* pd = pds_.Find(in.pd.value);
    if (pd == nullptr) return Status::INVALID_PD_HANDLE;
    return DestroyObject(pds_, pd, [&](kernel::Irp* irp) { return kernel::IbDeallocPd(pd, irp); });
  }
  Status RegMem(const abi::RegMemIn& in, abi::RegMemOut* out) override {
    kernel::IB_PD* pd = pds_.Find(in.pd.value);
    if (pd == nullptr) return Status::INVALID_PD_HANDLE;
    kernel::IB_MR_CREATE create;
    create.region = in.region;
    kernel::IB_MR* mr = nullptr;
    const Status status = CreateObject(
        mrs_, &mr, [&](kernel::Irp* irp) { return kernel::IbRegMem(pd, &create, irp); });
    if (status == Status::SUCCESS) {
      out->mr.value = mr->handle;
      out->lkey = mr->lkey;
      out->rkey = mr->rkey;
    }
    return status;
  }
  Status DeregMr(const abi::DeregMrIn& in) override {
    kernel::IB_MR* mr = mrs_.Find(in.mr.value);
    if (mr == nullptr) return Status::INVALID_MR_HANDLE;
    return DestroyObject(mrs_, mr, [&](kernel::Irp* irp) { return kernel::IbDeregMr(mr, irp); });
  }
  Status CreateCq(const abi::CreateCqIn& in, abi::CreateCqOut* out) override {
    if (ca_obj_ == nullptr || in.ca.value != ca_obj_->handle) return Status::INVALID_CA_HANDLE;
    kernel::IB_CQ_CREATE create;
    create.size = in.size;
    create.context = in.context;
    kernel::IB_CQ* cq = nullptr;
    const Status status = CreateObject(
        cqs_, &cq, [&](kernel::Irp* irp) { return kernel::IbCreateCq(ca_obj_, &create, irp); });
    if (status == Status::SUCCESS) {
      out->cq.value = cq->handle;
      out->actual_size = cq->size;
    }
    return status;
  }
  Status DestroyCq(const abi::DestroyCqIn& in) override {
    kernel::IB_CQ* cq = cqs_.Find(in.cq.value);
    if (cq == nullptr) return Status::INVALID_CQ_HANDLE;
    if (cq == cq_) cq_ = nullptr;
    return DestroyObject(cqs_, cq, [&](kernel::Irp* irp) { return kernel::IbDestroyCq(cq, irp); });
  }
  Status CreateQp(const abi::CreateQpIn& in, abi::CreateQpOut* out) override {
    kernel::IB_PD* pd = pds_.Find(in.pd.value);
    if (pd == nullptr) return Status::INVALID_PD_HANDLE;
    kernel::IB_QP_CREATE create;
    create.send_cq = cqs_.Find(in.send_cq.value);
    create.recv_cq = cqs_.Find(in.recv_cq.value);
    if (create.send_cq == nullptr || create.recv_cq == nullptr) return Status::INVALID_CQ_HANDLE;
    if (!in.srq.IsNull()) return Status::INVALID_SRQ_HANDLE;  // this backend makes no SRQs
    create.params = in.params;
    create.context = in.context;
    kernel::IB_QP* qp = nullptr;
    const Status status = CreateObject(
        qps_, &qp, [&](kernel::Irp* irp) { return kernel::IbCreateQp(pd, &create, irp); });
    if (status == Status::SUCCESS) {
      out->qp.value = qp->handle;
      out->qp_num = qp->qp_num;
      out->caps = qp->caps;
    }
    return status;
  }
  Status ModifyQp(const abi::ModifyQpIn& in) override {
    kernel::IB_QP* qp = qps_.Find(in.qp.value);
    if (qp == nullptr) return Status::INVALID_QP_HANDLE;
    return kernel::IbCallAndWait([&](kernel::Irp* irp) { return kernel::IbModifyQp(qp, in, irp); });
  }
  Status DestroyQp(const abi::DestroyQpIn& in) override {
    kernel::IB_QP* qp = qps_.Find(in.qp.value);
    if (qp == nullptr) return Status::INVALID_QP_HANDLE;
    if (qp == qp_) qp_ = nullptr;
    return DestroyObject(qps_, qp, [&](kernel::Irp* irp) { return kernel::IbDestroyQp(qp, irp); });
  }
  Status CreateAv(const abi::CreateAvIn& in, abi::CreateAvOut* out) override {
    kernel::IB_PD* pd = pds_.Find(in.pd.value);
    if (pd == nullptr) return Status::INVALID_PD_HANDLE;
    kernel::IB_AV_CREATE create;
    create.attributes = in.attributes;
    kernel::IB_AV* av = nullptr;
    const Status status = CreateObject(
        avs_, &av, [&](kernel::Irp* irp) { return kernel::IbCreateAv(pd, &create, irp); });
    if (status == Status::SUCCESS) out->av.value = av->handle;
    return status;
  }
  Status DestroyAv(const abi::DestroyAvIn& in) override {
    kernel::IB_AV* av = avs_.Find(in.av.value);
    if (av == nullptr) return Status::INVALID_AV_HANDLE;
    return DestroyObject(avs_, av, [&](kernel::Irp* irp) { return kernel::IbDestroyAv(av, irp); });
  }

  Status MapRings(abi::Handle<abi::ObjectType::Cq> cq,
                  abi::Handle<abi::ObjectType::Qp> qp) override {
    cq_ = cqs_.Find(cq.value);
    if (cq_ == nullptr) return Status::INVALID_CQ_HANDLE;
    qp_ = qps_.Find(qp.value);
    if (qp_ == nullptr) return Status::INVALID_QP_HANDLE;
    return Status::SUCCESS;
  }
  Status PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* posted) override {
    return kernel::IbPostSend(qp_, wrs, posted);
  }
  Status PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* posted) override {
    return kernel::IbPostRecv(qp_, wrs, posted);
  }
  Status PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* count) override {
    return kernel::IbPollCq(cq_, wcs, count);
  }
  // The HCA's work runs on the node's threads: let them have the CPU.
  void Idle() override {
    if (!busy_poll_) sched_yield();
  }

  void Close() override {
    kernel::IB_CA* left_ca = nullptr;
    if (ca_obj_ != nullptr) {
      // Busy when the session left objects behind: IbReleaseAl below destroys those and the
      // CA, and their structures are freed after it.
      if (kernel::IbCallAndWait([&](kernel::Irp* irp) {
            return kernel::IbCloseCa(ca_obj_, irp);
          }) != Status::SUCCESS) {
        left_ca = ca_obj_;
      }
      ca_obj_ = nullptr;
      ca_ = {};
    }
    if (al_ != nullptr) {
      kernel::IbReleaseAl(al_);
      al_ = nullptr;
    }
    cq_ = nullptr;
    qp_ = nullptr;
    avs_.FreeAll();
    qps_.FreeAll();
    cqs_.FreeAll();
    mrs_.FreeAll();
    pds_.FreeAll();
    delete left_ca;
  }

 private:
  kernel::Node* node_;
  bool busy_poll_;
  ClientDriver driver_;
  kernel::IbAl* al_ = nullptr;
  abi::Handle<abi::ObjectType::Ca> ca_{};
  kernel::IB_CA* ca_obj_ = nullptr;
  uint64_t guid_ = 0;
  ObjectsByHandle<kernel::IB_PD> pds_;
  ObjectsByHandle<kernel::IB_MR> mrs_;
  ObjectsByHandle<kernel::IB_CQ> cqs_;
  ObjectsByHandle<kernel::IB_QP> qps_;
  ObjectsByHandle<kernel::IB_AV> avs_;
  kernel::IB_CQ* cq_ = nullptr;
  kernel::IB_QP* qp_ = nullptr;
};

}  // namespace

std::unique_ptr<InProcessNode> InProcessNode::Boot(const std::string& name, std::string* error) {
  std::unique_ptr<InProcessNode> node(new InProcessNode());
  stack::NodeConfig config;
  config.name = name;
  Status status = Status::SUCCESS;
  node->stack_ = stack::NodeStack::Boot(config, &status);
  if (node->stack_ == nullptr) {
    *error = std::string("booting the in-process node: ") + abi::ToString(status);
    return nullptr;
  }
  // The AL takes CAs in on a worker after their PnP arrival: wait for both.
  for (uint64_t guid : node->stack_->ca_guids()) {
    status = al::WaitForCa(node->stack_->access_layer(), guid, true);
    if (status != Status::SUCCESS) {
      *error = std::string("the Access Layer did not take a CA in: ") + abi::ToString(status);
      return nullptr;
    }
  }
  return node;
}

InProcessNode::~InProcessNode() = default;

std::unique_ptr<Backend> InProcessNode::MakeClient(const std::string& client_name, bool busy_poll,
                                                   std::string* error) {
  auto backend = std::make_unique<KernelBackend>(stack_->node(), busy_poll);
  const Status status = backend->Start(client_name);
  if (status != Status::SUCCESS) {
    *error = "kernel client " + client_name + ": " + abi::ToString(status);
    return nullptr;
  }
  return backend;
}

bool RunInProcess(InProcessNode& node, const Options& o, RunReport* client_report,
                  RunReport* server_report, std::string* error) {
  static std::atomic<int> counter{0};
  const std::string id = std::to_string(counter++);
  auto server_backend = node.MakeClient("softib_perf_server_" + id, o.busy_poll, error);
  if (server_backend == nullptr) return false;
  auto client_backend = node.MakeClient("softib_perf_client_" + id, o.busy_poll, error);
  if (client_backend == nullptr) return false;
  OobChannel server_end, client_end;
  if (!OobChannel::Pair(&server_end, &client_end, error)) return false;
  Options server_options = o;
  server_options.ca_guid = 0;  // the client's -d names its CA; the server takes the first
  std::string server_error;
  bool server_ok = false;
  std::thread server([&] {
    server_ok = RunSession(server_options, false, *server_backend, server_end, server_report,
                           &server_error);
    if (!server_ok) server_end = OobChannel();  // unblocks the client
  });
  std::string client_error;
  const bool ok = RunSession(o, true, *client_backend, client_end, client_report, &client_error);
  if (!ok) client_end = OobChannel();
  server.join();
  if (!ok) {
    *error = "client: " + client_error + (server_ok ? "" : "; server: " + server_error);
    return false;
  }
  if (!server_ok) {
    *error = "server: " + server_error;
    return false;
  }
  return true;
}

}  // namespace softib::perf
