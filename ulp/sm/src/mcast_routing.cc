// Multicast spanning trees and the MFT blocks that carry them.
#include "softib/sm/mcast_routing.h"

#include <algorithm>
#include <deque>
#include <set>

#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

// Breadth-first over switch-switch links from `from`: each switch's hop count (SIZE_MAX:
// unreachable) and the first link that reached it, which is its link up a tree rooted there.
struct Up {
  NodeId parent = kNoNode;
  uint8_t port = 0;         // this switch's port towards the parent
  uint8_t parent_port = 0;  // the parent's port towards this switch
};
struct SwitchBfs {
  std::vector<std::size_t> hops;
  std::vector<Up> up;
};
SwitchBfs Bfs(const Subnet& subnet, NodeId from) {
  SwitchBfs out{std::vector<std::size_t>(subnet.nodes().size(), SIZE_MAX),
                std::vector<Up>(subnet.nodes().size())};
  std::deque<NodeId> todo{from};
  out.hops[from] = 0;
  while (!todo.empty()) {
    const NodeId n = todo.front();
    todo.pop_front();
    const SmNode& node = subnet.node(n);
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      const SmPort& port = node.ports[p];
      if (!port.linked() || !subnet.node(port.peer).is_switch() || out.hops[port.peer] != SIZE_MAX)
        continue;
      out.hops[port.peer] = out.hops[n] + 1;
      out.up[port.peer] = {n, port.peer_port, p};
      todo.push_back(port.peer);
    }
  }
  return out;
}

}  // namespace

McastTree ComputeMcastTree(const Subnet& subnet, const std::vector<EndPort>& members) {
  McastTree tree;
  // Where each member attaches: its own switch (port 0), or the switch port its CA port is
  // cabled to. A CA port cabled to nothing, or to another CA, needs no switch.
  std::map<NodeId, PortMask> attach;
  for (const EndPort& m : members) {
    const SmNode& node = subnet.node(m.node);
    if (node.is_switch()) {
      attach[m.node].set(0);
      continue;
    }
    const SmPort& port = node.ports[m.port];
    if (port.linked() && subnet.node(port.peer).is_switch()) attach[port.peer].set(port.peer_port);
  }
  if (attach.empty()) return tree;

  // The root: the switch whose farthest member switch is nearest (ties: the lower NodeId).
  std::vector<std::vector<std::size_t>> from_members;
  for (const auto& a : attach) from_members.push_back(Bfs(subnet, a.first).hops);
  std::size_t best = SIZE_MAX;
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    if (!subnet.node(n).is_switch()) continue;
    std::size_t worst = 0;
    for (const auto& hops : from_members) worst = std::max(worst, hops[n]);
    if (worst < best) best = worst, tree.root = n;
  }
  if (best == SIZE_MAX) {
    tree.error = "the members' switches are not connected";
    return tree;
  }

  // Each switch hangs off its parent by the first link a breadth-first walk from the root found.
  const std::vector<Up> up = Bfs(subnet, tree.root).up;
  // Each member switch climbs to the root; the links it climbs are the tree's.
  for (const auto& [sw, ports] : attach) {
    tree.masks[sw] |= ports;
    for (NodeId n = sw; n != tree.root;) {
      const Up& u = up[n];
      const bool joined = tree.masks[n].test(u.port);
      tree.masks[n].set(u.port);
      tree.masks[u.parent].set(u.parent_port);
      if (joined) break;  // the rest of the way up is there already
      n = u.parent;
    }
  }
  tree.masks[tree.root];  // a lone member switch still holds its entry
  return tree;
}

