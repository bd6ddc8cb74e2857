// PnP notifications: arrival and removal at PASSIVE, in order, per class; existing
// interfaces; an unregistered client is never called again, even with a callback in flight.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "softib/kernel/event.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/work_item.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using namespace std::chrono_literals;

// Whether thread `tid` of this process is asleep (blocked in the kernel), from
// /proc/self/task/TID/stat's state field.
bool Asleep(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t end = line.rfind(')');  // the command may hold spaces and parentheses
  return end != std::string::npos && end + 2 < line.size() &&
         (line[end + 2] == 'S' || line[end + 2] == 'D');
}

struct Client {
  struct Seen {
    PnpEvent event;
    DeviceObject* device;
    Irql irql;
    Node* node;
  };
  std::mutex mutex;
  std::vector<Seen> seen;
  std::atomic<int> calls{0};

  static void Callback(const PnpNotification& notification, void* context) {
    auto* client = static_cast<Client*>(context);
    {
      std::lock_guard lock(client->mutex);
      client->seen.push_back(
          {notification.event, notification.device, CurrentIrql(), Node::Current()});
    }
    client->calls.fetch_add(1);
  }
  std::vector<Seen> Snapshot() {
    std::lock_guard lock(mutex);
    return seen;
  }
};

TEST(Pnp, ArrivalAndRemovalReachRegisteredClientsInOrderAtPassive) {
  Node node;
  testing::TestDriver hca(node, "hca");
  Client client, other_class;
  PnpRegistration* registration = nullptr;
  PnpRegistration* other_registration = nullptr;
  ASSERT_EQ(
      IoRegisterPlugPlayNotification(&node, "ca", false, &Client::Callback, &client, &registration),
      Status::SUCCESS);
  ASSERT_EQ(IoRegisterPlugPlayNotification(&node, "port", false, &Client::Callback, &other_class,
                                           &other_registration),
            Status::SUCCESS);
  DeviceObject* ca0 = hca.CreateDevice("ca0");
  DeviceObject* ca1 = hca.CreateDevice("ca1");
  EXPECT_EQ(IoSetDeviceInterfaceState(ca0, "ca", true), Status::SUCCESS);
  EXPECT_EQ(IoSetDeviceInterfaceState(ca0, "ca", true), Status::INVALID_STATE);
  EXPECT_EQ(IoSetDeviceInterfaceState(ca1, "ca", true), Status::SUCCESS);
  EXPECT_EQ(IoSetDeviceInterfaceState(ca0, "ca", false), Status::SUCCESS);
  hca.Delete(ca1);  // removal of its enabled interface
  ASSERT_TRUE(testing::WaitUntil([&] { return client.calls.load() == 4; }));
  const auto seen = client.Snapshot();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].event, PnpEvent::kArrival);
  EXPECT_EQ(seen[0].device, ca0);
  EXPECT_EQ(seen[1].event, PnpEvent::kArrival);
  EXPECT_EQ(seen[1].device, ca1);
  EXPECT_EQ(seen[2].event, PnpEvent::kRemoval);
  EXPECT_EQ(seen[2].device, ca0);
  EXPECT_EQ(seen[3].event, PnpEvent::kRemoval);
  EXPECT_EQ(seen[3].device, ca1);
  for (const auto& one : seen) {
    EXPECT_EQ(one.irql, Irql::kPassive);
    EXPECT_EQ(one.node, &node);
  }
  EXPECT_EQ(other_class.calls.load(), 0);
  IoUnregisterPlugPlayNotification(registration);
  IoUnregisterPlugPlayNotification(other_registration);
  // ca1's memory goes once the last event's worker lets go of it, just after the callback
  // returned (seen under ASan on a loaded machine: the check ran in between).
  EXPECT_TRUE(testing::WaitUntil([&] { return node.device_count() == 1u; })) << node.device_count();
}

