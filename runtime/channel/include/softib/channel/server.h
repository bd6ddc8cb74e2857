// Kernel half of the channel: a listener whose every connection is one open file. Requests
// go to an IoctlSink (the emulated kernel), which completes them, in any order and from any
// thread, through FileContext::Complete.
#pragma once

#include <sys/types.h>

#include <sys/epoll.h>
#include <atomic>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "softib/abi/abi_status.h"
#include "softib/channel/protocol.h"

namespace softib::channel {

using Status = abi::Status;
class Server;

// One IOCTL as received: the input is a private copy (METHOD_BUFFERED).
struct PendingRequest {
  uint64_t request_id = 0;
  uint32_t ioctl_code = 0;
  uint32_t output_length = 0;
  std::vector<uint8_t> input;
};

// One open file = one connection. Lives until the sink's Close and the last shared_ptr.
class FileContext : public std::enable_shared_from_this<FileContext> {
 public:
  uint64_t id() const { return id_; }
  // The peer process (SO_PEERCRED at accept time).
  pid_t peer_pid() const { return peer_pid_; }
  uid_t peer_uid() const { return peer_uid_; }

  // Slot for the sink (e.g. its FILE_OBJECT); the channel never touches it.
  void set_sink_context(void* context) { sink_context_.store(context); }
  void* sink_context() const { return sink_context_.load(); }

  // Completes an outstanding request, from any thread (also from inside Submit/Cancel).
  // At most output_length bytes of `output` are sent (the rest is dropped). `fds` are
  // passed to the client by SCM_RIGHTS; the caller keeps its own copies. Returns false
  // when `request_id` is not outstanding (never submitted, or already completed).
  bool Complete(uint64_t request_id, Status status, std::span<const uint8_t> output = {},
                std::span<const int> fds = {});

  size_t outstanding() const;

  ~FileContext();

 private:
  friend class Server;
  struct Outgoing {  // a response the socket could not take yet
    std::vector<uint8_t> frame;
    std::vector<int> fds;  // our duplicates, closed once sent or dropped
  };
  FileContext(Server* server, uint64_t id, int fd);
  // Sends, or queues behind earlier queued frames; caller holds mutex_.
  void SendLocked(const ResponseHeader& header, std::span<const uint8_t> payload,
                  std::span<const int> fds);
  bool FlushLocked();  // true when the queue is empty afterwards
  // Whether the loop should read requests: not after a close, nor while the client leaves
  // its answers unread.
  bool ReadingLocked() const { return !closing_ && queue_.size() < kMaxQueuedResponses; }
  void DropQueueLocked();

  Server* const server_;
  const uint64_t id_;
  int fd_;
  pid_t peer_pid_ = 0;
  uid_t peer_uid_ = 0;
  std::atomic<void*> sink_context_{nullptr};

  mutable std::mutex mutex_;
  struct Slot {
    uint32_t output_length;
    bool cancel_requested;  // the sink was told; it hears of each request at most once
  };
  std::unordered_map<uint64_t, Slot> outstanding_;
  std::vector<Outgoing> queue_;
  bool want_write_ = false;        // EPOLLOUT armed
  bool closing_ = false;           // hung up or close frame: no new requests
  bool hung_up_ = false;           // the peer is gone (or the server stops): nothing is sent
  uint64_t close_request_id_ = 0;  // the close frame to answer, when the client sent one
  bool finalize_queued_ = false;
  bool finalized_ = false;  // sink's Close called
};

class IoctlSink {
 public:
  virtual ~IoctlSink() = default;
  // All four run on the server's loop thread, one at a time; they must not block.
  virtual void Open(FileContext& /*file*/) {}
  virtual void Submit(FileContext& file, PendingRequest request) = 0;
  // The client cancelled `request_id` (or closed the file). The request still needs its
  // Complete, with CANCELED or its normal result. Not called for completed requests.
  virtual void Cancel(FileContext& file, uint64_t request_id) = 0;
  // The file is closed (cleanup): called exactly once, after every request completed.
  virtual void Close(FileContext& file) = 0;
};

struct ServerStats {
  uint64_t files_opened = 0;
  uint64_t files_closed = 0;
  uint64_t requests = 0;
  uint64_t rejected_frames = 0;
  uint64_t queued_responses = 0;  // answers that waited for the client to read
  RejectReason last_reject = RejectReason::kNone;
};

class Server {
 public:
  explicit Server(IoctlSink* sink);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on `run_dir`/`name` (replacing a stale socket there) and starts the loop
  // thread. Returns false with `error` set on failure.
  bool Start(const std::string& run_dir, const std::string& name, std::string* error);
  // Stops accepting, hangs up every file (cancelling its requests), waits until the sink
  // completed them and every Close ran, then joins the loop thread.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }
  ServerStats stats() const;
  size_t open_files() const;

 private:
  friend class FileContext;
  void Loop();
  // epoll_wait for the loop: polls a short while after activity, then sleeps.
  int WaitForEvents(::epoll_event* events, int capacity);
  void Accept();
  void HandleEvents(const std::shared_ptr<FileContext>& file, uint32_t events);
  void ReadFrames(const std::shared_ptr<FileContext>& file);
  void HandleFrame(const std::shared_ptr<FileContext>& file, size_t size, bool truncated,
                   bool had_fds);
  void Reject(FileContext& file, uint64_t request_id, RejectReason reason, Status status);
  // Stops reading the file, cancels its requests, and finalizes once none is left.
  void BeginClose(const std::shared_ptr<FileContext>& file, uint64_t close_request_id,
                  bool hung_up);
  void Finalize(const std::shared_ptr<FileContext>& file);  // sink Close, answer close frame
  void Retire(const std::shared_ptr<FileContext>& file);    // forget and close the fd
  void RunDeferred();
  // From any thread: have the loop finalize `file` / watch it for writability.
  void Defer(const std::shared_ptr<FileContext>& file);
  void Wake();
  void Rearm(FileContext& file);  // epoll interest from the file's state; file mutex held

  IoctlSink* const sink_;
  std::string socket_path_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  std::chrono::steady_clock::time_point last_activity_{};  // loop thread only
  int wake_fd_ = -1;
  std::thread loop_;
  std::atomic<bool> stopping_{false};
  std::vector<uint8_t> recv_buffer_;  // one frame, kMaxRequestFrameBytes + 1

  mutable std::mutex mutex_;                                     // files_, deferred_, stats_
  std::unordered_map<int, std::shared_ptr<FileContext>> files_;  // by fd
  std::vector<std::shared_ptr<FileContext>> deferred_;
  ServerStats stats_;
  std::atomic<uint64_t> queued_responses_{0};
  uint64_t next_file_id_ = 1;
};

}  // namespace softib::channel
