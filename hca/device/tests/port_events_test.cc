// Port state changes as unaffiliated asynchronous events (IBA 11.6.3.3): a port entering
// ACTIVE reports PORT_ACTIVE, leaving it (cable unplugged, port shut down) PORT_DOWN, each
// naming the port; steps that do not cross ACTIVE report nothing.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "hca/device/hca.h"

namespace softib::hca {
namespace {

using abi::AsyncEventType;

using Event = std::pair<AsyncEventType, uint32_t>;  // type, port

struct Recorder {
  std::vector<Event> events;
  void Attach(Hca& hca) {
    hca.async_events = [this](const DeviceEvent& e) { events.emplace_back(e.type, e.object); };
  }
};

TEST(PortEvents, CablingAPortWithALidReportsActiveAndUnpluggingReportsDown) {
  HcaConfig config;
  config.num_ports = 2;
  Hca hca(config);
  Recorder recorder;
  recorder.Attach(hca);
  BackToBackCable cable;
  hca.port(2).lid = 7;
  hca.SetPortLink(2, &cable.end(0));
  EXPECT_EQ(hca.port(2).LinkState(), 4);
  hca.SetPortLink(2, nullptr);
  EXPECT_EQ(hca.port(2).LinkState(), 1);
  EXPECT_EQ(recorder.events,
            (std::vector<Event>{{AsyncEventType::PORT_ACTIVE, 2}, {AsyncEventType::PORT_DOWN, 2}}));
  // Port 1 never changed: nothing about it.
}

TEST(PortEvents, StepsThatDoNotCrossActiveReportNothing) {
  Hca hca;
  Recorder recorder;
  recorder.Attach(hca);
  BackToBackCable cable;
  hca.port(1).lid = 0;  // no LID: a cabled port stays INIT
  hca.SetPortLink(1, &cable.end(0));
  EXPECT_EQ(hca.port(1).LinkState(), 2);
  hca.SetPortLink(1, &cable.end(0));  // the same cable again
  hca.SetPortLink(1, nullptr);        // INIT → DOWN
  hca.SetPortLink(1, nullptr);        // DOWN → DOWN
  EXPECT_TRUE(recorder.events.empty());
}

TEST(PortEvents, ShuttingDownAnActivePortReportsDown) {
  Hca hca;
  Recorder recorder;
  recorder.Attach(hca);
  BackToBackCable cable;
  hca.port(1).lid = 3;
  hca.SetPortLink(1, &cable.end(0));
  recorder.events.clear();
  ASSERT_EQ(hca.ModifyCa(1, abi::ModifyCaFlags::SHUTDOWN_PORT, {}, {}, 0, 0), abi::Status::SUCCESS);
  EXPECT_EQ(recorder.events, (std::vector<Event>{{AsyncEventType::PORT_DOWN, 1}}));
  // Already down: a second shutdown and an unplug say nothing more.
  ASSERT_EQ(hca.ModifyCa(1, abi::ModifyCaFlags::SHUTDOWN_PORT, {}, {}, 0, 0), abi::Status::SUCCESS);
  hca.SetPortLink(1, nullptr);
  EXPECT_EQ(recorder.events.size(), 1u);
}

}  // namespace
}  // namespace softib::hca
