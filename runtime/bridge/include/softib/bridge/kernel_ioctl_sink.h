// The bridge between the user<->kernel channel and the emulated kernel: every connection
// the channel server accepts becomes a user-mode open (IoCreateFile) of one named device of
// one node, and every request a METHOD_BUFFERED IRP_MJ_DEVICE_CONTROL IRP sent to it.
//
// The channel calls the sink on its loop thread, which must not block, while opening,
// sending IRPs and closing run at PASSIVE and may block: they go, in arrival order, to one
// bridge worker thread. A single FIFO worker keeps a file's open before its requests and
// its close after them. The exception is the fast path: a request whose IOCTL the driver
// declares non-blocking (DriverObject::NonBlockingIoctl) is sent from the loop thread when
// nothing of its file waits on the worker. IRPs complete on whatever thread the driver completes
// them. Close is the exception that waits (for the file's cleanup and close IRPs): the channel
// answers the client's close as soon as the sink's Close returns.
//
// Lifetime: stop the channel server before destroying the sink (the server's Stop waits
// for every file's Close), and destroy the sink before unloading the driver or the node.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "softib/channel/server.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"

namespace softib::bridge {

class KernelIoctlSink : public channel::IoctlSink {
 public:
  // Each connection opens `device_name` of `node`. When the open fails, the file's
  // requests complete with the create status.
  KernelIoctlSink(kernel::Node* node, std::string device_name);
  ~KernelIoctlSink() override;  // runs the queued work (closes), then joins the worker
  KernelIoctlSink(const KernelIoctlSink&) = delete;
  KernelIoctlSink& operator=(const KernelIoctlSink&) = delete;

  void Open(channel::FileContext& file) override;
  void Submit(channel::FileContext& file, channel::PendingRequest request) override;
  void Cancel(channel::FileContext& file, uint64_t request_id) override;
  void Close(channel::FileContext& file) override;

  // The process on the other end of a file object this sink opened; 0 when the file is
  // not one of ours (or already closed). For drivers that account per process.
  pid_t PeerPidOf(const kernel::FileObject* file) const;

  // Files opened and not yet closed (kernel side).
  size_t open_files() const;

  // Cancels that arrived before the request's IRP was built (it then never reaches the
  // driver); for tests and diagnostics.
  uint64_t cancels_before_dispatch() const { return cancels_before_dispatch_.load(); }

  // Waits until the worker has run everything queued so far (tests).
  void Flush();

 private:
  struct BridgeFile;
  struct Request;

  // The completion routine of every IRP the bridge sends (context: its Request).
  static kernel::CompletionAction OnIrpComplete(kernel::DeviceObject* device, kernel::Irp* irp,
                                                void* context);
  void Post(std::function<void()> task);
  void WorkerLoop();
  void OpenOnWorker(const std::shared_ptr<BridgeFile>& file);
  // Builds the request's IRP and sends it (PASSIVE, on the worker or, for the driver's
  // non-blocking IOCTLs, on the loop thread).
  void Dispatch(const std::shared_ptr<BridgeFile>& file, const std::shared_ptr<Request>& request);
  void CloseOnWorker(const std::shared_ptr<BridgeFile>& file);
  std::shared_ptr<BridgeFile> FindFile(const channel::FileContext& file) const;

  kernel::Node* const node_;
  const std::string device_name_;

  mutable std::mutex mutex_;                                         // files_, pids_
  std::unordered_map<uint64_t, std::shared_ptr<BridgeFile>> files_;  // by channel file id
  std::unordered_map<const kernel::FileObject*, pid_t> pids_;
  std::atomic<uint64_t> cancels_before_dispatch_{0};

  std::mutex work_mutex_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> work_;
  uint64_t posted_ = 0;    // tasks queued so far
  uint64_t finished_ = 0;  // tasks run so far
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace softib::bridge
