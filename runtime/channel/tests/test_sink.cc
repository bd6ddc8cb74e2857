#include "test_sink.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace softib::channel::test {

TestSink::TestSink() : worker_([this] { Worker(); }) {}

TestSink::~TestSink() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  for (int fd : memfds_) close(fd);
}

void TestSink::Submit(FileContext& file, PendingRequest request) {
  switch (request.ioctl_code) {
    case kEcho:
      file.Complete(request.request_id, Status::SUCCESS, request.input);
      return;
    case kEchoAsync: {
      std::lock_guard lock(mutex_);
      work_.emplace_back(file.shared_from_this(), std::move(request));
      cv_.notify_all();
      return;
    }
    case kHold:
    case kHoldStubborn: {
      std::lock_guard lock(mutex_);
      held_.push_back({file.shared_from_this(), std::move(request)});
      cv_.notify_all();
      return;
    }
    case kMemfd: {
      int fd = memfd_create("softib-test", MFD_CLOEXEC);
      uint32_t size = static_cast<uint32_t>(request.input.size());
      if (fd < 0 || ftruncate(fd, 4096) != 0 ||
          pwrite(fd, request.input.data(), size, 0) != static_cast<ssize_t>(size)) {
        file.Complete(request.request_id, Status::INSUFFICIENT_RESOURCES);
        return;
      }
      {
        std::lock_guard lock(mutex_);
        memfds_.push_back(fd);
      }
      const int fds[] = {fd};
      file.Complete(request.request_id, Status::SUCCESS,
                    {reinterpret_cast<const uint8_t*>(&size), sizeof size}, fds);
      return;
    }
    default:
      file.Complete(request.request_id, Status::INVALID_PARAMETER);
  }
}

void TestSink::Cancel(FileContext& file, uint64_t request_id) {
  std::unique_lock lock(mutex_);
  cancels_.push_back(request_id);
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->file.get() == &file && it->request.request_id == request_id &&
        it->request.ioctl_code == kHold) {
      held_.erase(it);
      lock.unlock();
      file.Complete(request_id, Status::CANCELED);  // from inside the sink callback
      return;
    }
  }
}

void TestSink::Close(FileContext& file) {
  std::lock_guard lock(mutex_);
  if (file.outstanding() != 0) ++violations_;
  for (const Held& h : held_) {
    if (h.file.get() == &file) ++violations_;
  }
  if (++closes_by_file_[file.id()] != 1) ++violations_;
  ++closes_;
  cv_.notify_all();
}

void TestSink::Worker() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !work_.empty(); });
    if (work_.empty()) return;
    auto [file, request] = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    file->Complete(request.request_id, Status::SUCCESS, request.input);
    lock.lock();
  }
}

bool TestSink::WaitHeld(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return held_.size() >= count; });
}

std::vector<TestSink::Held> TestSink::TakeHeld() {
  std::lock_guard lock(mutex_);
  return std::exchange(held_, {});
}

bool TestSink::WaitClosed(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return closes_ >= count; });
}

size_t TestSink::closes() const {
  std::lock_guard lock(mutex_);
  return closes_;
}

std::vector<uint64_t> TestSink::cancels() const {
  std::lock_guard lock(mutex_);
  return cancels_;
}

int TestSink::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

int TestSink::last_memfd() const {
  std::lock_guard lock(mutex_);
  return memfds_.empty() ? -1 : memfds_.back();
}

bool WaitNoOpenFiles(const Server& server, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (server.open_files() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

RunDir::RunDir() {
  char pattern[] = "/tmp/softib-channel-XXXXXX";
  const char* made = mkdtemp(pattern);
  if (!made) std::abort();
  path_ = made;
}

RunDir::~RunDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace softib::channel::test
