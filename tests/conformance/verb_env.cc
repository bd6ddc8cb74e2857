#include "verb_env.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "fuzz/proxy_model.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/work_item.h"

namespace softib::conformance {
namespace {

using kernel::Irp;
using kernel::Status;

// A wait verb (one that pends until an event) gets the event that is already queued, or is
// cancelled: the harness cancels it once everything the node had queued when the verb was
// dispatched (DPCs, work items) has run and it is still pending. No grace period.
// The request the channel harness sends behind a wait verb: no driver serves this IOCTL.
constexpr uint32_t kRoundTripIoctl =
    abi::CtlCode(abi::kFileDeviceInfiniband, 0xFFF, abi::kMethodBuffered, 3);

std::function<void()>& SettleHook() {
  static std::function<void()> hook;
  return hook;
}

void FlushQueues(kernel::Node* node) {
  kernel::KeFlushQueuedDpcs(node);
  kernel::IoFlushQueuedWorkItems(node);
  kernel::KeFlushQueuedDpcs(node);
}

// Runs what `node` has queued: DPCs, the work items they queue, the DPCs those queue; with a
// settle hook, also each exchange with the harness's peers that this sets off (a request
// delivered, answered on the peer's thread, the answer delivered and completed: a few rounds,
// RMPP's ACKs included).
void FlushNode(kernel::Node* node) {
  FlushQueues(node);
  if (!SettleHook()) return;
  for (int round = 0; round < 4; ++round) {
    SettleHook()();
    FlushQueues(node);
  }
}

// An output buffer the generated code may view as its output structures: 8-byte aligned.
class OutputBuffer {
 public:
  explicit OutputBuffer(uint32_t length) : words_((length + 7) / 8 + 1, 0), length_(length) {}
  std::span<uint8_t> bytes() { return {reinterpret_cast<uint8_t*>(words_.data()), length_}; }
  std::vector<uint8_t> Copy() const {
    const auto* p = reinterpret_cast<const uint8_t*>(words_.data());
    return {p, p + length_};
  }

