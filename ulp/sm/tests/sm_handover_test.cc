// The MASTER's side of an SM handover (IBA 14.4) when SMInfo requests go unanswered, as
// they do on a loaded host: the master keeps asking every SM the model shows, so a better
// SM whose SMInfo was lost once, or whose HANDOVER Set was lost, still gets the subnet; a
// master that finds a better MASTER steps down; and a recheck that takes longer than the
// light-sweep interval does not end the light sweeps. Against the in-memory fabric, with a
// scripted peer SM at another CA port.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "fabric/topology/generators.h"
#include "fake_fabric.h"
#include "sa_query.h"
#include "softib/sm/smp.h"
#include "softib/sm/subnet_manager.h"

namespace softib::sm::handover_test {
namespace {

using testing::FakeFabric;
using testing::Hosts;

constexpr uint64_t kPeerGuid = 0x0002c90300ee0001ull;

SmOptions Options() {
  SmOptions options;
  options.priority = 1;
  options.log = nullptr;
  options.sa = false;
  options.tx.timeout_ms = 20;  // the fake answers at once; a lost SMInfo costs one timeout
  options.tx.retries = 0;
  options.sweep_interval_s = 0.001;  // shorter than a lost SMP's timeout
  options.poll_interval_s = 0.001;
  return options;
}

// The other SM: each SMInfo Get takes the next answer of `gets` (nullopt: lost), the last
// one again once they run out; a HANDOVER Set likewise from `handovers` (true: accepted).
// It stops the master's Run() when it accepted a handover or answered `stop_after` Gets.
struct PeerScript {
  uint8_t priority = 5;
  std::deque<std::optional<SmState>> gets;
  std::deque<bool> handovers{true};
  unsigned stop_after = 0;  // 0: stop only on a handover
  std::atomic<bool>* stop = nullptr;
  unsigned answered_gets = 0, lost_gets = 0, handovers_taken = 0, handovers_lost = 0;

  std::optional<SmIdentity> operator()(uint8_t method, uint32_t modifier) {
    SmIdentity me;
    me.guid = kPeerGuid;
    me.priority = priority;
    me.state = SmState::kStandby;
    if (method == kMethodSet && modifier == kSmInfoHandover) {
      const bool take = Next(handovers);
      if (!take) {
        ++handovers_lost;
        return std::nullopt;
      }
      ++handovers_taken;
      *stop = true;
      return me;
    }
    const std::optional<SmState> state = Next(gets);
    if (!state) {
      ++lost_gets;
      return std::nullopt;
    }
    me.state = *state;
    if (++answered_gets == stop_after) *stop = true;
    return me;
  }

  template <typename T>
  static T Next(std::deque<T>& answers) {
    const T next = answers.front();
    if (answers.size() > 1) answers.pop_front();
    return next;
  }
};

// Ends Run() if the script never does: a bound on a failing test, not a handshake.
class Watchdog {
 public:
  explicit Watchdog(std::atomic<bool>& stop)
      : thread_([this, &stop] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, std::chrono::seconds(3), [this] { return done_; }))
            stop = true;
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

struct Scene {
  FakeFabric fabric{fabric::DefaultTopology()};
  std::atomic<bool> stop{false};
  PeerScript* script = nullptr;

