// An IoctlSink for the channel tests: echoes, holds requests until the test completes
// them, passes memfds, and records cancels and closes so tests can check their order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "softib/channel/server.h"

namespace softib::channel::test {

// IOCTL codes the sink understands.
inline constexpr uint32_t kEcho = 0x100;       // output = input, completed inside Submit
inline constexpr uint32_t kEchoAsync = 0x101;  // output = input, completed by a worker thread
inline constexpr uint32_t kHold = 0x102;  // held until the test completes it; cancel -> CANCELED
inline constexpr uint32_t kHoldStubborn = 0x103;  // held; a cancel is only recorded
inline constexpr uint32_t kMemfd = 0x104;         // memfd holding the input, output = its size

class TestSink : public IoctlSink {
 public:
  TestSink();
  ~TestSink() override;

  void Submit(FileContext& file, PendingRequest request) override;
  void Cancel(FileContext& file, uint64_t request_id) override;
  void Close(FileContext& file) override;

  struct Held {
    std::shared_ptr<FileContext> file;
    PendingRequest request;
  };
  // Waits until `count` requests are held (false after the timeout).
  bool WaitHeld(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Removes and returns held requests in arrival order.
  std::vector<Held> TakeHeld();
  // Waits until `count` files were closed in total.
  bool WaitClosed(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  size_t closes() const;
  std::vector<uint64_t> cancels() const;
  // Close of a file that still had held (uncompleted) requests, or a second Close: bugs.
  int violations() const;
  // The sink's own descriptor of the last memfd it passed.
  int last_memfd() const;

 private:
  void Worker();
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Held> held_;
  std::vector<uint64_t> cancels_;
  std::map<uint64_t, int> closes_by_file_;
  size_t closes_ = 0;
  int violations_ = 0;
  std::vector<int> memfds_;
  std::deque<std::pair<std::shared_ptr<FileContext>, PendingRequest>> work_;
  bool stop_ = false;
  std::thread worker_;
};

// Waits until the server has no open file (false after the timeout).
bool WaitNoOpenFiles(const Server& server,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A fresh run directory (mkdtemp) removed with everything in it at destruction.
class RunDir {
 public:
  RunDir();
  ~RunDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace softib::channel::test
