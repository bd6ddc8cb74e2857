// CA ports hear their cable's link state through the FabricHost: two light hosts cabled to
// each other, one waiting for an SM (no LID), one preconfigured (LID 5). A flap reaches
// both, in order, on the host's thread: Down (Polling) while the cable is down, then the
// first in Init for the SM and the second Active again; PortInfo from their SMAs shows it.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "softib/fabric/fabric_host.h"
#include "softib/fabric/light_host.h"
#include "softib/mad/mad_sm.h"

namespace softib::fabric {
namespace {

// What each port's LinkState was told, and on which thread.
struct LinkNews {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> said[2];
  std::thread::id thread;

  void Add(int side, bool up) {
    std::lock_guard<std::mutex> lock(mutex);
    said[side].push_back(up);
    thread = std::this_thread::get_id();
    changed.notify_all();
  }
  // Waits (bounded) until both ports were told `count` times.
  bool WaitFor(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10),
                            [&] { return said[0].size() >= count && said[1].size() >= count; });
  }
};

// PortInfo of port 1 (IBA 14.2.5.6) from the light host's SMA.
mad::PortInfo LightPortInfo(LightHost& host) {
  std::array<uint8_t, 256> request{}, response{};
  request[0] = 1;     // BaseVersion
  request[1] = 0x01;  // LID-routed SMP
  request[2] = 1;     // ClassVersion
  request[3] = 1;     // SubnGet
  request[17] = static_cast<uint8_t>(mad::PortInfo::kAttributeId);
  request[23] = 1;
  EXPECT_TRUE(host.LocalMad(1, request, response));
  mad::PortInfo info;
  EXPECT_TRUE(info.Unpack(std::span<const uint8_t>(response.data() + 64, 64)));
  return info;
}

TEST(FabricHostLinkState, AFlapReachesBothCaPortsInOrderOnTheHostsThread) {
  // Declared before the host, whose thread (stopped by its destructor) calls into them.
  LinkNews news;
  std::unique_ptr<LightHost> light[2];
  FabricHost host;
  uint32_t index[2] = {};
  for (int side = 0; side < 2; ++side) {
    hca::HcaConfig config;
    config.num_ports = 1;
    config.node_guid = 0x0002c90300003000ull + static_cast<uint64_t>(side);
    light[side] = std::make_unique<LightHost>(config, side == 0 ? 0 : 5);
    index[side] = host.AddCaPort();
    light[side]->Plug(1, &host.ca_link(index[side]));
    host.SetInbound(index[side], light[side]->Inbound(1));
  }
  const uint32_t cable = host.With([&](Fabric& f) {
    return f.Connect({CableEnd::Kind::kCaPort, host.fabric_port_locked(index[0]), 0},
                     {CableEnd::Kind::kCaPort, host.fabric_port_locked(index[1]), 0});
  });
  EXPECT_TRUE(host.ca_port_up(index[0]));
  EXPECT_EQ(LightPortInfo(*light[0]).PortState, 2);  // Init: no LID, waits for an SM
  EXPECT_EQ(LightPortInfo(*light[1]).PortState, 4);  // Active with LID 5

  for (int side = 0; side < 2; ++side) {
    host.SetLinkState(index[side], [&news, &light, side](bool up) {
      EXPECT_TRUE(light[side]->SetLinkUp(1, up));
      news.Add(side, up);
    });
  }
  host.Start();

  host.With([&](Fabric& f) { f.SetCableUp(cable, false); });
  ASSERT_TRUE(news.WaitFor(1));
  EXPECT_FALSE(host.ca_port_up(index[0]));
  for (int side = 0; side < 2; ++side) {
    const mad::PortInfo info = LightPortInfo(*light[side]);
    EXPECT_EQ(info.PortState, 1) << side;          // Down
    EXPECT_EQ(info.PortPhysicalState, 2) << side;  // Polling
  }
  EXPECT_EQ(LightPortInfo(*light[1]).LID, 5);

  host.With([&](Fabric& f) { f.SetCableUp(cable, true); });
  ASSERT_TRUE(news.WaitFor(2));
  host.Stop();
  // Told only what happened after SetLinkState (not the Connect before it), in order, on
  // the host's thread.
  for (int side = 0; side < 2; ++side) EXPECT_EQ(news.said[side], (std::vector<bool>{false, true}));
  EXPECT_NE(news.thread, std::this_thread::get_id());
  mad::PortInfo info = LightPortInfo(*light[0]);
  EXPECT_EQ(info.PortState, 2);  // Init again, for the SM
  EXPECT_EQ(info.PortPhysicalState, 5);
  info = LightPortInfo(*light[1]);
  EXPECT_EQ(info.PortState, 4);  // no SM: Active with its LID
  EXPECT_EQ(info.LID, 5);
  EXPECT_EQ(info.PortPhysicalState, 5);
  // No such port: nothing to follow.
  EXPECT_FALSE(light[0]->SetLinkUp(2, false));
}

}  // namespace
}  // namespace softib::fabric