 private:
  std::vector<uint64_t> words_;
  uint32_t length_;
};

// What a claimed IRP left behind: its status, output length and output bytes.
struct Completion {
  kernel::KEvent done{kernel::EventType::kNotification};
  Status status = Status::SUCCESS;
  uint64_t information = 0;
  std::vector<uint8_t> output;
  bool claim = true;  // false: let the I/O manager finish and free the IRP
};

kernel::CompletionAction OnComplete(kernel::DeviceObject*, Irp* irp, void* context) {
  auto* c = static_cast<Completion*>(context);
  c->status = irp->IoStatus.Status;
  c->information = irp->IoStatus.Information;
  const auto* buffer = static_cast<const uint8_t*>(irp->AssociatedIrp.SystemBuffer);
  const size_t n = std::min<size_t>(c->information, c->output.size());
  if (buffer != nullptr && n != 0) std::memcpy(c->output.data(), buffer, n);
  const bool claim = c->claim;
  kernel::KeSetEvent(&c->done);  // `c` may be gone after this when not claimed
  return claim ? kernel::CompletionAction::kMoreProcessingRequired
               : kernel::CompletionAction::kContinueCompletion;
}

// Waits for a sent, claimed IRP; a wait verb still pending once the node ran what it had
// queued gets cancelled.
void AwaitClaimed(kernel::Node* node, Irp* irp, Completion& c, bool wait_verb) {
  if (wait_verb && !c.done.IsSet()) {
    FlushNode(node);
    if (!c.done.IsSet()) kernel::IoCancelIrp(irp);
  }
  kernel::KeWaitForSingleObject(&c.done);
  kernel::IoFreeIrp(irp);
}

CallResult FromCompletion(const Completion& c) {
  CallResult r;
  r.status = c.status;
  r.information = static_cast<uint32_t>(c.information);
  r.output = c.output;
  return r;
}

}  // namespace

bool IsWait(const VerbInfo& verb) {
  return verb.async && fuzz::MayReturn(verb, abi::Status::CANCELED);
}

void SetSettleHook(std::function<void()> hook) { SettleHook() = std::move(hook); }

// ---- ChannelEnv

ChannelEnv::~ChannelEnv() {
  if (device_ != nullptr) user::CloseDevice(device_);
}

bool ChannelEnv::Reaches(const VerbInfo& verb) const { return (verb.paths & abi::kPathProxy) != 0; }

bool ChannelEnv::Reopen() {
  if (device_ != nullptr) user::CloseDevice(device_);
  device_ = nullptr;
  return user::OpenDevice(path_.c_str(), &device_) == Status::SUCCESS;
}

CallResult ChannelEnv::Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                            uint32_t output_length) {
  CallResult r;
  if (device_ == nullptr && !Reopen()) {
    r.status = Status::ERROR;
    return r;
  }
  OutputBuffer out(output_length);
  user::Overlapped ov{};
  const fuzz::ProxyInvoker proxy =
      verb != nullptr && proxy_ ? fuzz::FindProxy(verb->ordinal) : nullptr;
  Status status =
      proxy != nullptr
          ? proxy(device_, input, out.bytes(), &ov)
          : user::DeviceIoControl(device_, ioctl, input.data(), static_cast<uint32_t>(input.size()),
                                  out.bytes().data(), output_length, nullptr, &ov);
  // The runtime fills the OVERLAPPED from its own thread: read it only once completed.
  uint32_t bytes = 0;
  if (status != Status::PENDING) {
    r.status = status;
    r.output = out.Copy();
    return r;  // not sent: no output
  }
  if (verb != nullptr && IsWait(*verb)) {
    // The kernel dispatched it before it answers the round trip; what it queued meanwhile
    // runs; a second round trip brings any completion that made.
    RoundTrip();
    if (user::GetOverlappedResult(device_, &ov, &bytes, false) == Status::PENDING) {
      FlushNode(node_);
      RoundTrip();
    }
    if (user::GetOverlappedResult(device_, &ov, &bytes, false) == Status::PENDING) {
      user::CancelIoEx(device_, &ov);
    }
  }
  status = user::GetOverlappedResult(device_, &ov, &bytes, true);
  r.status = status;
  r.information = bytes;
  r.output = out.Copy();
  return r;
}

void ChannelEnv::RoundTrip() {
  uint32_t returned = 0;
  user::DeviceIoControl(device_, kRoundTripIoctl, nullptr, 0, nullptr, 0, &returned, nullptr);
}

// ---- UserFileEnv

UserFileEnv::~UserFileEnv() {
  if (file_ != nullptr) kernel::IoCloseFile(file_);
}

bool UserFileEnv::Reaches(const VerbInfo& verb) const {
  return (verb.paths & abi::kPathProxy) != 0;
}

bool UserFileEnv::Reopen() {
  if (file_ != nullptr) kernel::IoCloseFile(file_);
  file_ = nullptr;
  return kernel::IoCreateFileForProcess(node_, device_name_.c_str(), pid_, &file_) ==
         Status::SUCCESS;
}

CallResult UserFileEnv::Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                             uint32_t output_length) {
  CallResult r;
  if (file_ == nullptr && !Reopen()) {
    r.status = Status::ERROR;
    return r;
  }
  Irp* irp = kernel::IoBuildDeviceIoControlRequest(ioctl, file_->DeviceObject, input.data(),
                                                   static_cast<uint32_t>(input.size()), nullptr,
                                                   output_length, false);
  if (irp == nullptr) {
    r.status = Status::INSUFFICIENT_MEMORY;
    return r;
  }
  Completion c;
  c.output.assign(output_length, 0);
  irp->RequestorMode = kernel::ProcessorMode::kUserMode;
  kernel::IoGetNextIrpStackLocation(irp)->FileObject = file_;
  kernel::IoSetCompletionRoutine(irp, &OnComplete, &c, true, true, true);
  kernel::IoCallDriver(file_->DeviceObject, irp);
  AwaitClaimed(node_, irp, c, verb != nullptr && IsWait(*verb));
  return FromCompletion(c);
}

// ---- DirectEnv

