// Reading and writing the ports' P_Key tables (IBA 14.2.5.7: blocks of 32; on a switch the
// AttributeModifier names the port in bits 23:16) and the switches' enforcement bits.
#include <algorithm>

#include "softib/sm/configure.h"
#include "softib/sm/partitions.h"
#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

constexpr std::size_t kPKeysPerBlock = 32;

uint32_t PKeyModifier(const SmNode& node, uint8_t port, std::size_t block) {
  return (node.is_switch() ? uint32_t{port} << 16 : 0) | static_cast<uint32_t>(block);
}

void Failed(PKeyReport& report, const Subnet& subnet, NodeId n, uint8_t p, const char* what,
            const TxResult& r) {
  ++report.failed;
  if (report.first_error.empty())
    report.first_error = std::string(what) + " to \"" + subnet.node(n).description + "\" port " +
                         std::to_string(p) +
                         (r.status == TxStatus::kOk ? " refused" : " timed out");
}

}  // namespace

std::vector<uint8_t> PathToPort(const Subnet& subnet, NodeId n, uint8_t p) {
  const SmNode& node = subnet.node(n);
  if (node.is_switch() || n == subnet.sm_node || !node.ports[p].linked()) return node.path;
  // A CA answers for the port an SMP arrives on: come in through this port's own cable.
  std::vector<uint8_t> path = subnet.node(node.ports[p].peer).path;
  path.push_back(node.ports[p].peer_port);
  return path;
}

PKeyReport ProgramPKeys(Transactions& tx, Subnet& subnet, const PKeyPlan& plan, bool fast) {
  PKeyReport report;
  for (const auto& [where, wanted] : plan.tables) {
    SmNode& node = subnet.node(where.node);
    SmPort& port = node.ports[where.port];
    std::vector<uint16_t> table = wanted;
    const std::size_t blocks =
        std::max<std::size_t>(1, (table.size() + kPKeysPerBlock - 1) / kPKeysPerBlock);
    table.resize(blocks * kPKeysPerBlock, 0);
    const std::vector<uint8_t> path = PathToPort(subnet, where.node, where.port);
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto first = table.begin() + static_cast<std::ptrdiff_t>(b * kPKeysPerBlock);
      if (port.pkeys.size() >= (b + 1) * kPKeysPerBlock &&
          std::equal(first, first + kPKeysPerBlock,
                     port.pkeys.begin() + static_cast<std::ptrdiff_t>(b * kPKeysPerBlock)))
        continue;  // the port holds this block already
      std::array<uint8_t, kSmpDataBytes> data{};
      for (std::size_t i = 0; i < kPKeysPerBlock; ++i) {
        data[2 * i] = static_cast<uint8_t>(first[static_cast<std::ptrdiff_t>(i)] >> 8);
        data[2 * i + 1] = static_cast<uint8_t>(first[static_cast<std::ptrdiff_t>(i)]);
      }
      const NodeId n = where.node;
      const uint8_t p = where.port;
      MadBytes smp = MakeDrSmp(kMethodSet, kAttrPKeyTable, PKeyModifier(node, p, b), path, data);
      MadAddress to;
      if (fast) RouteByLid(subnet, n, p, smp, to);
      tx.Submit(smp, to, [&report, &subnet, n, p](const TxResult& r) {
        if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
          Failed(report, subnet, n, p, "P_KeyTable Set", r);
          return;
        }
        ++report.blocks;
      });
    }
    port.pkeys = std::move(table);
  }
  for (const EndPort& e : plan.enforce) {
    SmNode& node = subnet.node(e.node);
    mad::PortInfo pi = node.ports[e.port].info;
    if (pi.PartitionEnforcementInbound && pi.PartitionEnforcementOutbound) continue;
    pi.PartitionEnforcementInbound = true;
    pi.PartitionEnforcementOutbound = true;
    // Armed carries no data and the LFTs are in: the Arm phase need not visit this port.
    pi.PortState = fast && pi.PortState == kPortInit ? kPortArmed : 0;  // 0: no change
    pi.PortPhysicalState = 0;
    pi.LinkDownDefaultState = 0;
    MadBytes data{};
    pi.Pack(std::span<uint8_t>(data).first(mad::PortInfo::kSize));
    MadBytes smp = MakeDrSmp(kMethodSet, kAttrPortInfo, e.port, node.path,
                             std::span<const uint8_t>(data).first(kSmpDataBytes));
    MadAddress to;
    if (fast) RouteByLid(subnet, e.node, e.port, smp, to);
    tx.Submit(smp, to, [&report, &subnet, e](const TxResult& r) {
      if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
        Failed(report, subnet, e.node, e.port, "PortInfo Set (enforcement)", r);
        return;
      }
      subnet.node(e.node).ports[e.port].info.Unpack(SmpData(r.response));
      ++report.enforced;
    });
  }
  if (!tx.Run() && report.first_error.empty()) {
    ++report.failed;
    report.first_error = "transport: " + tx.last_error();
  }
  return report;
}

unsigned ReadPKeyTables(Transactions& tx, Subnet& subnet, bool lid_routed) {
  unsigned failures = 0;
  for (const EndPort& e : subnet.EndPorts()) {
    const SmNode& node = subnet.node(e.node);
    MadBytes smp = MakeDrSmp(kMethodGet, kAttrPKeyTable, PKeyModifier(node, e.port, 0),
                             PathToPort(subnet, e.node, e.port));
    MadAddress to;
    if (lid_routed) RouteByLid(subnet, e.node, e.port, smp, to);
    tx.Submit(smp, to, [&subnet, &failures, e](const TxResult& r) {
      if (r.status != TxStatus::kOk || SmpStatus(r.response)) {
        ++failures;
        return;
      }
      std::vector<uint16_t>& keys = subnet.node(e.node).ports[e.port].pkeys;
      keys.assign(kPKeysPerBlock, 0);
      const auto data = SmpData(r.response);
      for (std::size_t i = 0; i < kPKeysPerBlock; ++i)
        keys[i] = static_cast<uint16_t>(data[2 * i] << 8 | data[2 * i + 1]);
    });
  }
  if (!tx.Run()) ++failures;
  return failures;
}

}  // namespace softib::sm
