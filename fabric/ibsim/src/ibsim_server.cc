#include "softib/fabric/ibsim_server.h"

#include "softib/smp/directed_route.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace softib::fabric::ibsim {

namespace {

// An abstract-namespace address: sun_path[0] = 0, the name, and one trailing NUL counted
// in the length — exactly as ibsim and libumad2sim build theirs (they must match byte for
// byte, length included).
socklen_t AbstractAddress(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  const std::size_t n = std::min(name.size(), sizeof addr->sun_path - 2);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n + 1);
}

int BoundSocket(const std::string& name, std::string* error) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un addr;
  const socklen_t len = AbstractAddress(name, &addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    *error = "bind @" + name + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

constexpr std::size_t kMethod = 3;      // MAD header: Method
constexpr std::size_t kHopCount = 7;    // SMP: HopCount
constexpr uint8_t kResponseBit = 0x80;  // Method: R
constexpr uint8_t kDirectedRouteClass = 0x81;

bool IsResponse(const Request& r) { return (r.mad[kMethod] & kResponseBit) != 0; }

}  // namespace

SimServer::SimServer(std::string base_name, std::vector<AttachPort> ports)
    : base_(std::move(base_name)), ports_(std::move(ports)) {
  out_fd_.fill(-1);
}

SimServer::~SimServer() { Stop(); }

bool SimServer::Start(std::string* error) {
  if (ports_.empty()) {
    *error = "no port for a client to attach to";
    return false;
  }
  ctl_fd_ = BoundSocket(base_ + ":ctl", error);
  if (ctl_fd_ < 0) return false;
  for (uint32_t i = 0; i < kMaxClients; ++i) {
    out_fd_[i] = BoundSocket(base_ + ":out" + std::to_string(i), error);
    if (out_fd_[i] < 0) {
      Stop();
      return false;
    }
  }
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Run(); });
  return true;
}

void SimServer::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  for (int& fd : out_fd_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  if (ctl_fd_ >= 0) close(ctl_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  ctl_fd_ = stop_fd_ = -1;
}

uint32_t SimServer::clients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t n = 0;
  for (const Client& c : clients_) n += c.used ? 1 : 0;
  return n;
}

void SimServer::Run() {
  for (;;) {
    pollfd fds[kMaxClients + 2];
    fds[0] = {stop_fd_, POLLIN, 0};
    fds[1] = {ctl_fd_, POLLIN, 0};
    for (uint32_t i = 0; i < kMaxClients; ++i) fds[2 + i] = {out_fd_[i], POLLIN, 0};
    if (poll(fds, kMaxClients + 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if (fds[1].revents & POLLIN) HandleCtl();
    for (uint32_t i = 0; i < kMaxClients; ++i) {
      // What the client queued (up to a bound, so no client starves the others), not one
      // record per poll: an SM keeps a window of SMPs in flight.
      if (fds[2 + i].revents & POLLIN) {
        for (int n = 0; n < 256 && HandleData(i); ++n) {
        }
      }
    }
  }
}

void SimServer::HandleCtl() {
  uint8_t buffer[kCtlBytes + 1];
  sockaddr_un from;
  socklen_t from_len = sizeof from;
  const ssize_t n =
      recvfrom(ctl_fd_, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
  if (n < 0) return;
  const auto request = ParseCtl(std::span<const uint8_t>(buffer, static_cast<std::size_t>(n)));
  // ibsim drops a message with a wrong size or magic without a reply; so do we.
  if (!request || request->magic != kCtlMagic) return;
  if (request->type != CtlType::kConnect && request->client_id >= kMaxClients) return;
  const auto reply = EncodeCtl(Control(*request));
  (void)sendto(ctl_fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from),
               from_len);
}

std::optional<uint32_t> SimServer::FindPort(const std::string& host) const {
  if (host.empty()) return 0;
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    if (ports_[i].nodeid == host || ports_[i].description == host) return i;
  }
  // SIM_HOST holds at most 31 characters: a longer description matches by its prefix; and
  // the host name alone ("host-0003" of "host-0003 HCA-1", softibd's node directory) too.
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    const std::string& d = ports_[i].description;
    if (host.size() == 31 && d.compare(0, 31, host) == 0) return i;
    if (d.compare(0, host.size(), host) == 0 && d.size() > host.size() && d[host.size()] == ' ')
      return i;
  }
  return std::nullopt;
}

