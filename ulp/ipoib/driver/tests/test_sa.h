// The driver tests' subnet administrator: a kernel client with a SubnAdm MAD service on a
// GSI alias of port 1 of each of the node's two CAs (cabled back to back, no SM), each
// port told that the SM is the other one (PortInfo:MasterSMLID by LocalMad), so that both
// ports' SA requests are answered here. With two-port CAs (LBFO) it serves each link, a pair
// of ports cabled back to back, the same way: PathRecords only between the two ends of one
// link (another link is another subnet, unreachable). It keeps what IPoIB needs: PathRecord Get
// between the two ports, MCMemberRecord joins (an unknown group without create components is
// refused with ERR_REQ_INVALID, as OpenSM does; created with MLIDs from 0xC000), leaves,
// ServiceRecord Set/Delete. Answers on one thread per port.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "softib/abi/types.h"
#include "softib/ipoib/translate.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"

namespace softib::kernel {
class IbAl;
}

namespace softib::ipoib::test {

struct SaGroup {
  uint16_t mlid = 0;
  uint32_t qkey = 0;
  uint8_t mtu = 0;
  uint16_t pkey = 0;
  std::map<Gid, uint8_t> members;  // port GID → JoinState
};

class TestSa {
 public:
  explicit TestSa(kernel::Node* node) : node_(node) {}
  ~TestSa() { Stop(); }
  // Opens both CAs, registers the services, points each port's MasterSMLID at the other.
  bool Start(uint64_t ca_a, uint64_t ca_b);
  // The same over links: (CA, port) pairs, ends[2k] cabled to ends[2k + 1].
  bool Start(const std::vector<std::pair<uint64_t, uint8_t>>& ends);
  // Before Start: the ports are one subnet (a switch, test_switch.h): PathRecords between any
  // two; the SA answers on ends[0] and ends[1] only (the others' MasterSMLID: ends[1] for an
  // even index, ends[0] for an odd one).
  void OneSubnet() { one_subnet_ = true; }
  void Stop();
  // The SM's part after a link came back: every port not Active already (handed to the SM by the
  // MasterSMLID Set, so back in Init) set Armed, then Active.
  bool ActivatePorts();

  // Groups created from then on get at most this MTU (IBTA code: 4 = 2048), as an SM whose
  // partition configuration says so (OpenSM's default IPoIB group: 2048).
  void CapGroupMtu(uint8_t mtu) { max_group_mtu_ = mtu; }
  // PathRecords answered from then on carry this PacketLifeTime (IBTA code; default 18, about
  // 1 s): connected-mode cases shorten the CM's time-wait (2 lifetimes + the ACK timeout).
  void SetPacketLifeTime(uint8_t code) { packet_life_time_ = code; }
  std::map<Gid, SaGroup> groups() const;
  size_t services() const;
  size_t services_of(const Gid& gid) const;  // the ServiceRecords whose ServiceGID is `gid`
  uint64_t path_queries() const { return path_queries_.load(); }
  uint64_t refused_joins() const { return refused_joins_.load(); }

 private:
  struct Port {
    uint64_t ca_guid = 0;
    uint8_t port_num = 1;
    size_t link = 0;  // ports of one link: index / 2
    uint64_t ca = 0, pd = 0, cq = 0, qp = 0, pool = 0, svc = 0;
    uint16_t lid = 0;
    Gid gid{};
    std::thread thread;
  };
  bool OpenPort(Port& port);
  bool SetMasterSm(Port& port, uint16_t sm_lid);
  bool SetPortState(Port& port, uint8_t state);
  void Run(Port* port);
  void Answer(Port* port, const abi::MadEventRecord& from, std::vector<uint8_t> mad);

  kernel::Node* node_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::IbAl* al_ = nullptr;
  std::vector<Port> ports_;  // sized by Start, never grown afterwards (threads hold &port)
  bool one_subnet_ = false;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::map<Gid, SaGroup> groups_;
  std::vector<std::vector<uint8_t>> services_;
  uint16_t next_mlid_ = 0xC000;
  std::atomic<uint8_t> max_group_mtu_{0};
  std::atomic<uint8_t> packet_life_time_{18};
  std::atomic<uint64_t> path_queries_{0}, refused_joins_{0};
};

}  // namespace softib::ipoib::test
