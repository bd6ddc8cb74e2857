#include "softib/ipoib/link_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace softib::ipoib::link {

namespace {

const char* IpBinary() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return nullptr;
}

std::string Joined(const std::vector<std::string>& args) {
  std::string text = "ip";
  for (const std::string& a : args) text += " " + a;
  return text;
}

// `ip -n NETNS` or plain `ip`.
std::vector<std::string> In(const std::string& netns, std::vector<std::string> args) {
  if (!netns.empty()) args.insert(args.begin(), {"-n", netns});
  return args;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

bool RunIp(const std::vector<std::string>& args, std::string* error, std::string* output) {
  const char* ip = IpBinary();
  if (ip == nullptr) {
    *error = Joined(args) + ": iproute2's ip is not installed";
    return false;
  }
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = Joined(args) + ": pipe: " + std::strerror(errno);
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = Joined(args) + ": pipe: " + std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return false;
  }
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  std::string name = "ip";
  argv.push_back(name.data());
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, ip, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  std::string text[2];
  if (spawned == 0) {
    // Both pipes until EOF (ip's output is small, but read them together so neither fills).
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open = 2;
    while (open > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buffer[4096];
        const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
        if (n > 0) {
          text[i].append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open;
        }
      }
    }
  }
  close(out[0]);
  close(err[0]);
  if (spawned != 0) {
    *error = Joined(args) + ": cannot run " + ip + ": " + std::strerror(spawned);
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (output != nullptr) *output = text[0];
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string said = Trimmed(text[1].empty() ? text[0] : text[1]);
    *error = Joined(args) + ": " + (said.empty() ? "failed" : said);
    return false;
  }
  return true;
}

bool NetnsExists(const std::string& netns) {
  if (netns.empty() || netns.find('/') != std::string::npos || netns == "." || netns == "..")
    return false;
  return access(("/run/netns/" + netns).c_str(), F_OK) == 0;
}

std::string CheckCidr(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return "\"" + text + "\" is not ADDRESS/PREFIX-LENGTH";
  const std::string address = text.substr(0, slash);
  const std::string length = text.substr(slash + 1);
  uint8_t bytes[16];
  int max = 0;
  if (inet_pton(AF_INET, address.c_str(), bytes) == 1) {
    max = 32;
  } else if (inet_pton(AF_INET6, address.c_str(), bytes) == 1) {
    max = 128;
  } else {
    return "\"" + address + "\" is not an IPv4 or IPv6 address";
  }
  if (length.empty() || length.size() > 3 ||
      length.find_first_not_of("0123456789") != std::string::npos || std::stoi(length) > max) {
    return "\"" + text + "\": the prefix length must be 0-" + std::to_string(max);
  }
  return "";
}

bool IsIpv6Cidr(const std::string& text) { return text.find(':') != std::string::npos; }

bool MoveToNetns(const std::string& ifname, const std::string& netns, std::string* error) {
  if (!NetnsExists(netns)) {
    *error = "network namespace \"" + netns + "\" does not exist (ip netns add " + netns + ")";
    return false;
  }
  return RunIp({"link", "set", "dev", ifname, "netns", netns}, error);
}

bool AddAddress(const std::string& ifname, const std::string& netns, const std::string& cidr,
                std::string* error) {
  if (std::string bad = CheckCidr(cidr); !bad.empty()) {
    *error = bad;
    return false;
  }
  std::vector<std::string> args = {"address", "add", cidr, "dev", ifname};
  if (IsIpv6Cidr(cidr)) args.push_back("nodad");
  return RunIp(In(netns, args), error);
}

bool SetLinkUp(const std::string& ifname, const std::string& netns, bool up, std::string* error) {
  return RunIp(In(netns, {"link", "set", "dev", ifname, up ? "up" : "down"}), error);
}

bool Rename(const std::string& ifname, const std::string& netns, const std::string& new_name,
            std::string* error) {
  return RunIp(In(netns, {"link", "set", "dev", ifname, "name", new_name}), error);
}

bool SetMtu(const std::string& ifname, const std::string& netns, uint32_t mtu, std::string* error) {
  return RunIp(In(netns, {"link", "set", "dev", ifname, "mtu", std::to_string(mtu)}), error);
}

}  // namespace softib::ipoib::link
