// DeviceIoControl over the channel. Responses are matched to in-flight requests by id, so
// any number of threads may have requests outstanding on a handle and they may complete in
// any order. One thread at a time reads the socket (the receiver role) and dispatches every
// response it gets. A synchronous caller that finds nobody receiving takes the role itself
// and so reads its own answer without a thread switch; when it has it, it hands the role to
// another waiting caller. Each file's background thread takes the role only while overlapped
// requests or a close are outstanding and no caller holds it.
#include "softib/user/device_io.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "softib/channel/client.h"
#include "softib/user/completion_event.h"

namespace softib::user {

namespace {

std::atomic_ref<Status> InternalOf(Overlapped* overlapped) {
  return std::atomic_ref<Status>(overlapped->Internal);
}

// Whether an answer of `status` with `output` (what arrived, cut to the caller's
// `output_length`) is shorter than `shape` allows (device_io.h: kMalformedReply).
bool ShortReply(const ReplyShape& shape, Status status, std::span<const uint8_t> output,
                uint32_t output_length) {
  if (output.empty() && status != Status::SUCCESS) return false;
  if (output.size() < shape.fixed_bytes) return true;
  // A failure's count may name what the caller would need (INSUFFICIENT_MEMORY): only a
  // success promises the elements.
  if (status != Status::SUCCESS || shape.elem_bytes == 0 || output_length <= shape.fixed_bytes) {
    return false;
  }
  uint64_t count = 0;
  const uint8_t* field = output.data() + shape.count_offset;
  switch (shape.count_bytes) {
    case 1:
      count = *field;
      break;
    case 2: {
      uint16_t v;
      std::memcpy(&v, field, sizeof v);
      count = v;
      break;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, field, sizeof v);
      count = v;
      break;
    }
    case 8:
      std::memcpy(&count, field, sizeof count);
      break;
    default:
      return false;
  }
  const uint64_t fit = (output_length - shape.fixed_bytes) / shape.elem_bytes;
  return output.size() < shape.fixed_bytes + std::min(count, fit) * shape.elem_bytes;
}

}  // namespace

class DeviceFile {
 public:
  explicit DeviceFile(std::unique_ptr<channel::ClientChannel> channel)
      : channel_(std::move(channel)), background_([this] { Background(); }) {}

  Status Ioctl(uint32_t code, const void* input, uint32_t input_length, void* output,
               uint32_t output_length, uint32_t* bytes_returned, Overlapped* overlapped,
               std::vector<int>* fds, const ReplyShape* shape = nullptr);
  Status Result(Overlapped* overlapped, uint32_t* bytes_returned, bool wait);
  Status Cancel(Overlapped* overlapped);
  void Close();

 private:
  // One request in flight. A synchronous one lives on its caller's stack; an overlapped one
  // on the heap, deleted by whoever completes it.
  struct Request {
    uint64_t id = 0;
    void* output = nullptr;
    uint32_t output_length = 0;
    Overlapped* overlapped = nullptr;
    // Synchronous only:
    std::condition_variable cv;  // done, or the receiver role is free
    bool done = false;
    Status status = Status::SUCCESS;
    uint32_t information = 0;
    std::vector<int>* fds = nullptr;  // where received fds go (else they are closed)
    // Both: what the answer must hold (DeviceIoControlChecked).
    bool checked = false;
    ReplyShape shape;
  };

  void Background();
  // Holding the receiver role: reads one response (mutex_ released meanwhile), dispatches
  // it, gives the role up and wakes whoever should take it next. `lock` holds mutex_.
  void ReceiveOne(std::unique_lock<std::mutex>& lock);
  void HandOffLocked();
  void LeaveSyncLocked() {
    if (--sync_callers_ == 0 && closing_) callers_left_cv_.notify_all();
  }
  bool BackgroundNeededLocked() const {
    return !receiving_ && !broken_ && (overlapped_in_flight_ > 0 || closing_);
  }
  // Caller holds mutex_ and removed `request` from in_flight_.
  void CompleteLocked(Request* request, Status status, std::span<const uint8_t> output,
                      std::vector<int>& fds);

