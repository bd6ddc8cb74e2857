#include "control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace softib::tool {

namespace {

int Fail(int code, const std::string& message) {
  std::cerr << "softib: error: " << message << "\n";
  return code;
}

}  // namespace

int ControlRequest(const std::string& path, const std::vector<std::string>& request,
                   const std::string& who, int timeout_ms) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return Fail(2, path + ": path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) close(fd);
    return Fail(1, path + ": " + reason + " (is " + who + " running there?)");
  }
  std::string message;
  for (const std::string& arg : request) message += arg + '\0';
  bool sent = true;
  for (std::size_t at = 0; at < message.size() && sent;) {
    const ssize_t n = send(fd, message.data() + at, message.size() - at, MSG_NOSIGNAL);
    sent = n > 0;
    if (sent) at += static_cast<std::size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) break;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  if (!sent || answer.empty()) return Fail(1, path + ": no answer from softibd");
  const std::size_t eol = answer.find('\n');
  const std::string status = answer.substr(0, eol);
  const std::string body = eol == std::string::npos ? "" : answer.substr(eol + 1);
  if (status != "ok") {
    return Fail(2, status.rfind("error: ", 0) == 0 ? status.substr(7) : "bad answer: " + status);
  }
  std::cout << body;
  return 0;
}

}  // namespace softib::tool