DirectEnv::~DirectEnv() {
  if (al_ != nullptr) kernel::IbReleaseAl(al_);
}

bool DirectEnv::Reaches(const VerbInfo& verb) const { return verb.direct != nullptr; }

bool DirectEnv::Reopen() {
  if (al_ != nullptr) kernel::IbReleaseAl(al_);
  al_ = nullptr;
  return kernel::IbOpenAl(node_, client_, &al_) == Status::SUCCESS;
}

CallResult DirectEnv::Send(const VerbInfo* verb, uint32_t, std::span<const uint8_t> input,
                           uint32_t output_length) {
  CallResult r;
  if (verb == nullptr || verb->direct == nullptr || (al_ == nullptr && !Reopen())) {
    r.status = Status::INVALID_PARAMETER;
    return r;
  }
  // The direct call gets an IRP of the caller's, so that an async verb can pend and
  // complete it; a sync verb completes it before returning.
  Irp* irp = kernel::IoAllocateIrp(1);
  kernel::IoSetIrpNode(irp, node_);
  Completion c;
  c.output.assign(output_length, 0);
  kernel::IoSetCompletionRoutine(irp, &OnComplete, &c, true, true, true);
  OutputBuffer out(std::max(output_length, verb->out_size));
  Status status;
  if (at_dispatch_) {
    const kernel::ScopedIrql dispatch(kernel::Irql::kDispatch);
    status = verb->direct(al_, input, out.bytes(), irp);
  } else {
    status = verb->direct(al_, input, out.bytes(), irp);
  }
  AwaitClaimed(node_, irp, c, IsWait(*verb));
  // The direct call wrote its output in place; the IRP only carries the status and length.
  r.status = status == Status::PENDING ? c.status : status;
  r.information = static_cast<uint32_t>(c.information);
  r.output = out.Copy();
  r.output.resize(output_length);
  return r;
}

// ---- KernelIrpEnv

KernelIrpEnv::~KernelIrpEnv() {
  if (file_ != nullptr) kernel::IoCloseFile(file_);
}

bool KernelIrpEnv::Reaches(const VerbInfo& verb) const { return verb.build_irp != nullptr; }

bool KernelIrpEnv::Reopen() {
  if (file_ != nullptr) kernel::IoCloseFile(file_);
  file_ = nullptr;
  return kernel::IoCreateFile(node_, device_name_.c_str(), kernel::ProcessorMode::kKernelMode,
                              &file_) == Status::SUCCESS;
}

CallResult KernelIrpEnv::Send(const VerbInfo* verb, uint32_t, std::span<const uint8_t> input,
                              uint32_t output_length) {
  CallResult r;
  if (verb == nullptr || verb->build_irp == nullptr || (file_ == nullptr && !Reopen())) {
    r.status = Status::INVALID_PARAMETER;
    return r;
  }
  OutputBuffer scratch(std::max(output_length, verb->out_size));  // the IRP's UserBuffer
  Irp* irp =
      verb->build_irp(file_->DeviceObject, file_, input, scratch.bytes().first(output_length));
  if (irp == nullptr) {
    r.status = Status::INSUFFICIENT_MEMORY;
    return r;
  }
  Completion c;
  c.output.assign(output_length, 0);
  if (!async_ && !IsWait(*verb)) {
    // Call<Verb>Irp(): IoCallDriverAndWait, the I/O manager frees the IRP.
    c.claim = false;
    kernel::IoSetCompletionRoutine(irp, &OnComplete, &c, true, true, true);
    r.status = kernel::IoCallDriverAndWait(file_->DeviceObject, irp);
    kernel::KeWaitForSingleObject(&c.done);
  } else {
    // Send<Verb>Irp(): completion routine, which claims the IRP back.
    kernel::IoSetCompletionRoutine(irp, &OnComplete, &c, true, true, true);
    kernel::IoCallDriver(file_->DeviceObject, irp);
    AwaitClaimed(node_, irp, c, IsWait(*verb));
    r.status = c.status;
  }
  r.information = static_cast<uint32_t>(c.information);
  r.output = c.output;
  return r;
}

}  // namespace softib::conformance