  std::unique_ptr<MadPort> Place(PeerScript& peer) {
    script = &peer;
    peer.stop = &stop;
    const std::vector<EndPort> hosts = Hosts(fabric.nodes());
    fabric.AddPeerSm(hosts[2].node, hosts[2].port,
                     [&peer](uint8_t method, uint32_t modifier) { return peer(method, modifier); });
    return fabric.Attach(hosts[0].node, hosts[0].port);
  }
  // Run() until the script (or the watchdog) stops it.
  void Run(SubnetManager& sm) {
    Watchdog watchdog(stop);
    ASSERT_TRUE(sm.Run(&stop, nullptr));
  }
};

// The peer's SMInfo was lost in the master's sweep: it is in no list of peers, and its
// IsSM was already in the model, so no light sweep reports a new SM. The master still asks
// it on the next light sweep and hands over once it says STANDBY.
TEST(SmHandover, ToAStandbyWhoseSmInfoWasLostInTheSweep) {
  Scene scene;
  PeerScript peer;
  peer.gets = {std::nullopt, SmState::kStandby};
  auto port = scene.Place(peer);
  SubnetManager sm(*port, Options());
  const SweepReport report = sm.Sweep();
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_TRUE(report.peers.empty());
  EXPECT_EQ(peer.lost_gets, 1u);
  ASSERT_EQ(sm.state(), SmState::kMaster);
  scene.Run(sm);
  EXPECT_EQ(peer.handovers_taken, 1u);
  EXPECT_EQ(sm.state(), SmState::kStandby);
}

// The HANDOVER Set at the end of a re-sweep (the peer lost in the first one, STANDBY in the
// next) was lost: the master asks again and hands over.
TEST(SmHandover, RetriedAfterTheHandoverSetWasLost) {
  Scene scene;
  PeerScript peer;
  peer.gets = {std::nullopt, SmState::kStandby};
  peer.handovers = {false, true};
  auto port = scene.Place(peer);
  SubnetManager sm(*port, Options());
  ASSERT_TRUE(sm.Sweep().ok());
  ASSERT_EQ(sm.state(), SmState::kMaster);
  const SweepReport report = sm.Sweep();
  ASSERT_TRUE(report.ok()) << report.error;
  ASSERT_EQ(report.peers.size(), 1u);
  EXPECT_EQ(report.peers[0].info.state, SmState::kStandby);
  EXPECT_EQ(peer.handovers_lost, 1u);
  ASSERT_EQ(sm.state(), SmState::kMaster);
  scene.Run(sm);
  EXPECT_EQ(peer.handovers_taken, 1u);
  EXPECT_EQ(sm.state(), SmState::kStandby);
}

// Lost in the first sweep, DISCOVERING in the next one (a trap 144's), then a recheck lost
// (it takes 20 ms, twenty light-sweep intervals), DISCOVERING, lost again, then STANDBY: a
// lost answer does not drop the SM from the rechecks, and the light sweeps go on after a
// recheck longer than their interval.
TEST(SmHandover, ToADiscoveringSmAfterLostRechecks) {
  Scene scene;
  PeerScript peer;
  peer.gets = {std::nullopt,          SmState::kDiscovering, std::nullopt,
               SmState::kDiscovering, std::nullopt,          SmState::kStandby};
  auto port = scene.Place(peer);
  SubnetManager sm(*port, Options());
  ASSERT_TRUE(sm.Sweep().ok());
  ASSERT_EQ(sm.state(), SmState::kMaster);
  const SweepReport again = sm.Sweep();
  ASSERT_TRUE(again.ok()) << again.error;
  ASSERT_EQ(again.peers.size(), 1u);
  EXPECT_EQ(again.peers[0].info.state, SmState::kDiscovering);
  ASSERT_EQ(sm.state(), SmState::kMaster);
  scene.Run(sm);
  EXPECT_EQ(peer.lost_gets, 3u);
  EXPECT_EQ(peer.handovers_taken, 1u);
  EXPECT_EQ(sm.state(), SmState::kStandby);
}

// A better SM took the subnet too (our SMInfo Get to it was lost in our sweep, and its Get
// to us in its own): we find it MASTER on a recheck and follow it, polling it as STANDBY.
TEST(SmHandover, AMasterStepsDownToABetterMaster) {
  Scene scene;
  PeerScript peer;
  peer.gets = {std::nullopt, SmState::kMaster};
  peer.stop_after = 5;  // the recheck, then the STANDBY's polls
  auto port = scene.Place(peer);
  SubnetManager sm(*port, Options());
  ASSERT_TRUE(sm.Sweep().ok());
  ASSERT_EQ(sm.state(), SmState::kMaster);
  scene.Run(sm);
  EXPECT_EQ(peer.answered_gets, 5u);
  EXPECT_EQ(peer.handovers_taken + peer.handovers_lost, 0u);
  EXPECT_EQ(sm.state(), SmState::kStandby);
}

// A worse MASTER does not make us step down, nor do we hand over to it: we stay MASTER and
// keep asking it (light sweeps go on).
TEST(SmHandover, AWorseMasterIsNotFollowed) {
  Scene scene;
  PeerScript peer;
  peer.priority = 0;
  peer.gets = {std::nullopt, SmState::kMaster};
  peer.stop_after = 5;
  auto port = scene.Place(peer);
  SubnetManager sm(*port, Options());
  ASSERT_TRUE(sm.Sweep().ok());
  scene.Run(sm);
  EXPECT_EQ(peer.answered_gets, 5u);
  EXPECT_EQ(peer.handovers_taken + peer.handovers_lost, 0u);
  EXPECT_EQ(sm.state(), SmState::kMaster);
}

// A NodeInfo lost in discovery: the sweep discovers again before it programs anything (a
// partial model's LFTs would cut the traffic to the missing LIDs), and finds the node.
TEST(SmHandover, ALostNodeInfoIsDiscoveredAgainInTheSameSweep) {
  Scene scene;
  PeerScript peer;
  peer.priority = 0;
  peer.gets = {SmState::kStandby};
  auto port = scene.Place(peer);
  const std::vector<EndPort> hosts = Hosts(scene.fabric.nodes());
  unsigned lost = 0;
  scene.fabric.set_lose([&](NodeId node, const MadBytes& smp) {
    return node == hosts[3].node && SmpAttribute(smp) == kAttrNodeInfo && lost++ == 0;
  });
  SubnetManager sm(*port, Options());
  const SweepReport report = sm.Sweep();
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(lost, 2u);  // lost, then answered
  EXPECT_EQ(report.rediscoveries, 1u);
  EXPECT_EQ(report.discovery.failed_requests, 0u);
  EXPECT_EQ(sm.subnet().nodes().size(), scene.fabric.nodes().nodes().size());
  EXPECT_EQ(peer.answered_gets, 1u);  // the SMs are asked once, after the whole discovery
}

// A NodeInfo lost in every discovery of a re-sweep leaves a CA out of the model; a light
// sweep of that model finds nothing to change, so the master sweeps again at the next tick
// and finds it. The peer (a worse STANDBY) stops Run() at its third SMInfo Get: the next
// sweep's (with the fix; the whole subnet is in the model then) or the recheck after a
// light sweep of the partial model (without it).
TEST(SmHandover, AnIncompleteSweepIsSweptAgain) {
  Scene scene;
  PeerScript peer;
  peer.priority = 0;
  peer.gets = {SmState::kStandby};
  auto port = scene.Place(peer);
  const std::vector<EndPort> hosts = Hosts(scene.fabric.nodes());
  SmOptions options = Options();
  options.sweep_interval_s = 0.005;
  SubnetManager sm(*port, options);
  ASSERT_TRUE(sm.Sweep().ok());
  const std::size_t all = sm.subnet().nodes().size();
  EXPECT_EQ(all, scene.fabric.nodes().nodes().size());
  unsigned lost = 0;
  scene.fabric.set_lose([&](NodeId node, const MadBytes& smp) {
    return node == hosts[3].node && SmpAttribute(smp) == kAttrNodeInfo && lost++ < 3;
  });
  const SweepReport partial = sm.Sweep();
  EXPECT_EQ(lost, 3u);
  EXPECT_EQ(partial.rediscoveries, 2u);
  EXPECT_EQ(partial.discovery.failed_requests, 1u);
  EXPECT_EQ(sm.subnet().nodes().size(), all - 1);
  EXPECT_EQ(peer.answered_gets, 2u);  // one per sweep
  peer.stop_after = 3;
  scene.Run(sm);
  EXPECT_EQ(peer.answered_gets, 3u);
  EXPECT_EQ(sm.subnet().nodes().size(), all);
  EXPECT_EQ(sm.state(), SmState::kMaster);
}

}  // namespace
}  // namespace softib::sm::handover_test
