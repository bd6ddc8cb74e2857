#include "softib/channel/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "socket_util.h"

namespace softib::channel {

namespace {

ResponseHeader MakeResponse(FrameKind kind, uint64_t request_id, Status status) {
  ResponseHeader h{};
  h.magic = kFrameMagic;
  h.version = kProtocolVersion;
  h.kind = static_cast<uint16_t>(kind);
  h.request_id = request_id;
  h.status = static_cast<uint32_t>(status);
  return h;
}

// True when the peer shut its end (distinguishes EOF from an empty datagram).
bool PeerHungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

}  // namespace

// ---- FileContext ----

FileContext::FileContext(Server* server, uint64_t id, int fd) : server_(server), id_(id), fd_(fd) {}

FileContext::~FileContext() {
  DropQueueLocked();
  if (fd_ >= 0) close(fd_);
}

size_t FileContext::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_.size();
}

bool FileContext::Complete(uint64_t request_id, Status status, std::span<const uint8_t> output,
                           std::span<const int> fds) {
  bool defer = false;
  {
    std::lock_guard lock(mutex_);
    auto it = outstanding_.find(request_id);
    if (finalized_ || it == outstanding_.end()) return false;
    uint32_t output_length = it->second.output_length;
    outstanding_.erase(it);
    ResponseHeader h = MakeResponse(FrameKind::kIoctl, request_id, status);
    output = output.first(std::min<size_t>(output.size(), output_length));
    fds = fds.first(std::min<size_t>(fds.size(), kMaxFdsPerResponse));
    h.information = static_cast<uint32_t>(output.size());
    if (!fds.empty()) h.flags |= kResponseHasFds;
    SendLocked(h, output, fds);
    if (closing_ && outstanding_.empty() && !finalize_queued_) {
      finalize_queued_ = true;
      defer = true;
    }
  }
  if (defer) server_->Defer(shared_from_this());
  return true;
}

void FileContext::SendLocked(const ResponseHeader& header, std::span<const uint8_t> payload,
                             std::span<const int> fds) {
  if (hung_up_ || fd_ < 0) return;  // nobody to read it
  if (queue_.empty()) {
    int r = SendFrame(fd_, &header, sizeof header, payload.data(), payload.size(), fds);
    if (r == 0) return;
    if (r != EAGAIN) return;  // the peer is gone; the loop sees the hang-up
  }
  Outgoing out;
  out.frame.resize(sizeof header + payload.size());
  std::memcpy(out.frame.data(), &header, sizeof header);
  if (!payload.empty())
    std::memcpy(out.frame.data() + sizeof header, payload.data(), payload.size());
  for (int fd : fds) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) out.fds.push_back(copy);
  }
  queue_.push_back(std::move(out));
  server_->queued_responses_.fetch_add(1, std::memory_order_relaxed);
  if (!want_write_ || queue_.size() == kMaxQueuedResponses) {
    want_write_ = true;
    server_->Rearm(*this);
  }
}

bool FileContext::FlushLocked() {
  size_t sent = 0;
  for (; sent < queue_.size(); ++sent) {
    Outgoing& out = queue_[sent];
    int r = SendFrame(fd_, out.frame.data(), out.frame.size(), nullptr, 0, out.fds);
    if (r == EAGAIN) break;
    for (int fd : out.fds) close(fd);  // sent (or the peer is gone): our duplicates go
    out.fds.clear();
  }
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(sent));
  return queue_.empty();
}

void FileContext::DropQueueLocked() {
  for (Outgoing& out : queue_) {
    for (int fd : out.fds) close(fd);
  }
  queue_.clear();
}

// ---- Server ----

Server::Server(IoctlSink* sink) : sink_(sink), recv_buffer_(kMaxRequestFrameBytes + 1) {}

Server::~Server() { Stop(); }

