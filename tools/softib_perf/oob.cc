// Out-of-band exchange over a stream socket (Unix or loopback TCP).
#include "oob.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace softib::perf {

namespace {

using Clock = std::chrono::steady_clock;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A socket address for `address`; its length in *length.
sockaddr_storage MakeAddress(const OobAddress& address, socklen_t* length) {
  sockaddr_storage storage{};
  if (address.kind == OobAddress::Kind::kUnix) {
    auto* un = reinterpret_cast<sockaddr_un*>(&storage);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, address.path.c_str(), address.path.size() + 1);
    *length = static_cast<socklen_t>(sizeof(sockaddr_un));
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(address.port);
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *length = static_cast<socklen_t>(sizeof(sockaddr_in));
  }
  return storage;
}

int NewSocket(const OobAddress& address) {
  const int domain = address.kind == OobAddress::Kind::kUnix ? AF_UNIX : AF_INET;
  const int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && domain == AF_INET) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// True if something accepts connections at the Unix path (a live server).
bool UnixPathIsServed(const OobAddress& address) {
  const int fd = NewSocket(address);
  if (fd < 0) return false;
  socklen_t length = 0;
  sockaddr_storage storage = MakeAddress(address, &length);
  const bool served = connect(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0;
  close(fd);
  return served;
}

}  // namespace

OobChannel::~OobChannel() {
  if (fd_ >= 0) close(fd_);
}

OobChannel& OobChannel::operator=(OobChannel&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

bool OobChannel::Accept(const OobAddress& address, std::chrono::milliseconds limit,
                        OobChannel* channel, std::string* error) {
  const int listener = NewSocket(address);
  if (listener < 0) {
    *error = Errno("socket");
    return false;
  }
  if (address.kind == OobAddress::Kind::kUnix) {
    struct stat st {};
    if (lstat(address.path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        close(listener);
        *error = address.path + " exists and is not a socket";
        return false;
      }
      if (UnixPathIsServed(address)) {
        close(listener);
        *error = address.path + " is in use by another server";
        return false;
      }
      unlink(address.path.c_str());  // a stale socket of a server that is gone
    }
  } else {
    const int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  socklen_t length = 0;
  sockaddr_storage storage = MakeAddress(address, &length);
  if (bind(listener, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      listen(listener, 1) != 0) {
    *error = Errno("bind/listen");
    close(listener);
    return false;
  }
  const bool ready = WaitFor(listener, POLLIN, Clock::now() + limit);
  const int fd = ready ? accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
  if (!ready) *error = "no client connected within " + std::to_string(limit.count() / 1000) + " s";
  if (ready && fd < 0) *error = Errno("accept");
  close(listener);
  if (address.kind == OobAddress::Kind::kUnix) unlink(address.path.c_str());
  if (fd < 0) return false;
  if (address.kind == OobAddress::Kind::kTcp) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  *channel = OobChannel(fd);
  return true;
}

bool OobChannel::Connect(const OobAddress& address, std::chrono::milliseconds limit,
                         OobChannel* channel, std::string* error) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const int fd = NewSocket(address);
    if (fd < 0) {
      *error = Errno("socket");
      return false;
    }
    socklen_t length = 0;
    sockaddr_storage storage = MakeAddress(address, &length);
    if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0) {
      *channel = OobChannel(fd);
      return true;
    }
    const int saved = errno;
    close(fd);
    // The server may not listen yet: retry while the address is absent or refuses.
    if (saved != ENOENT && saved != ECONNREFUSED) {
      errno = saved;
      *error = Errno("connect");
      return false;
    }
    if (Clock::now() > deadline) {
      *error = "no server at the out-of-band address within " +
               std::to_string(limit.count() / 1000) + " s";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool OobChannel::Pair(OobChannel* a, OobChannel* b, std::string* error) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    *error = Errno("socketpair");
    return false;
  }
  *a = OobChannel(fds[0]);
  *b = OobChannel(fds[1]);
  return true;
}

bool OobChannel::Send(const void* data, size_t size, std::string* error) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd_, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = Errno("out-of-band send");
      return false;
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool OobChannel::Receive(void* data, size_t size, std::chrono::milliseconds limit,
                         std::string* error) {
  const auto deadline = Clock::now() + limit;
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    if (!WaitFor(fd_, POLLIN, deadline)) {
      *error = "the peer sent nothing within " + std::to_string(limit.count() / 1000) + " s";
      return false;
    }
    const ssize_t n = recv(fd_, bytes, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      *error = "the peer closed the out-of-band connection";
      return false;
    }
    if (n < 0) {
      *error = Errno("out-of-band receive");
      return false;
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool OobChannel::Exchange(const Token& mine, Token* theirs, std::chrono::milliseconds limit,
                          std::string* error) {
  if (!SendValue(mine, error) || !ReceiveValue(theirs, limit, error)) return false;
  if (theirs->code != mine.code) {
    *error = theirs->code == kFailed ? "the peer failed" : "the peer is out of step";
    return false;
  }
  return true;
}

}  // namespace softib::perf
