// AddressWatch: a thread that enters the interface's network namespace (setns affects the
// calling thread only), opens an rtnetlink socket there subscribed to the IPv4 and IPv6
// address groups, dumps the addresses once and then follows the announcements.
#include "softib/ipoib/address_watch.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

namespace softib::ipoib {

struct AddressWatch::State {
  std::string ifname;
  std::string netns;
  Handler handler;
  int stop_fd = -1;
  std::thread thread;
};

namespace {

constexpr size_t kReceiveBytes = 64 * 1024;

std::string WatchError(const std::string& what) { return what + ": " + std::strerror(errno); }

bool IsLinkLocalV6(const IpAddr& a) {
  return a.v6 && a.bytes[0] == 0xFE && (a.bytes[1] & 0xC0) == 0x80;
}

// Asks for every address of the namespace (the answer arrives as RTM_NEWADDR messages).
bool RequestDump(int fd, uint32_t seq) {
  struct {
    nlmsghdr header;
    ifaddrmsg body;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = RTM_GETADDR;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = seq;
  request.body.ifa_family = AF_UNSPEC;
  return send(fd, &request, sizeof request, 0) == static_cast<ssize_t>(sizeof request);
}

// One RTM_NEWADDR / RTM_DELADDR of interface `index`: its address (IFA_LOCAL for IPv4, where
// IFA_ADDRESS may be a point-to-point peer). False for other interfaces and families.
bool AddressOf(const nlmsghdr* message, unsigned index, IpAddr* address) {
  if (message->nlmsg_len < NLMSG_LENGTH(sizeof(ifaddrmsg))) return false;
  const auto* body = static_cast<const ifaddrmsg*>(NLMSG_DATA(message));
  if (body->ifa_index != index || (body->ifa_family != AF_INET && body->ifa_family != AF_INET6))
    return false;
  const size_t size = body->ifa_family == AF_INET ? 4 : 16;
  const rtattr* local = nullptr;
  const rtattr* any = nullptr;
  int left = static_cast<int>(IFA_PAYLOAD(message));
  for (const rtattr* a = IFA_RTA(body); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (RTA_PAYLOAD(a) != size) continue;
    if (a->rta_type == IFA_LOCAL) local = a;
    if (a->rta_type == IFA_ADDRESS) any = a;
  }
  const rtattr* chosen = local != nullptr ? local : any;
  if (chosen == nullptr) return false;
  *address = {};
  address->v6 = body->ifa_family == AF_INET6;
  std::memcpy(address->bytes.data(), RTA_DATA(chosen), size);
  return true;
}

// The watch thread's socket, in the namespace it entered.
struct Socket {
  int fd = -1;
  unsigned index = 0;
  ~Socket() {
    if (fd >= 0) close(fd);
  }
};

bool Open(const std::string& ifname, const std::string& netns, Socket* s, std::string* error) {
  if (!netns.empty()) {
    const std::string path = "/run/netns/" + netns;
    const int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) return *error = WatchError(path), false;
    const int entered = setns(ns, CLONE_NEWNET);
    close(ns);
    if (entered != 0) return *error = WatchError("setns " + netns), false;
  }
  s->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (s->fd < 0) return *error = WatchError("netlink socket"), false;
  ifreq request{};  // the index in the namespace entered (linux/if.h: tap_face.cc's header)
  if (ifname.size() >= sizeof request.ifr_name)
    return *error = "interface " + ifname + ": name too long", false;
  std::memcpy(request.ifr_name, ifname.data(), ifname.size());
  if (ioctl(s->fd, SIOCGIFINDEX, &request) != 0)
    return *error = WatchError("interface " + ifname), false;
  s->index = static_cast<unsigned>(request.ifr_ifindex);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(s->fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
    return *error = WatchError("netlink bind"), false;
  return true;
}

void Run(AddressWatch::Handler& handler, int stop_fd, Socket& s) {
  std::vector<IpAddr> addresses;
  std::vector<uint8_t> buffer(kReceiveBytes);
  uint32_t seq = 1;
  bool dumping = RequestDump(s.fd, seq);
  bool announced = false;
  for (;;) {
    pollfd fds[2] = {{s.fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const ssize_t n = recv(s.fd, buffer.data(), buffer.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (errno == ENOBUFS) {  // announcements were lost: ask for the whole list again
        addresses.clear();
        dumping = RequestDump(s.fd, ++seq);
        continue;
      }
      return;
    }
    bool changed = false;
    int left = static_cast<int>(n);
    for (auto* m = reinterpret_cast<const nlmsghdr*>(buffer.data()); NLMSG_OK(m, left);
         m = NLMSG_NEXT(m, left)) {
      if (m->nlmsg_type == NLMSG_DONE || m->nlmsg_type == NLMSG_ERROR) {
        if (m->nlmsg_seq == seq) dumping = false;
        continue;
      }
      IpAddr address;
      if ((m->nlmsg_type != RTM_NEWADDR && m->nlmsg_type != RTM_DELADDR) ||
          !AddressOf(m, s.index, &address) || IsLinkLocalV6(address)) {
        continue;
      }
      auto at = std::find(addresses.begin(), addresses.end(), address);
      if (m->nlmsg_type == RTM_NEWADDR && at == addresses.end()) {
        addresses.push_back(address);
        changed = true;
      } else if (m->nlmsg_type == RTM_DELADDR && at != addresses.end()) {
        addresses.erase(at);
        changed = true;
      }
    }
    // The first list once the dump is complete, then every change.
    if (!dumping && (changed || !announced)) {
      announced = true;
      handler(addresses);
    }
  }
}

}  // namespace

AddressWatch::AddressWatch(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<AddressWatch> AddressWatch::Start(const std::string& ifname,
                                                  const std::string& netns, Handler handler,
                                                  std::string* error) {
  auto state = std::make_unique<State>();
  state->ifname = ifname;
  state->netns = netns;
  state->handler = std::move(handler);
  state->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state->stop_fd < 0) {
    *error = WatchError("eventfd");
    return nullptr;
  }
  std::promise<std::string> opened;
  std::future<std::string> result = opened.get_future();
  State* raw = state.get();
  raw->thread = std::thread([raw, &opened] {
    Socket s;
    std::string why;
    const bool ok = Open(raw->ifname, raw->netns, &s, &why);
    opened.set_value(why);  // `opened` is not touched after this
    if (ok) Run(raw->handler, raw->stop_fd, s);
  });
  if (std::string why = result.get(); !why.empty()) {
    raw->thread.join();
    close(raw->stop_fd);
    *error = why;
    return nullptr;
  }
  return std::unique_ptr<AddressWatch>(new AddressWatch(std::move(state)));
}

AddressWatch::~AddressWatch() {
  const uint64_t one = 1;
  (void)!write(state_->stop_fd, &one, sizeof one);
  state_->thread.join();
  close(state_->stop_fd);
}

}  // namespace softib::ipoib