std::vector<MftBlock> MftBlocksToWrite(uint8_t num_ports,
                                       const std::map<uint16_t, PortMask>& programmed,
                                       const std::map<uint16_t, PortMask>& desired, bool all) {
  auto mask_of = [](const std::map<uint16_t, PortMask>& table, uint16_t mlid) {
    const auto it = table.find(mlid);
    return it == table.end() ? PortMask{} : it->second;
  };
  auto part = [](const PortMask& mask, unsigned position) {
    return static_cast<uint16_t>(
        ((mask >> (position * kMftPortsPerPosition)) & PortMask{0xFFFF}).to_ulong());
  };
  const unsigned positions = num_ports / kMftPortsPerPosition + 1;
  // (block, position) pairs with any difference, in order.
  std::set<std::pair<unsigned, unsigned>> dirty;
  auto consider = [&](uint16_t mlid) {
    const unsigned block = (mlid - kFirstMulticastLid) / kMftBlockMlids;
    const PortMask want = mask_of(desired, mlid);
    const PortMask have = mask_of(programmed, mlid);
    for (unsigned pos = 0; pos < positions; ++pos)
      if (part(want, pos) != part(have, pos) || (all && desired.count(mlid)))
        dirty.emplace(block, pos);
  };
  for (const auto& entry : desired) consider(entry.first);
  for (const auto& entry : programmed) consider(entry.first);

  std::vector<MftBlock> out;
  for (const auto& [block, pos] : dirty) {
    MftBlock b;
    b.modifier = (pos << 28) | block;
    for (unsigned i = 0; i < kMftBlockMlids; ++i)
      b.masks[i] = part(
          mask_of(desired, static_cast<uint16_t>(kFirstMulticastLid + block * kMftBlockMlids + i)),
          pos);
    out.push_back(b);
  }
  return out;
}

McastReport ProgramMulticast(Transactions& tx, Subnet& subnet,
                             const std::map<uint16_t, std::vector<EndPort>>& groups, bool all) {
  McastReport report;
  std::map<NodeId, std::map<uint16_t, PortMask>> desired;
  for (const auto& [mlid, members] : groups) {
    const McastTree tree = ComputeMcastTree(subnet, members);
    ++report.groups;
    if (!tree.ok()) {
      ++report.failed;
      if (report.first_error.empty())
        report.first_error = "MLID " + std::to_string(mlid) + ": " + tree.error;
      continue;
    }
    for (const auto& [sw, mask] : tree.masks) desired[sw][mlid] = mask;
  }
  for (NodeId n = 0; n < subnet.nodes().size(); ++n) {
    SmNode& node = subnet.node(n);
    if (!node.is_switch()) continue;
    const auto& want = desired[n];
    for (const MftBlock& b : MftBlocksToWrite(node.num_ports, node.mft, want, all)) {
      std::array<uint8_t, kSmpDataBytes> data{};
      for (unsigned i = 0; i < kMftBlockMlids; ++i) {
        data[2 * i] = static_cast<uint8_t>(b.masks[i] >> 8);
        data[2 * i + 1] = static_cast<uint8_t>(b.masks[i]);
      }
      tx.Submit(MakeDrSmp(kMethodSet, kAttrMft, b.modifier, node.path, data), MadAddress{},
                [&report, &subnet, n](const TxResult& r) {
                  if (r.status == TxStatus::kOk && SmpStatus(r.response) == 0) {
                    ++report.blocks;
                    return;
                  }
                  ++report.failed;
                  if (report.first_error.empty())
                    report.first_error = "MFT Set to \"" + subnet.node(n).description + "\" " +
                                         (r.status == TxStatus::kOk ? "refused" : "timed out");
                });
    }
    node.mft = want;
    // SwitchInfo:MulticastFDBTop bounds the MFT in use (0xBFFF: none); readers such as
    // ibroute -M stop there.
    const uint16_t top = want.empty() ? kMaxUnicastLid : want.rbegin()->first;
    if (node.has_switch_info && node.switch_info.MulticastFDBTop != top) {
      mad::SwitchInfo si = node.switch_info;
      si.MulticastFDBTop = top;
      si.PortStateChange = 0;  // leave it as it is
      MadBytes data{};
      si.Pack(std::span<uint8_t>(data).first(mad::SwitchInfo::kSize));
      tx.Submit(
          MakeDrSmp(kMethodSet, kAttrSwitchInfo, 0, node.path,
                    std::span<const uint8_t>(data).first(kSmpDataBytes)),
          MadAddress{}, [&report, &subnet, n](const TxResult& r) {
            if (r.status == TxStatus::kOk && SmpStatus(r.response) == 0) {
              subnet.node(n).switch_info.Unpack(SmpData(r.response).first(mad::SwitchInfo::kSize));
              return;
            }
            ++report.failed;
            if (report.first_error.empty())
              report.first_error =
                  "SwitchInfo Set (MulticastFDBTop) to \"" + subnet.node(n).description + "\"";
          });
    }
  }
  if (!tx.Run() && report.first_error.empty()) {
    ++report.failed;
    report.first_error = "transport: " + tx.last_error();
  }
  return report;
}

}  // namespace softib::sm
