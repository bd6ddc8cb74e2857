// softib's fabric as an ibsim server: unmodified programs run under `ibsim-run` (Debian's
// libumad2sim.so from ibsim-utils) — OpenSM, ibnetdiscover, smpquery, perfquery, saquery —
// attach to a CA port of softib's fabric and send and receive MADs there as if that port
// were their HCA. The server speaks the ibsim client protocol (ibsim_protocol.h) on
// AF_UNIX datagram sockets in the abstract namespace named after IBSIM_SOCKNAME:
// "<base>:ctl" for control, "<base>:out0".."<base>:out9" for the clients' MADs.
//
// A client's MAD leaves its port as a real packet into the fabric (a directed-route SMP
// through the switches' SMAs and relays); what comes back to the port — a response
// carrying the client's index in TID bits 63..48, or a request for the port while a client
// is attached there — goes to the client instead of the HCA. MADs for the attached port
// itself (hop count 0, or its own LID) are answered by its own agents (`local_mad`).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "softib/fabric/ibsim_protocol.h"

namespace softib::fabric::ibsim {

// A port a client may attach to.
struct AttachPort {
  std::string nodeid;       // the topology's node id ("H-0002c90300a00010")
  std::string description;  // NodeDescription ("host-0001 HCA-1"); SIM_HOST may name either
  uint8_t port_num = 1;
  uint8_t num_ports = 1;                // the CA's ports (directed-route rules)
  std::array<uint8_t, 64> node_info{};  // NodeInfo, wire format (GET_NODEINFO, GET_VENDOR)
  std::function<uint16_t()> lid;        // the port's current LID
  // PortInfo of port `port` of this node, wire format (GET_PORTINFO).
  std::function<std::array<uint8_t, 64>(uint8_t port)> port_info;
  // Transmits a packet from this port into the fabric (any thread).
  std::function<void(std::vector<uint8_t>)> transmit;
  // The port's own agents (SMA, PMA) on a 256-byte MAD; nullopt: no answer.
  std::function<std::optional<std::array<uint8_t, 256>>(std::span<const uint8_t>)> local_mad;
};

class SimServer {
 public:
  // `ports[0]` is where a client without SIM_HOST attaches.
  SimServer(std::string base_name, std::vector<AttachPort> ports);
  ~SimServer();  // Stop()
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // Binds the sockets and starts the thread; false with `error` set (e.g. another server
  // holds the names).
  bool Start(std::string* error);
  void Stop();

  // A packet arrived at port `index` (the fabric's thread): true when it was a client's
  // and went to the client; false when the port's HCA should have it.
  bool Deliver(uint32_t index, std::span<const uint8_t> packet);

  uint32_t clients() const;

 private:
  struct Client {
    bool used = false;
    uint32_t pid = 0;
    uint32_t port = 0;
    bool issm = false;
  };
  void Run();
  void HandleCtl();
  // One record from the client in `slot`; false when its socket had none.
  bool HandleData(uint32_t slot);
  // The record (a MAD from the client's port) into the fabric or to the port's own agents.
  void Forward(uint32_t slot, uint32_t port_index, Request& record);
  CtlMessage Control(const CtlMessage& request);
  void SendToClient(uint32_t slot, const Request& record);
  std::optional<uint32_t> FindPort(const std::string& host) const;

  const std::string base_;
  std::vector<AttachPort> ports_;
  int ctl_fd_ = -1;
  std::array<int, kMaxClients> out_fd_{};
  int stop_fd_ = -1;          // eventfd
  mutable std::mutex mutex_;  // clients_, the out sockets' connections
  std::array<Client, kMaxClients> clients_{};
  std::thread thread_;
};

}  // namespace softib::fabric::ibsim