bool Server::Start(const std::string& run_dir, const std::string& name, std::string* error) {
  socket_path_ = run_dir + "/" + name;
  sockaddr_un addr{};
  if (socket_path_.size() >= sizeof addr.sun_path) {
    *error = "socket path too long: " + socket_path_;
    return false;
  }
  auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + std::strerror(errno);
    if (listen_fd_ >= 0) close(listen_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    listen_fd_ = epoll_fd_ = wake_fd_ = -1;
    return false;
  };
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail("socket");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  unlink(socket_path_.c_str());  // a stale socket of an earlier run
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("bind");
  if (listen(listen_fd_, 128) != 0) return fail("listen");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return fail("epoll_create1");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return fail("eventfd");
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return fail("epoll_ctl");
  }
  loop_ = std::thread([this] { Loop(); });
  return true;
}

void Server::Stop() {
  if (!loop_.joinable()) return;
  stopping_.store(true);
  Wake();
  loop_.join();
  close(epoll_fd_);
  close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

ServerStats Server::stats() const {
  std::lock_guard lock(mutex_);
  ServerStats stats = stats_;
  stats.queued_responses = queued_responses_.load(std::memory_order_relaxed);
  return stats;
}

size_t Server::open_files() const {
  std::lock_guard lock(mutex_);
  return files_.size();
}

void Server::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);
}

void Server::Defer(const std::shared_ptr<FileContext>& file) {
  {
    std::lock_guard lock(mutex_);
    deferred_.push_back(file);
  }
  Wake();
}

void Server::Rearm(FileContext& file) {
  // Called with file.mutex_ held. After a hang-up the fd left the epoll set: nothing to do.
  if (file.hung_up_ || file.fd_ < 0) return;
  epoll_event ev{};
  ev.events =
      (file.ReadingLocked() ? (EPOLLIN | EPOLLRDHUP) : 0u) | (file.want_write_ ? EPOLLOUT : 0u);
  ev.data.fd = file.fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, file.fd_, &ev);
}

void Server::Loop() {
  bool shut_down = false;
  epoll_event events[64];
  for (;;) {
    if (stopping_.load() && !shut_down) {
      shut_down = true;
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      close(listen_fd_);
      listen_fd_ = -1;
      unlink(socket_path_.c_str());
      std::vector<std::shared_ptr<FileContext>> all;
      {
        std::lock_guard lock(mutex_);
        for (auto& [fd, file] : files_) all.push_back(file);
      }
      // Like a close frame nobody asked for: cancellations still reach the clients.
      for (auto& file : all) BeginClose(file, 0, /*hung_up=*/false);
    }
    RunDeferred();
    if (shut_down) {
      std::lock_guard lock(mutex_);
      if (files_.empty() && deferred_.empty()) break;
    }
    int n = WaitForEvents(events, 64);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof count);
      } else if (fd == listen_fd_) {
        Accept();
      } else {
        std::shared_ptr<FileContext> file;
        {
          std::lock_guard lock(mutex_);
          auto it = files_.find(fd);
          if (it != files_.end()) file = it->second;
        }
        if (file) HandleEvents(file, events[i].events);
      }
    }
  }
}

// Requests come in conversations (a verb, then the next one a few microseconds later), and
// waking a thread whose CPU went idle costs tens of microseconds on a virtual machine (an
// epoll wake-up carries no "sync" hint, so the scheduler picks the idle CPU). So after any
// activity the loop polls for a short window, yielding to whoever else wants the CPU,
// before it sleeps; an idle server costs nothing.
int Server::WaitForEvents(epoll_event* events, int capacity) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPollWindow = std::chrono::microseconds(50);
  int n = 0;
  while ((n = epoll_wait(epoll_fd_, events, capacity, 0)) == 0 &&
         Clock::now() - last_activity_ < kPollWindow) {
    sched_yield();
  }
  if (n == 0) n = epoll_wait(epoll_fd_, events, capacity, -1);
  if (n > 0) last_activity_ = Clock::now();
  return n;
}

