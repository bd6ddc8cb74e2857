#include "fabric_cmd.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace softib::fabrictool {

namespace {

constexpr int kTimeoutMs = 30000;  // a host's removal waits for its node's clients

int Fail(int code, const std::string& message) {
  std::cerr << "softib: error: " << message << "\n";
  return code;
}

}  // namespace

void AddFabricCommand(CLI::App& app, FabricCli& cli) {
  cli.fabric = app.add_subcommand(
      "fabric",
      "a running softibd's fabric: links | set CABLE key=value... | down CABLE | up CABLE | "
      "capture CABLE FILE | capture-stop CABLE | remove HOST | add HOST (CABLE: NODE:PORT or "
      "the index links prints; HOST: a full host's name, its CA pulled out or put back)");
  cli.fabric->add_option("--run-dir", cli.run_dir, "the softibd's run directory")->required();
  cli.fabric->add_option("request", cli.request, "the request and its arguments")->required();
}

int RunFabricCommand(const FabricCli& cli) {
  std::vector<std::string> request = cli.request;
  // The daemon writes the capture; a relative name means the caller's directory.
  if (request.size() == 3 && request[0] == "capture")
    request[2] = std::filesystem::absolute(request[2]).lexically_normal().string();
  const std::string path = cli.run_dir + "/fabric.ctl";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return Fail(2, path + ": path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) close(fd);
    return Fail(1, path + ": " + reason + " (is softibd --fabric running there?)");
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
    if (poll(&p, 1, kTimeoutMs) != 1) break;
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

}  // namespace softib::fabrictool