TEST(Pnp, ExistingInterfacesArriveFirstAndOnce) {
  Node node;
  testing::TestDriver hca(node, "hca");
  DeviceObject* ca0 = hca.CreateDevice();
  IoSetDeviceInterfaceState(ca0, "ca", true);
  Client client;
  PnpRegistration* registration = nullptr;
  IoRegisterPlugPlayNotification(&node, "ca", true, &Client::Callback, &client, &registration);
  IoSetDeviceInterfaceState(ca0, "ca", false);
  ASSERT_TRUE(testing::WaitUntil([&] { return client.calls.load() == 2; }));
  IoFlushQueuedWorkItems(&node);  // a duplicate arrival would have been delivered by now
  const auto seen = client.Snapshot();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].event, PnpEvent::kArrival);
  EXPECT_EQ(seen[1].event, PnpEvent::kRemoval);
  IoUnregisterPlugPlayNotification(registration);
}

// The callback is held inside while the client unregisters from another thread: the
// unregister waits for it, and nothing is delivered afterwards.
TEST(Pnp, UnregisterWaitsForACallbackInFlightAndStopsDelivery) {
  Node node;
  testing::TestDriver hca(node, "hca");
  struct Blocking {
    KEvent entered{EventType::kNotification};
    KEvent release{EventType::kNotification};
    std::atomic<int> calls{0};
    std::atomic<bool> returned{false};
  } blocking;
  PnpRegistration* registration = nullptr;
  IoRegisterPlugPlayNotification(
      &node, "ca", false,
      [](const PnpNotification&, void* context) {
        auto* blocking = static_cast<Blocking*>(context);
        blocking->calls.fetch_add(1);
        blocking->entered.Set();
        KeWaitForSingleObject(&blocking->release);
        blocking->returned = true;
      },
      &blocking, &registration);
  DeviceObject* ca0 = hca.CreateDevice();
  IoSetDeviceInterfaceState(ca0, "ca", true);
  ASSERT_EQ(KeWaitForSingleObject(&blocking.entered, 5s), Status::SUCCESS);
  IoSetDeviceInterfaceState(ca0, "ca", false);  // queued behind the callback in flight
  // The callback is released only once this thread is asleep inside the unregister.
  const pid_t unregistering = gettid();
  std::atomic<bool> calling{false};
  std::thread releaser([&] {
    EXPECT_TRUE(testing::WaitUntil([&] { return calling.load() && Asleep(unregistering); }));
    blocking.release.Set();
  });
  calling = true;
  IoUnregisterPlugPlayNotification(registration);
  EXPECT_TRUE(blocking.returned.load());  // unregister returned after the callback
  releaser.join();
  IoSetDeviceInterfaceState(ca0, "ca", true);
  IoFlushQueuedWorkItems(&node);  // the removal and this arrival: delivered to nobody
  EXPECT_EQ(blocking.calls.load(), 1);
}

TEST(Pnp, AClientMayUnregisterFromItsOwnCallback) {
  Node node;
  testing::TestDriver hca(node, "hca");
  struct Self {
    PnpRegistration* registration = nullptr;
    std::atomic<int> calls{0};
  } self;
  IoRegisterPlugPlayNotification(
      &node, "ca", false,
      [](const PnpNotification&, void* context) {
        auto* self = static_cast<Self*>(context);
        self->calls.fetch_add(1);
        IoUnregisterPlugPlayNotification(self->registration);
      },
      &self, &self.registration);
  DeviceObject* ca0 = hca.CreateDevice();
  IoSetDeviceInterfaceState(ca0, "ca", true);
  IoSetDeviceInterfaceState(ca0, "ca", false);
  ASSERT_TRUE(testing::WaitUntil([&] { return self.calls.load() == 1; }));
  IoFlushQueuedWorkItems(&node);
  EXPECT_EQ(self.calls.load(), 1);  // the removal, queued before, is not delivered
}

}  // namespace
}  // namespace softib::kernel