void Server::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN, or a transient error (EMFILE...): try again on the next event
    }
    std::shared_ptr<FileContext> file;
    {
      std::lock_guard lock(mutex_);
      file.reset(new FileContext(this, next_file_id_++, fd));
      files_[fd] = file;
      ++stats_.files_opened;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      file->peer_pid_ = cred.pid;
      file->peer_uid_ = cred.uid;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    sink_->Open(*file);
  }
}

void Server::HandleEvents(const std::shared_ptr<FileContext>& file, uint32_t events) {
  if (events & EPOLLOUT) {
    bool retire = false;
    {
      std::lock_guard lock(file->mutex_);
      if (file->FlushLocked()) {
        file->want_write_ = false;
        Rearm(*file);
        retire = file->finalized_;
      }
    }
    if (retire) Retire(file);
  }
  bool closing;
  {
    std::lock_guard lock(file->mutex_);
    closing = file->closing_;
  }
  if (closing) {
    // Only a close frame's answer is left to send; a hang-up now means nobody will read it.
    if ((events & (EPOLLHUP | EPOLLERR)) || PeerHungUp(file->fd_)) {
      bool retire;
      {
        std::lock_guard lock(file->mutex_);
        if (!file->hung_up_) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, file->fd_, nullptr);
        file->hung_up_ = true;
        file->DropQueueLocked();
        retire = file->finalized_;
      }
      if (retire) Retire(file);
    }
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ReadFrames(file);
}

void Server::ReadFrames(const std::shared_ptr<FileContext>& file) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerResponse)];
  // A bounded batch per wake-up keeps one busy file from starving the others.
  for (int batch = 0; batch < 64; ++batch) {
    iovec iov{recv_buffer_.data(), recv_buffer_.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t r = recvmsg(file->fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      BeginClose(file, 0, /*hung_up=*/true);
      return;
    }
    bool had_fds = CloseReceivedFds(msg) || (msg.msg_flags & MSG_CTRUNC);
    if (r == 0 && !had_fds && PeerHungUp(file->fd_)) {
      BeginClose(file, 0, /*hung_up=*/true);
      return;
    }
    HandleFrame(file, static_cast<size_t>(r), (msg.msg_flags & MSG_TRUNC) != 0, had_fds);
    std::lock_guard lock(file->mutex_);
    if (!file->ReadingLocked()) return;  // a close frame, or answers pile up unread
  }
}

void Server::HandleFrame(const std::shared_ptr<FileContext>& file, size_t size, bool truncated,
                         bool had_fds) {
  RequestHeader h{};
  bool header_readable = size >= sizeof h;
  if (header_readable) std::memcpy(&h, recv_buffer_.data(), sizeof h);
  uint64_t id = header_readable && h.magic == kFrameMagic ? h.request_id : 0;
  RejectReason reason = had_fds ? RejectReason::kUnexpectedFds
                                : ValidateRequest(recv_buffer_.data(), size, truncated);
  if (reason != RejectReason::kNone) {
    Reject(*file, id, reason, Status::INVALID_PARAMETER);
    return;
  }
  switch (static_cast<FrameKind>(h.kind)) {
    case FrameKind::kIoctl: {
      {
        std::lock_guard lock(file->mutex_);
        if (file->outstanding_.count(id)) {
          reason = RejectReason::kBadRequestId;
        } else if (file->outstanding_.size() >= kMaxOutstandingPerFile) {
          ResponseHeader busy = MakeResponse(FrameKind::kIoctl, id, Status::INSUFFICIENT_RESOURCES);
          file->SendLocked(busy, {}, {});
          return;
        } else {
          file->outstanding_[id] = FileContext::Slot{h.output_length, false};
        }
      }
      if (reason != RejectReason::kNone) {
        Reject(*file, id, reason, Status::INVALID_PARAMETER);
        return;
      }
      {
        std::lock_guard lock(mutex_);
        ++stats_.requests;
      }
      PendingRequest request;
      request.request_id = id;
      request.ioctl_code = h.ioctl_code;
      request.output_length = h.output_length;
      const uint8_t* input = recv_buffer_.data() + sizeof h;
      request.input.assign(input, input + h.input_length);
      sink_->Submit(*file, std::move(request));
      return;
    }
    case FrameKind::kCancel: {
      std::vector<uint64_t> ids;
      {
        std::lock_guard lock(file->mutex_);
        for (auto& [outstanding_id, slot] : file->outstanding_) {
          bool match = (h.flags & kCancelAll) || outstanding_id == id;
          if (match && !slot.cancel_requested) {
            slot.cancel_requested = true;
            ids.push_back(outstanding_id);
          }
        }
      }
      for (uint64_t cancel_id : ids) sink_->Cancel(*file, cancel_id);
      return;
    }
    case FrameKind::kClose:
      BeginClose(file, id, /*hung_up=*/false);
      return;
    case FrameKind::kReject:
      break;  // ValidateRequest rejected it already
  }
}

