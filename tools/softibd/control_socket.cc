#include "control_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace softib::softibd {

namespace {

// Waits (bounded) until `fd` is ready for `events`.
bool WaitFor(int fd, short events) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, ControlSocket::kIoTimeoutMs) == 1;
}

}  // namespace

bool ControlSocket::Start(const std::string& path, Handler handler, std::string* error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    *error = path + ": path too long for a Unix socket";
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  (void)unlink(path.c_str());  // the run directory is ours (locked): a leftover is stale
  if (listen_fd_ < 0 || stop_fd_ < 0 ||
      bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      listen(listen_fd_, 16) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  path_ = path;
  handler_ = std::move(handler);
  thread_ = std::thread([this] { Run(); });
  return true;
}

void ControlSocket::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (!path_.empty()) (void)unlink(path_.c_str());
  path_.clear();
  for (int* fd : {&listen_fd_, &stop_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void ControlSocket::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    Serve(client);
    close(client);
  }
}

void ControlSocket::Serve(int client) {
  std::string request;
  char buffer[4096];
  for (;;) {
    if (!WaitFor(client, POLLIN)) return;  // a silent client: given up on
    const ssize_t n = read(client, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    request.append(buffer, static_cast<std::size_t>(n));
    if (request.size() > kMaxRequestBytes) break;
  }
  std::string answer;
  std::vector<std::string> args;
  if (request.size() > kMaxRequestBytes) {
    answer = "error: request longer than " + std::to_string(kMaxRequestBytes) + " bytes\n";
  } else if (request.empty() || request.back() != '\0') {
    answer = "error: a request is arguments each ended by a NUL byte\n";
  } else {
    for (std::size_t at = 0; at < request.size();) {
      const std::size_t end = request.find('\0', at);
      args.push_back(request.substr(at, end - at));
      at = end + 1;
    }
    answer = handler_(args);
  }
  for (std::size_t sent = 0; sent < answer.size();) {
    const ssize_t n = send(client, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if ((errno == EAGAIN || errno == EINTR) && WaitFor(client, POLLOUT)) continue;
      return;
    }
    sent += static_cast<std::size_t>(n);
  }
}

}  // namespace softib::softibd