  std::unique_ptr<channel::ClientChannel> channel_;
  std::atomic<uint64_t> next_id_{1};
  std::mutex mutex_;
  std::condition_variable overlapped_cv_;  // any overlapped request completed
  std::unordered_map<uint64_t, Request*> in_flight_;
  std::vector<Request*> sync_waiters_;  // synchronous requests not completed yet
  size_t overlapped_in_flight_ = 0;
  size_t sync_callers_ = 0;  // inside a synchronous Ioctl; Close waits until they left
  std::condition_variable callers_left_cv_;
  bool receiving_ = false;  // a thread holds the receiver role (reads the socket)
  bool closing_ = false;    // the close frame is (being) sent: its answer must be read
  bool broken_ = false;
  channel::ClientChannel::Response response_;  // the receiver role's
  std::condition_variable background_cv_;
  std::thread background_;  // last member: starts once the others exist
};

Status DeviceFile::Ioctl(uint32_t code, const void* input, uint32_t input_length, void* output,
                         uint32_t output_length, uint32_t* bytes_returned, Overlapped* overlapped,
                         std::vector<int>* fds, const ReplyShape* shape) {
  if ((input_length && !input) || (output_length && !output) ||
      input_length > channel::kMaxInputBytes || output_length > channel::kMaxOutputBytes) {
    return Status::INVALID_PARAMETER;
  }
  if (shape && shape->elem_bytes != 0 &&
      uint64_t{shape->count_offset} + shape->count_bytes > shape->fixed_bytes) {
    return Status::INVALID_PARAMETER;  // a count field outside its structure
  }
  Request sync_request;
  Request* request = overlapped ? new Request : &sync_request;
  // Once the request is in flight the receiver may complete (and, overlapped, free) it at any
  // moment — e.g. when the channel breaks — so after that only this copy of its id is used.
  const uint64_t id = next_id_.fetch_add(1);
  request->id = id;
  request->output = output;
  request->output_length = output_length;
  request->overlapped = overlapped;
  request->fds = fds;
  if (shape) {
    request->checked = true;
    request->shape = *shape;
  }
  if (overlapped) {
    overlapped->InternalHigh = 0;
    overlapped->Runtime = request;
    InternalOf(overlapped).store(Status::PENDING);
    if (overlapped->Event) overlapped->Event->Reset();
  }
  {
    std::lock_guard lock(mutex_);
    if (broken_) {
      if (overlapped) {
        overlapped->Runtime = nullptr;
        InternalOf(overlapped).store(kChannelBroken);
        delete request;
      }
      return kChannelBroken;
    }
    in_flight_[request->id] = request;
    if (overlapped) {
      ++overlapped_in_flight_;
      if (BackgroundNeededLocked()) background_cv_.notify_one();
    } else {
      sync_waiters_.push_back(request);
      ++sync_callers_;
    }
  }
  if (channel_->SendIoctl(id, code, input, input_length, output_length) != 0) {
    std::lock_guard lock(mutex_);
    // Unless the receiver already failed it (the channel broke meanwhile), fail it here.
    if (in_flight_.erase(id)) {
      if (overlapped) {
        --overlapped_in_flight_;
        overlapped->Runtime = nullptr;
        InternalOf(overlapped).store(kChannelBroken);
        delete request;
      } else {
        std::erase(sync_waiters_, request);
        if (!receiving_) HandOffLocked();  // it may have been handed the role
        LeaveSyncLocked();
      }
      return kChannelBroken;
    }
  }
  if (overlapped) return Status::PENDING;
  std::unique_lock lock(mutex_);
  while (!sync_request.done) {
    if (!receiving_ && !broken_) {
      ReceiveOne(lock);
    } else {
      sync_request.cv.wait(lock);
    }
  }
  // No hand-off here: whoever freed the role (ReceiveOne) already woke the next taker.
  if (bytes_returned) *bytes_returned = sync_request.information;
  Status status = sync_request.status;
  LeaveSyncLocked();  // the last use of `this`: Close may delete the file once we unlock
  return status;
}

