// KernelIoctlSink: channel requests as IRPs (see the header for the threading model).
#include "softib/bridge/kernel_ioctl_sink.h"

#include <unistd.h>

#include <algorithm>
#include <future>
#include <span>
#include <utility>
#include <vector>

#include "softib/bridge/reply_fds.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"

namespace softib::bridge {

using channel::FileContext;
using kernel::Irp;
using kernel::Status;

struct KernelIoctlSink::BridgeFile {
  std::shared_ptr<FileContext> channel;
  pid_t peer_pid = 0;
  // Written by the worker's open (under `mutex`); read by later tasks and the fast path.
  kernel::FileObject* object = nullptr;
  Status open_status = Status::SUCCESS;

  std::mutex mutex;  // requests, each Request's irp / cancel_requested, on_worker, object
  // Tasks of this file queued on the worker and not finished: while any is, a request
  // must go there too (behind them), so that the file's open and requests keep their order.
  uint32_t on_worker = 0;
  // Outstanding requests; the map's reference keeps the IRP until it completes.
  std::unordered_map<uint64_t, std::shared_ptr<Request>> requests;
};

struct KernelIoctlSink::Request {
  std::shared_ptr<BridgeFile> owner;
  uint64_t id = 0;
  uint32_t code = 0;
  uint32_t output_length = 0;
  std::vector<uint8_t> input;
  Irp* irp = nullptr;             // once built; freed with the last reference
  bool cancel_requested = false;  // cancelled before the IRP was built