CtlMessage SimServer::Control(const CtlMessage& request) {
  CtlMessage reply = request;
  auto fail = [&] {
    reply.type = CtlType::kError;
    return reply;
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (request.type == CtlType::kConnect) {
    ClientInfo info = ParseClientInfo(request.data);
    const auto port = FindPort(info.nodeid);
    if (!port) return fail();
    uint32_t slot = 0;
    while (slot < kMaxClients && clients_[slot].used) ++slot;
    if (slot == kMaxClients) return fail();
    if (info.issm != 0) {
      for (const Client& c : clients_) {
        if (c.used && c.issm && c.port == *port) return fail();  // one SM per port
      }
    }
    sockaddr_un addr;
    const socklen_t len = AbstractAddress(base_ + ":in" + std::to_string(info.id), &addr);
    if (connect(out_fd_[slot], reinterpret_cast<sockaddr*>(&addr), len) != 0) return fail();
    clients_[slot] = {true, info.id, *port, info.issm != 0};
    info.id = slot;
    info.nodeid = ports_[*port].nodeid;
    EncodeClientInfo(info, &reply.data);
    reply.client_id = slot;
    return reply;
  }
  Client& client = clients_[request.client_id];
  if (!client.used) return fail();
  const AttachPort& port = ports_[client.port];
  reply.data.fill(0);
  switch (request.type) {
    case CtlType::kDisconnect: {
      client = {};
      sockaddr_un none{};
      none.sun_family = AF_UNSPEC;
      (void)connect(out_fd_[request.client_id], reinterpret_cast<sockaddr*>(&none), sizeof none);
      return reply;
    }
    case CtlType::kGetPort: {
      const uint16_t lid = port.lid();
      std::memcpy(&reply.data[0], &lid, 2);
      reply.data[2] = 4;  // ACTIVE
      return reply;
    }
    case CtlType::kGetVendor: {
      // NodeInfo (IBA 14.2.5.3): DeviceID @32, Revision @34, VendorID @37 (24 bits).
      const auto& ni = port.node_info;
      const uint32_t vendor = uint32_t{ni[37]} << 16 | uint32_t{ni[38]} << 8 | ni[39];
      const uint32_t part = uint32_t{ni[32]} << 8 | ni[33];
      const uint32_t hw = uint32_t{ni[34]} << 24 | uint32_t{ni[35]} << 16 | uint32_t{ni[36]} << 8;
      const uint64_t fw = 1;
      std::memcpy(&reply.data[0], &vendor, 4);
      std::memcpy(&reply.data[4], &part, 4);
      std::memcpy(&reply.data[8], &hw, 4);
      std::memcpy(&reply.data[16], &fw, 8);
      return reply;
    }
    case CtlType::kGetGuid: {
      uint64_t guid = 0;
      for (int i = 0; i < 8; ++i) guid = guid << 8 | port.node_info[12 + i];  // NodeGUID @12
      std::memcpy(&reply.data[0], &guid, 8);
      return reply;
    }
    case CtlType::kGetGid: {
      const auto pi = port.port_info(port.port_num);
      std::memcpy(&reply.data[0], &pi[8], 8);  // GidPrefix @8
      uint64_t guid = 0;
      for (int i = 0; i < 8; ++i) guid = guid << 8 | port.node_info[12 + i];
      std::memcpy(&reply.data[8], &guid, 8);  // host order, as ibsim sends it
      return reply;
    }
    case CtlType::kGetNodeInfo:
      std::memcpy(reply.data.data(), port.node_info.data(), 64);
      return reply;
    case CtlType::kGetPortInfo: {
      const uint8_t which = request.data[0] == 0 ? port.port_num : request.data[0];
      const auto pi = port.port_info(which);
      std::memcpy(reply.data.data(), pi.data(), 64);
      return reply;
    }
    case CtlType::kSetIssm: {
      int32_t on = 0;
      std::memcpy(&on, &request.data[0], 4);
      client.issm = on != 0;
      return reply;
    }
    case CtlType::kGetPkeys:
      reply.data[0] = 0xFF;  // the default partition, full member
      reply.data[1] = 0xFF;
      return reply;
    default:
      return fail();
  }
}

bool SimServer::HandleData(uint32_t slot) {
  uint8_t buffer[kRequestBytes + 1];
  const ssize_t n = recv(out_fd_[slot], buffer, sizeof buffer, MSG_DONTWAIT);
  if (n < 0) return false;
  auto record = ParseRequest(std::span<const uint8_t>(buffer, static_cast<std::size_t>(n)));
  if (!record) return true;  // "bad packet size": ibsim drops it too
  uint32_t port_index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!clients_[slot].used) return true;
    port_index = clients_[slot].port;
  }
  Forward(slot, port_index, *record);
  return true;
}