void DeviceFile::CompleteLocked(Request* request, Status status, std::span<const uint8_t> output,
                                std::vector<int>& fds) {
  size_t bytes = std::min<size_t>(output.size(), request->output_length);
  if (bytes) std::memcpy(request->output, output.data(), bytes);
  if (request->checked &&
      ShortReply(request->shape, status, output.first(bytes), request->output_length)) {
    status = kMalformedReply;
  }
  if (request->fds) {
    request->fds->insert(request->fds->end(), fds.begin(), fds.end());
  } else {
    for (int fd : fds) close(fd);
  }
  fds.clear();
  if (Overlapped* overlapped = request->overlapped) {
    overlapped->InternalHigh = static_cast<uint32_t>(bytes);
    overlapped->Runtime = nullptr;
    // The event before the status: once the status is final the caller may free both.
    if (overlapped->Event) overlapped->Event->Set();
    InternalOf(overlapped).store(status);
    delete request;
    --overlapped_in_flight_;
    overlapped_cv_.notify_all();
  } else {
    request->status = status;
    request->information = static_cast<uint32_t>(bytes);
    request->done = true;
    std::erase(sync_waiters_, request);
    request->cv.notify_one();  // under mutex_: the waiter's frame outlives this call
  }
}

void DeviceFile::ReceiveOne(std::unique_lock<std::mutex>& lock) {
  receiving_ = true;
  lock.unlock();
  bool received = channel_->Receive(&response_);
  lock.lock();
  receiving_ = false;
  if (received) {
    const channel::ResponseHeader& h = response_.header;
    auto kind = static_cast<channel::FrameKind>(h.kind);
    auto it = in_flight_.find(h.request_id);
    if ((kind != channel::FrameKind::kIoctl && kind != channel::FrameKind::kReject) ||
        it == in_flight_.end()) {
      for (int fd : response_.fds) close(fd);  // a close answer, or nobody waits for it
      response_.fds.clear();
    } else {
      Request* request = it->second;
      in_flight_.erase(it);
      CompleteLocked(request, static_cast<Status>(h.status), response_.output, response_.fds);
    }
  } else {
    // Hang-up (after our close frame, or the kernel went away): fail whatever is left.
    broken_ = true;
    std::vector<int> none;
    for (auto& [id, request] : in_flight_) CompleteLocked(request, kChannelBroken, {}, none);
    in_flight_.clear();
  }
  HandOffLocked();
}

void DeviceFile::HandOffLocked() {
  if (broken_) {
    background_cv_.notify_one();  // to exit; every waiter was completed
  } else if (!sync_waiters_.empty()) {
    sync_waiters_.front()->cv.notify_one();
  } else if (BackgroundNeededLocked()) {
    background_cv_.notify_one();
  }
}

void DeviceFile::Background() {
  std::unique_lock lock(mutex_);
  for (;;) {
    background_cv_.wait(lock, [&] { return broken_ || BackgroundNeededLocked(); });
    if (broken_) return;
    ReceiveOne(lock);
  }
}

Status DeviceFile::Result(Overlapped* overlapped, uint32_t* bytes_returned, bool wait) {
  std::unique_lock lock(mutex_);
  if (wait) {
    overlapped_cv_.wait(lock, [&] { return InternalOf(overlapped).load() != Status::PENDING; });
  }
  Status status = InternalOf(overlapped).load();
  if (status != Status::PENDING && bytes_returned) *bytes_returned = overlapped->InternalHigh;
  return status;
}

Status DeviceFile::Cancel(Overlapped* overlapped) {
  uint64_t target;
  {
    std::lock_guard lock(mutex_);
    if (overlapped) {
      // Runtime is cleared under mutex_ when the request completes.
      auto* request = static_cast<Request*>(overlapped->Runtime);
      if (!request || InternalOf(overlapped).load() != Status::PENDING) return Status::NOT_FOUND;
      target = request->id;
    } else {
      if (in_flight_.empty()) return Status::NOT_FOUND;
      target = next_id_.fetch_add(1);  // a cancel-all frame still carries a fresh id
    }
  }
  // Cancelling a request that completes meanwhile is harmless: the kernel ignores the id.
  int error = channel_->SendCancel(target, overlapped == nullptr);
  return error == 0 ? Status::SUCCESS : kChannelBroken;
}

