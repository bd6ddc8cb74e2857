// A kernel client driver (a driver with its own device object, which IbOpenAl references)
// unloads while its event IRPs are pending and completions are on their way: by the time
// IbReleaseAl returns, every IRP of the client has been completed and its completion
// routine has returned, and nothing of the client is called afterwards. The driver frees
// its IRPs and their context right after IbReleaseAl, so a late call is a use after free
// (which the sanitizer builds report) besides the counters below.
#include <thread>

#include "kernel_client.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/work_item.h"

namespace softib::testing {
namespace {

// Outlives every driver: what the completion routines saw.
struct Probe {
  std::atomic<bool> unloaded{false};
  std::atomic<int> late_calls{0};   // a routine running or entered after IbReleaseAl returned
  std::atomic<int> completions{0};  // routines entered
};

// The driver's own memory for one pending GetCompletionEvent: freed at unload.
struct DriverIrp {
  Probe* probe;
  kernel::Irp* irp;
  abi::GetCompletionEventOut out{};
  std::atomic<Status> status{Status::PENDING};
  std::atomic<bool> done{false};
};

kernel::CompletionAction OnCompletionEvent(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
  auto* mine = static_cast<DriverIrp*>(context);
  mine->probe->completions.fetch_add(1);
  // A routine that takes its time (it runs at DISPATCH on the AL's DPC): if IbReleaseAl
  // returned meanwhile, the driver is gone under it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while (std::chrono::steady_clock::now() < until) {
  }
  mine->status = irp->IoStatus.Status;
  if (mine->probe->unloaded.load()) mine->probe->late_calls.fetch_add(1);
  mine->done = true;
  return kernel::CompletionAction::kMoreProcessingRequired;  // the driver frees its IRP
}

TEST(ClientUnload, AClientDriverUnloadingWithCompletionsInFlightIsNeverCalledAfterRelease) {
  auto node = BootDefault("client-unload");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  Probe probe;
  int successes = 0, cancels = 0;
  constexpr int kRounds = 180;
  for (int round = 0; round < kRounds; ++round) {
    // The driver loads: its device opens the AL (Client = driver + device + IbOpenAl).
    auto client = std::make_unique<Client>(node->node());
    Side a, b;
    ASSERT_NO_FATAL_FAILURE(client->Build(guids[0], 1, &a, abi::QpType::RC, 1 << 16));
    ASSERT_NO_FATAL_FAILURE(client->Build(guids[1], 2, &b, abi::QpType::RC, 1 << 16));
    ASSERT_NO_FATAL_FAILURE(client->Connect(a, b));
    ASSERT_NO_FATAL_FAILURE(client->Connect(b, a));

    // Completions on their way to an armed CQ with an event IRP pending on it.
    auto* pending = new DriverIrp{&probe, kernel::IoAllocateIrp(1)};
    kernel::IoSetCompletionRoutine(pending->irp, &OnCompletionEvent, pending, true, true, true);
    ASSERT_EQ(kernel::IbRearmCq(client->al(), a.cq, abi::CqNotify::NEXT), Status::SUCCESS);
    ASSERT_EQ(kernel::IbGetCompletionEvent(client->al(), {{a.cq}}, pending->out, pending->irp),
              Status::PENDING);
    for (int i = 0; i < 4; ++i) {
      const abi::SendWorkRequest wr = Write(a, 0, 4096, b, 0, i);
      uint32_t posted = 0;
      ASSERT_EQ(kernel::IbPostSend(client->al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
    }
    // Stagger the unload against the completions a little differently each round.
    const auto stagger =
        std::chrono::steady_clock::now() + std::chrono::microseconds(round % 60 * 5);
    while (std::chrono::steady_clock::now() < stagger) {
    }

    // The driver unloads: releases the AL, then frees everything of its own.
    client->Release();
    EXPECT_TRUE(pending->done.load())
        << "round " << round << ": IbReleaseAl returned before the routine did";
    probe.unloaded = true;
    const Status status = pending->status.load();
    EXPECT_TRUE(status == Status::SUCCESS || status == Status::CANCELED)
        << "round " << round << ": " << static_cast<int>(status);
    successes += status == Status::SUCCESS;
    cancels += status == Status::CANCELED;
    kernel::IoFreeIrp(pending->irp);
    delete pending;
    client.reset();  // device deleted, driver unloaded
    // Whatever was still queued for the gone client runs here (DPCs, the work items they
    // queue, the DPCs those queue): a late call would have happened by now.
    kernel::KeFlushQueuedDpcs(node->node());
    kernel::IoFlushQueuedWorkItems(node->node());
    kernel::KeFlushQueuedDpcs(node->node());
    EXPECT_EQ(probe.late_calls.load(), 0) << "round " << round;
    probe.unloaded = false;
  }
  EXPECT_EQ(probe.completions.load(), kRounds);  // each IRP completed exactly once
  EXPECT_EQ(successes + cancels, kRounds);
  const abi::ObjectCounts after = al::QueryNodeObjectCounts(node->access_layer());
  EXPECT_EQ(after.qp + after.cq + after.mr + after.pd + after.ca + after.al, 0u);
  EXPECT_EQ(after.pending_requests, 0u);
  std::printf("client-unload: %d rounds, %d events delivered, %d cancelled at release\n", kRounds,
              successes, cancels);
}

}  // namespace
}  // namespace softib::testing
