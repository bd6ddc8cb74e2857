// Kernel clients of an in-process node: the verbs as direct calls (kernel/*_direct.h) and
// the kernel speed path (IbPostSend, IbPostRecv, IbPollCq straight to the HCA).
#include "kernel_backend.h"

#include <atomic>
#include <thread>

#include "session.h"

#include <endian.h>
#include <sched.h>

#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_mr_mw_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/device.h"
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
    abi::OpenCaIn in{};
    in.al.value = kernel::IbGetAlHandle(al_);
    in.ca_guid = htobe64(guid);
    abi::OpenCaOut out{};
    const Status status = kernel::IbOpenCa(al_, in, out);
    if (status != Status::SUCCESS) {
      *error = std::string("OpenCa: ") + abi::ToString(status);
      return status;
    }
    ca_ = out.ca;
    guid_ = guid;
    return Status::SUCCESS;
  }
  abi::Handle<abi::ObjectType::Ca> ca() const override { return ca_; }
  uint64_t ca_guid() const override { return guid_; }

  Status QueryCa(abi::QueryCaOut* out, std::span<abi::PortAttributes> ports) override {
    abi::QueryCaIn in{};
    in.ca = ca_;
    return kernel::IbQueryCa(al_, in, *out, ports);
  }
  Status AllocPd(const abi::AllocPdIn& in, abi::AllocPdOut* out) override {
    return kernel::IbAllocPd(al_, in, *out);
  }
  Status DeallocPd(const abi::DeallocPdIn& in) override { return kernel::IbDeallocPd(al_, in); }
  Status RegMem(const abi::RegMemIn& in, abi::RegMemOut* out) override {
    return kernel::IbRegMem(al_, in, *out);
  }
  Status DeregMr(const abi::DeregMrIn& in) override { return kernel::IbDeregMr(al_, in); }
  Status CreateCq(const abi::CreateCqIn& in, abi::CreateCqOut* out) override {
    return kernel::IbCreateCq(al_, in, *out);
  }
  Status DestroyCq(const abi::DestroyCqIn& in) override { return kernel::IbDestroyCq(al_, in); }
  Status CreateQp(const abi::CreateQpIn& in, abi::CreateQpOut* out) override {
    return kernel::IbCreateQp(al_, in, *out);
  }
  Status ModifyQp(const abi::ModifyQpIn& in) override { return kernel::IbModifyQp(al_, in); }
  Status DestroyQp(const abi::DestroyQpIn& in) override { return kernel::IbDestroyQp(al_, in); }
  Status CreateAv(const abi::CreateAvIn& in, abi::CreateAvOut* out) override {
    return kernel::IbCreateAv(al_, in, *out);
  }
  Status DestroyAv(const abi::DestroyAvIn& in) override { return kernel::IbDestroyAv(al_, in); }

  Status MapRings(abi::Handle<abi::ObjectType::Cq> cq,
                  abi::Handle<abi::ObjectType::Qp> qp) override {
    cq_ = cq.value;
    qp_ = qp.value;
    return Status::SUCCESS;
  }
  Status PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* posted) override {
    return kernel::IbPostSend(al_, qp_, wrs, posted);
  }
  Status PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* posted) override {
    return kernel::IbPostRecv(al_, qp_, wrs, posted);
  }
  Status PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* count) override {
    return kernel::IbPollCq(al_, cq_, wcs, count);
  }
  // The HCA's work runs on the node's threads: let them have the CPU.
  void Idle() override {
    if (!busy_poll_) sched_yield();
  }

  void Close() override {
    if (!ca_.IsNull()) {
      abi::CloseCaIn in{};
      in.ca = ca_;
      kernel::IbCloseCa(al_, in);
      ca_ = {};
    }
    if (al_ != nullptr) {
      kernel::IbReleaseAl(al_);
      al_ = nullptr;
    }
  }

 private:
  kernel::Node* node_;
  bool busy_poll_;
  ClientDriver driver_;
  kernel::IbAl* al_ = nullptr;
  abi::Handle<abi::ObjectType::Ca> ca_{};
  uint64_t guid_ = 0;
  uint64_t cq_ = 0, qp_ = 0;
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