void DeviceFile::Close() {
  // The kernel answers the close after the file's requests completed and its cleanup ran,
  // then hangs up; the background thread ends at the hang-up (whoever reads it).
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    if (BackgroundNeededLocked()) background_cv_.notify_one();
  }
  if (channel_->SendClose(next_id_.fetch_add(1)) != 0) channel_->Shutdown();
  background_.join();
  // Synchronous callers in other threads got their answers (CANCELED at the latest); wait
  // until they stopped touching the file.
  std::unique_lock lock(mutex_);
  callers_left_cv_.wait(lock, [&] { return sync_callers_ == 0; });
}

Status OpenDevice(const char* path, DeviceHandle* device) {
  if (!path || !device) return Status::INVALID_PARAMETER;
  int error = 0;
  auto channel = channel::ClientChannel::Connect(path, &error);
  if (!channel) {
    switch (error) {
      case ENOENT:
      case ECONNREFUSED:
      case ENOTDIR:
        return Status::NOT_FOUND;
      case EACCES:
      case EPERM:
        return Status::INVALID_PERMISSION;
      case ENAMETOOLONG:
        return Status::INVALID_PARAMETER;
      default:
        return Status::ERROR;
    }
  }
  *device = new DeviceFile(std::move(channel));
  return Status::SUCCESS;
}

Status CloseDevice(DeviceHandle device) {
  if (!device) return Status::INVALID_HANDLE;
  device->Close();
  delete device;
  return Status::SUCCESS;
}

Status DeviceIoControl(DeviceHandle device, uint32_t code, const void* input, uint32_t input_length,
                       void* output, uint32_t output_length, uint32_t* bytes_returned,
                       Overlapped* overlapped) {
  if (!device) return Status::INVALID_HANDLE;
  return device->Ioctl(code, input, input_length, output, output_length, bytes_returned, overlapped,
                       nullptr);
}

Status DeviceIoControlChecked(DeviceHandle device, uint32_t code, const void* input,
                              uint32_t input_length, void* output, uint32_t output_length,
                              const ReplyShape& shape, uint32_t* bytes_returned,
                              Overlapped* overlapped) {
  if (!device) return Status::INVALID_HANDLE;
  return device->Ioctl(code, input, input_length, output, output_length, bytes_returned, overlapped,
                       nullptr, &shape);
}

Status DeviceIoControlWithFds(DeviceHandle device, uint32_t code, const void* input,
                              uint32_t input_length, void* output, uint32_t output_length,
                              uint32_t* bytes_returned, int* fds, uint32_t max_fds,
                              uint32_t* fd_count) {
  if (!device) return Status::INVALID_HANDLE;
  if (max_fds && !fds) return Status::INVALID_PARAMETER;
  std::vector<int> received;
  Status status = device->Ioctl(code, input, input_length, output, output_length, bytes_returned,
                                nullptr, &received);
  uint32_t kept = 0;
  for (int fd : received) {
    if (kept < max_fds) {
      fds[kept++] = fd;
    } else {
      close(fd);
    }
  }
  if (fd_count) *fd_count = kept;
  return status;
}

Status GetOverlappedResult(DeviceHandle device, Overlapped* overlapped, uint32_t* bytes_returned,
                           bool wait) {
  if (!device) return Status::INVALID_HANDLE;
  if (!overlapped) return Status::INVALID_PARAMETER;
  return device->Result(overlapped, bytes_returned, wait);
}

Status CancelIoEx(DeviceHandle device, Overlapped* overlapped) {
  if (!device) return Status::INVALID_HANDLE;
  return device->Cancel(overlapped);
}

}  // namespace softib::user