void SimServer::Forward(uint32_t slot, uint32_t port_index, Request& record) {
  const AttachPort& port = ports_[port_index];
  // Asked once per record: it may come from the port's SMA (a PortInfo Get).
  const uint16_t port_lid = port.lid();
  if (!IsResponse(record)) SetTidClient(&record, slot);
  // The port's own agents: a directed-route SMP of hop count 0, or a MAD for its own LID.
  const bool directed = record.mad[1] == kDirectedRouteClass;
  const bool local = directed ? record.mad[kHopCount] == 0 : record.dlid == port_lid;
  if (local) {
    Request reply = record;
    if (port.local_mad) {
      if (auto answer = port.local_mad(record.mad)) {
        reply.mad = *answer;
        // After the agents ran: a Set may have given the port its LID.
        reply.dlid = record.slid == 0 ? port.lid() : record.slid;
        reply.slid = directed ? 0xFFFF : port.lid();
        std::swap(reply.dqp, reply.sqp);
        SendToClient(slot, reply);
        return;
      }
    }
    // A GMP the port's own agents do not take (an SA request to an SM on this port, its
    // answer) loops back to the port's other client, as an HCA loops back a packet to its
    // own LID: a response to the client its TID names, a request to the first other one.
    if (!directed && record.dqp != 0) {
      std::optional<uint32_t> to;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (IsResponse(record)) {
          const auto named = static_cast<uint32_t>(Tid(record) >> 48);
          if (named < kMaxClients && clients_[named].used && clients_[named].port == port_index)
            to = named;
        }
        for (uint32_t i = 0; i < kMaxClients && !to && !IsResponse(record); ++i)
          if (i != slot && clients_[i].used && clients_[i].port == port_index) to = i;
      }
      if (to) {
        Request looped = record;
        looped.slid = port.lid();
        SendToClient(*to, looped);
        return;
      }
    }
    reply.status = kStatusDropped;  // nobody answers: the client times out at once
    SendToClient(slot, reply);
    return;
  }
  // The originating node's SMI (IBA 14.2.2, C14-9/C14-13): the hop pointer moves and the
  // path must leave through the client's port — ibsim does this for its clients too.
  if (directed) {
    const smp::Drop why = smp::PrepareSend(record.mad, {false, port.num_ports}, port.port_num);
    if (why != smp::Drop::kNone) {
      record.status = kStatusDropped;
      SendToClient(slot, record);
      return;
    }
  }
  std::vector<uint8_t> packet = PacketFromRequest(record, port_lid);
  if (packet.empty()) {
    record.status = kStatusDropped;
    SendToClient(slot, record);
    return;
  }
  port.transmit(std::move(packet));
}

bool SimServer::Deliver(uint32_t index, std::span<const uint8_t> packet) {
  std::optional<uint32_t> slot;
  Request record;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bool any = false;
    for (const Client& c : clients_) any |= c.used && c.port == index;
    if (!any) return false;
    auto parsed = RequestFromPacket(packet);
    if (!parsed) return false;
    record = *parsed;
    if (record.mad[1] == kDirectedRouteClass) {
      // The receiving SMI's rules: only an SMP that ends here is the client's.
      const AttachPort& port = ports_[index];
      const smp::Decision d = smp::OnArrival(record.mad, {false, port.num_ports}, port.port_num);
      if (d.verdict != smp::Verdict::kLocal) return false;
    }
    if (IsResponse(record)) {
      const uint32_t to = static_cast<uint32_t>(Tid(record) >> 48);
      if (to < kMaxClients && clients_[to].used && clients_[to].port == index) slot = to;
    } else {
      // A request for the port: its SM client for SMPs, else the first client there.
      for (uint32_t i = 0; i < kMaxClients && !slot; ++i) {
        const Client& c = clients_[i];
        if (c.used && c.port == index && (record.dqp != 0 || c.issm)) slot = i;
      }
    }
  }
  if (!slot) return false;
  SendToClient(*slot, record);
  return true;
}

void SimServer::SendToClient(uint32_t slot, const Request& record) {
  const auto bytes = EncodeRequest(record);
  for (int waits = 0;; ++waits) {
    if (send(out_fd_[slot], bytes.data(), bytes.size(), MSG_DONTWAIT) >= 0) return;
    if (errno == ECONNREFUSED || errno == ENOTCONN) {
      std::lock_guard<std::mutex> lock(mutex_);
      clients_[slot] = {};  // "client seems to be dead": its slot is free again
      return;
    }
    // The client's socket is full (an SM with a wide window reading slower than the fabric
    // answers): wait for room rather than lose the answer, but never hang on a client that
    // stopped reading — after a second the record is dropped, as a lost MAD.
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || waits == 100) return;
    pollfd out{out_fd_[slot], POLLOUT, 0};
    (void)poll(&out, 1, 10);
  }
}

}  // namespace softib::fabric::ibsim