void Server::Reject(FileContext& file, uint64_t request_id, RejectReason reason, Status status) {
  {
    std::lock_guard lock(mutex_);
    ++stats_.rejected_frames;
    stats_.last_reject = reason;
  }
  ResponseHeader h = MakeResponse(FrameKind::kReject, request_id, status);
  h.reject_reason = static_cast<uint32_t>(reason);
  std::lock_guard lock(file.mutex_);
  file.SendLocked(h, {}, {});
}

void Server::BeginClose(const std::shared_ptr<FileContext>& file, uint64_t close_request_id,
                        bool hung_up) {
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(file->mutex_);
    if (hung_up && !file->hung_up_) {
      file->hung_up_ = true;
      file->DropQueueLocked();
      if (file->fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, file->fd_, nullptr);
    }
    if (file->closing_) return;
    file->closing_ = true;
    file->close_request_id_ = close_request_id;
    Rearm(*file);  // stop reading
    for (auto& [id, slot] : file->outstanding_) {
      if (!slot.cancel_requested) {
        slot.cancel_requested = true;
        ids.push_back(id);
      }
    }
  }
  for (uint64_t id : ids) sink_->Cancel(*file, id);
  bool finalize = false;
  {
    std::lock_guard lock(file->mutex_);
    if (file->outstanding_.empty() && !file->finalize_queued_) {
      file->finalize_queued_ = true;
      finalize = true;
    }
  }
  if (finalize) Finalize(file);
}

void Server::Finalize(const std::shared_ptr<FileContext>& file) {
  sink_->Close(*file);
  bool retire;
  {
    std::lock_guard lock(file->mutex_);
    file->finalized_ = true;
    if (file->close_request_id_ != 0) {
      file->SendLocked(MakeResponse(FrameKind::kClose, file->close_request_id_, Status::SUCCESS),
                       {}, {});
    }
    retire = file->queue_.empty() || file->hung_up_;
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.files_closed;
  }
  if (retire) Retire(file);
}

void Server::Retire(const std::shared_ptr<FileContext>& file) {
  int fd;
  {
    std::lock_guard lock(file->mutex_);
    fd = file->fd_;
    if (fd < 0) return;
    file->DropQueueLocked();
    if (!file->hung_up_) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    file->hung_up_ = true;
    file->fd_ = -1;
  }
  {
    std::lock_guard lock(mutex_);
    files_.erase(fd);
  }
  close(fd);  // only now, so that the number cannot be reused while files_ names it
}

void Server::RunDeferred() {
  std::vector<std::shared_ptr<FileContext>> ready;
  {
    std::lock_guard lock(mutex_);
    ready.swap(deferred_);
  }
  for (auto& file : ready) Finalize(file);
}

}  // namespace softib::channel