  ~Request() { kernel::IoFreeIrp(irp); }
};

// Runs when the driver completes the IRP (any thread, up to DISPATCH). The map's
// reference is dropped here; a canceller still inside IoCancelIrp holds its own, so the
// IRP is freed by whichever of the two lets go last.
kernel::CompletionAction KernelIoctlSink::OnIrpComplete(kernel::DeviceObject* /*device*/, Irp* irp,
                                                        void* context) {
  auto* raw = static_cast<Request*>(context);
  std::shared_ptr<Request> request;
  {
    std::lock_guard lock(raw->owner->mutex);
    auto it = raw->owner->requests.find(raw->id);
    request = std::move(it->second);
    raw->owner->requests.erase(it);
  }
  const uint64_t bytes = std::min<uint64_t>(irp->IoStatus.Information, request->output_length);
  const auto* buffer = static_cast<const uint8_t*>(irp->AssociatedIrp.SystemBuffer);
  std::span<const uint8_t> output;
  if (buffer != nullptr) output = {buffer, static_cast<size_t>(bytes)};
  int fds[kMaxReplyFds];
  size_t fd_count = 0;
  TakeReplyFds(irp, fds, &fd_count);
  // A failed request hands out nothing.
  const bool send_fds = irp->IoStatus.Status == Status::SUCCESS;
  request->owner->channel->Complete(request->id, irp->IoStatus.Status, output,
                                    std::span<const int>(fds, send_fds ? fd_count : 0));
  for (size_t i = 0; i < fd_count; ++i) close(fds[i]);  // the channel sent its own copies
  // `request` may free the IRP now: the I/O manager touches nothing after this answer.
  return kernel::CompletionAction::kMoreProcessingRequired;
}

KernelIoctlSink::KernelIoctlSink(kernel::Node* node, std::string device_name)
    : node_(node), device_name_(std::move(device_name)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

KernelIoctlSink::~KernelIoctlSink() {
  {
    std::lock_guard lock(work_mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void KernelIoctlSink::Post(std::function<void()> task) {
  {
    std::lock_guard lock(work_mutex_);
    work_.push_back(std::move(task));
    ++posted_;
  }
  work_cv_.notify_all();
}

void KernelIoctlSink::WorkerLoop() {
  // The open, IoCallDriver and close run at PASSIVE on this node.
  kernel::NodeScope scope(node_);
  std::unique_lock lock(work_mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !work_.empty(); });
    if (work_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> task = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    task();
    lock.lock();
    ++finished_;
    work_cv_.notify_all();
  }
}

void KernelIoctlSink::Flush() {
  std::unique_lock lock(work_mutex_);
  const uint64_t target = posted_;
  work_cv_.wait(lock, [&] { return finished_ >= target; });
}

std::shared_ptr<KernelIoctlSink::BridgeFile> KernelIoctlSink::FindFile(
    const FileContext& file) const {
  std::lock_guard lock(mutex_);
  auto it = files_.find(file.id());
  return it == files_.end() ? nullptr : it->second;
}

void KernelIoctlSink::Open(FileContext& file) {
  auto bridge_file = std::make_shared<BridgeFile>();
  bridge_file->channel = file.shared_from_this();
  bridge_file->peer_pid = file.peer_pid();
  bridge_file->on_worker = 1;  // the open itself
  {
    std::lock_guard lock(mutex_);
    files_[file.id()] = bridge_file;
  }
  Post([this, bridge_file] { OpenOnWorker(bridge_file); });
}

void KernelIoctlSink::OpenOnWorker(const std::shared_ptr<BridgeFile>& file) {
  kernel::FileObject* object = nullptr;
  const Status status =
      kernel::IoCreateFileForProcess(node_, device_name_.c_str(), file->peer_pid, &object);
  if (status == Status::SUCCESS) {
    std::lock_guard lock(mutex_);
    pids_[object] = file->peer_pid;
  }
  std::lock_guard lock(file->mutex);
  file->open_status = status;
  if (status == Status::SUCCESS) file->object = object;
  --file->on_worker;
}

void KernelIoctlSink::Submit(FileContext& file, channel::PendingRequest pending) {
  std::shared_ptr<BridgeFile> bridge_file = FindFile(file);
  if (bridge_file == nullptr) {  // a server that skipped Open: not ours to serve
    file.Complete(pending.request_id, Status::INVALID_STATE);
    return;
  }
  auto request = std::make_shared<Request>();
  request->owner = bridge_file;
  request->id = pending.request_id;
  request->code = pending.ioctl_code;
  request->output_length = pending.output_length;
  request->input = std::move(pending.input);
  bool fast = false;
  {
    std::lock_guard lock(bridge_file->mutex);
    bridge_file->requests[request->id] = request;
    // The fast path: a request the driver promises not to block on, for a file that is
    // open and has nothing waiting on the worker, is sent from this (loop) thread, which
    // saves the worker's wake-up on every control verb.
    const kernel::DriverObject* driver =
        bridge_file->object != nullptr ? bridge_file->object->DeviceObject->DriverObject : nullptr;
    fast = bridge_file->on_worker == 0 && driver != nullptr &&
           driver->NonBlockingIoctl != nullptr && driver->NonBlockingIoctl(request->code);
    if (!fast) ++bridge_file->on_worker;
  }
  if (fast) {
    kernel::NodeScope scope(node_);
    Dispatch(bridge_file, request);
    return;
  }
  Post([this, bridge_file, request] {
    Dispatch(bridge_file, request);
    std::lock_guard lock(bridge_file->mutex);
    --bridge_file->on_worker;
  });
}

void KernelIoctlSink::Dispatch(const std::shared_ptr<BridgeFile>& file,
                               const std::shared_ptr<Request>& request) {
  Status early = Status::SUCCESS;  // an answer without a trip to the driver
  Irp* irp = nullptr;
  {
    std::lock_guard lock(file->mutex);
    if (request->cancel_requested) {
      early = Status::CANCELED;
    } else if (file->object == nullptr) {
      early = file->open_status;
    } else {
      kernel::DeviceObject* device = file->object->DeviceObject;
      // Null output: the system buffer itself is the answer (copied in OnIrpComplete).
      irp = kernel::IoBuildDeviceIoControlRequest(request->code, device, request->input.data(),
                                                  static_cast<uint32_t>(request->input.size()),
                                                  nullptr, request->output_length, false);
      if (irp == nullptr) {
        early = Status::INSUFFICIENT_MEMORY;
      } else {
        irp->RequestorMode = kernel::ProcessorMode::kUserMode;
        kernel::IoGetNextIrpStackLocation(irp)->FileObject = file->object;
        kernel::IoSetCompletionRoutine(irp, &OnIrpComplete, request.get(), true, true, true);
        request->irp = irp;  // from now on Cancel uses IoCancelIrp
      }
    }
    if (irp == nullptr) file->requests.erase(request->id);
  }
  if (irp == nullptr) {
    file->channel->Complete(request->id, early);
    return;
  }
  RegisterReplyIrp(irp);
  kernel::IoCallDriver(file->object->DeviceObject, irp);
}

void KernelIoctlSink::Cancel(FileContext& file, uint64_t request_id) {
  std::shared_ptr<BridgeFile> bridge_file = FindFile(file);
  if (bridge_file == nullptr) return;
  std::shared_ptr<Request> request;
  {
    std::lock_guard lock(bridge_file->mutex);
    auto it = bridge_file->requests.find(request_id);
    if (it == bridge_file->requests.end()) return;  // completed meanwhile
    if (it->second->irp == nullptr) {
      it->second->cancel_requested = true;  // still queued for the worker
      cancels_before_dispatch_.fetch_add(1);
      return;
    }
    request = it->second;  // keeps the IRP alive through IoCancelIrp
  }
  // Outside the lock: the driver's cancel routine may complete the IRP right here.
  kernel::IoCancelIrp(request->irp);
}

void KernelIoctlSink::Close(FileContext& file) {
  std::shared_ptr<BridgeFile> bridge_file = FindFile(file);
  if (bridge_file == nullptr) return;
  // Waits, although the loop thread should not block: the client's CloseDevice promises
  // that the driver's cleanup has run once the close is answered, and the channel answers
  // right after this returns. The wait covers cleanup and close only (plus whatever the
  // worker had queued before), as every request of the file has already completed.
  std::promise<void> closed;
  Post([this, bridge_file, &closed] {
    CloseOnWorker(bridge_file);
    closed.set_value();
  });
  closed.get_future().wait();
}

void KernelIoctlSink::CloseOnWorker(const std::shared_ptr<BridgeFile>& file) {
  // The channel calls Close only after every request completed, and each IRP is done with
  // the file once its completion routine ran: cleanup and close reach an idle file.
  if (file->object != nullptr) {
    {
      std::lock_guard lock(mutex_);
      pids_.erase(file->object);
    }
    kernel::IoCloseFile(file->object);
    file->object = nullptr;
  }
  std::lock_guard lock(mutex_);
  files_.erase(file->channel->id());
}

pid_t KernelIoctlSink::PeerPidOf(const kernel::FileObject* file) const {
  std::lock_guard lock(mutex_);
  auto it = pids_.find(file);
  return it == pids_.end() ? 0 : it->second;
}

size_t KernelIoctlSink::open_files() const {
  std::lock_guard lock(mutex_);
  return pids_.size();
}

}  // namespace softib::bridge
