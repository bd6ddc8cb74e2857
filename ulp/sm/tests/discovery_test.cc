// Discovery's handling of SwitchInfo:PortStateChange (IBA 14.2.5.4): a switch reporting a
// change has the bit cleared before its ports are read, so a port that changes after its
// read sets the bit again and the switch traps anew.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "queued_port.h"
#include "softib/mad/mad_sm.h"
#include "softib/sm/discovery.h"
#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

// The SM's CA (GUID 0xA, one port) cabled to port 1 of a two-port switch (GUID 0x5) whose
// port 2 is down; answers directed-route SMPs by hop count and logs every request.
class CaAndSwitchPort : public QueuedPort {
 public:
  bool port_state_change = false;
  std::vector<std::string> log;  // "Get PortInfo @1 port 2", in the order the SMPs were sent

  PortStatus Send(const MadBytes& mad, const MadAddress&, int) override {
    const uint8_t hops = mad[7];
    const uint16_t attribute = SmpAttribute(mad);
    const uint32_t modifier = SmpModifier(mad);
    log.push_back(std::string(SmpMethod(mad) == kMethodSet ? "Set " : "Get ") +
                  AttributeName(attribute) + " @" + std::to_string(hops) +
                  (attribute == kAttrPortInfo ? " port " + std::to_string(modifier) : ""));
    ReceivedMad r;
    r.mad = mad;
    r.mad[3] = kMethodGetResp;
    r.mad[4] |= 0x80;  // D: returning
    auto data = MutableSmpData(r.mad);
    const bool at_switch = hops == 1;
    switch (attribute) {
      case kAttrNodeInfo: {
        mad::NodeInfo info;
        info.BaseVersion = 1;
        info.ClassVersion = 1;
        info.NodeType = at_switch ? 2 : 1;
        info.NumPorts = at_switch ? 2 : 1;
        info.NodeGUID = at_switch ? 0x5 : 0xA;
        info.PortGUID = info.NodeGUID;
        info.LocalPortNum = 1;
        info.Pack(data);
        break;
      }
      case kAttrNodeDescription:
        break;
      case kAttrSwitchInfo: {
        mad::SwitchInfo si;
        si.Unpack(SmpData(mad).first(mad::SwitchInfo::kSize));
        // Set: writing 1 clears the bit; the answer is the switch's state after the Set.
        if (SmpMethod(mad) == kMethodSet && si.PortStateChange) port_state_change = false;
        mad::SwitchInfo now;
        now.LinearFDBCap = 49152;
        now.PortStateChange = port_state_change ? 1 : 0;
        now.Pack(data.first(mad::SwitchInfo::kSize));
        break;
      }
      case kAttrPortInfo: {
        mad::PortInfo pi;
        const bool down = at_switch && modifier == 2;
        pi.PortPhysicalState = down ? 2 : kPhysLinkUp;  // Polling : LinkUp
        pi.PortState = down ? 1 : kPortInit;            // Down : Init
        pi.LocalPortNum = static_cast<uint8_t>(modifier);
        pi.Pack(data);
        break;
      }
      default:
        r.mad[5] = 0x0C;  // unsupported attribute
    }
    pending.push_back(r);
    return PortStatus::kOk;
  }
  std::string Describe() const override { return "CA + switch"; }

 private:
  static std::string AttributeName(uint16_t attribute) {
    switch (attribute) {
      case kAttrNodeInfo:
        return "NodeInfo";
      case kAttrNodeDescription:
        return "NodeDescription";
      case kAttrSwitchInfo:
        return "SwitchInfo";
      case kAttrPortInfo:
        return "PortInfo";
    }
    return "other";
  }
};

std::size_t IndexOf(const std::vector<std::string>& log, const std::string& entry) {
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i] == entry) return i;
  return log.size();
}

TEST(DiscoveryPortStateChange, ClearedBeforeTheSwitchPortsAreRead) {
  CaAndSwitchPort port;
  port.port_state_change = true;
  Transactions tx(port, {.window = 16, .timeout_ms = 50, .retries = 0});
  Subnet subnet;
  const DiscoveryReport report = Discover(tx, subnet);
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(report.failed_requests, 0u);
  EXPECT_FALSE(port.port_state_change);

  const std::size_t clear = IndexOf(port.log, "Set SwitchInfo @1");
  ASSERT_LT(clear, port.log.size());
  EXPECT_LT(IndexOf(port.log, "Get SwitchInfo @1"), clear);
  for (uint8_t p = 0; p <= 2; ++p) {
    const std::size_t read = IndexOf(port.log, "Get PortInfo @1 port " + std::to_string(p));
    ASSERT_LT(read, port.log.size()) << "port " << int{p} << " never read";
    EXPECT_GT(read, clear) << "port " << int{p} << " read before the clear";
  }
  ASSERT_EQ(subnet.nodes().size(), 2u);
  EXPECT_EQ(subnet.node(1).switch_info.PortStateChange, 0);
}

TEST(DiscoveryPortStateChange, NoSetWhenTheBitIsClear) {
  CaAndSwitchPort port;
  Transactions tx(port, {.window = 16, .timeout_ms = 50, .retries = 0});
  Subnet subnet;
  ASSERT_TRUE(Discover(tx, subnet).ok());
  EXPECT_EQ(IndexOf(port.log, "Set SwitchInfo @1"), port.log.size());
  EXPECT_LT(IndexOf(port.log, "Get PortInfo @1 port 2"), port.log.size());
  ASSERT_EQ(subnet.nodes().size(), 2u);
  EXPECT_EQ(subnet.node(1).ports[2].info.PortState, 1);
}

}  // namespace
}  // namespace softib::sm
