// An in-memory fabric for the SM's tests: the nodes and cables of a fabric::Topology, each
// node's SMA answering the SMPs a heavy sweep sends (NodeInfo, NodeDescription, SwitchInfo,
// PortInfo, P_KeyTable, LFT and MFT blocks; directed-route and LID-routed) from what it holds
// and keeping what the SM writes. Several SMs attach at CA ports, one MadPort each, and
// share the one fabric: what one SM wrote, the next one finds.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "queued_port.h"
#include "softib/sm/sminfo.h"
#include "softib/sm/subnet.h"

namespace softib::sm::testing {

class FakeFabric {
 public:
  // Every linked port in Init with LinkUp, GIDPrefix fe80::, LIDs as the topology presets
  // them (SubnetFromTopology's defaults).
  explicit FakeFabric(const fabric::Topology& topology);

  // A MadPort whose SMPs leave from `port` of CA `node` (its hop 0).
  std::unique_ptr<MadPort> Attach(NodeId node, uint8_t port);

  // Another SM at a CA port: `answer` gets every SMInfo Get or Set that reaches the port
  // (method, attribute modifier) and returns what that SM says, or nullopt for no answer
  // (the request is lost: the asking SM times out). The port advertises IsSM.
  using SmInfoAnswer = std::function<std::optional<SmIdentity>(uint8_t method, uint32_t modifier)>;
  void AddPeerSm(NodeId node, uint8_t port, SmInfoAnswer answer);

  // `lose(node, smp)` true: the request to `node` is lost (the SM times out), as on a loaded
  // host whose answer comes too late.
  void set_lose(std::function<bool(NodeId node, const MadBytes& smp)> lose) {
    lose_ = std::move(lose);
  }

  // What a port's SMA holds now, and how many PortInfo Sets it took.
  const mad::PortInfo& port_info(NodeId node, uint8_t port) const;
  unsigned port_info_sets(NodeId node, uint8_t port) const;
  // Node ids are the topology's node indexes.
  const Subnet& nodes() const { return state_; }

 private:
  class SmPortOfFabric;
  // The node and port a request from `origin` reaches: along its InitialPath, or to the
  // owner of `dlid` when LID-routed; nullopt when it falls off the fabric.
  std::optional<EndPort> Reach(const EndPort& origin, const MadBytes& smp, uint16_t dlid) const;
  // The SMA of `at` (entered through `in_port`) turns `smp` into its response.
  // False: no answer (an SMInfo request a peer SM leaves unanswered).
  bool Answer(NodeId at, uint8_t in_port, MadBytes& smp);
  uint16_t AnswerPortInfo(NodeId at, uint8_t in_port, MadBytes& smp);
  void AnswerBlock(std::array<uint8_t, 64>& stored, MadBytes& smp);

  Subnet state_;  // as the SMAs hold it; ports[].info is each port's PortInfo
  std::map<std::pair<NodeId, uint8_t>, unsigned> sets_;  // PortInfo Sets by node and port
  std::map<std::pair<NodeId, uint8_t>, SmInfoAnswer> peer_sms_;
  std::function<bool(NodeId, const MadBytes&)> lose_;
  // P_KeyTable, LFT and MFT blocks by attribute, node and modifier (a CA's port in 23:16).
  std::map<std::tuple<uint16_t, NodeId, uint32_t>, std::array<uint8_t, 64>> blocks_;
};

}  // namespace softib::sm::testing
