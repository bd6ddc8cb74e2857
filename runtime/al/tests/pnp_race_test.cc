// A PnP registration racing a CA's arrival sees the CA exactly once: either in the records
// of the present state (before REG_COMPLETE) or as the arrival announcement after it,
// never both and never neither.
#include <thread>

#include "kernel_client.h"

namespace softib::testing {
namespace {

// Every record queued for `reg` now (a wait that would pend is cancelled and ends it).
std::vector<abi::PnpEventRecord> Drain(Client& client, uint64_t reg) {
  std::vector<abi::PnpEventRecord> records;
  for (;;) {
    PendingCall waiter;
    abi::GetPnpEventOut out{};
    const Status s = kernel::IbGetPnpEvent(client.al(), {{reg}}, out, waiter.irp);
    if (s == Status::SUCCESS) {
      records.push_back(out.record);
      continue;
    }
    EXPECT_EQ(s, Status::PENDING);
    kernel::IoCancelIrp(waiter.irp);
    EXPECT_TRUE(kernel::KeWaitForSingleObject(&waiter.done, std::chrono::seconds(10)) ==
                Status::SUCCESS);
    if (waiter.status.load() == Status::SUCCESS) {  // a record beat the cancel
      records.push_back(out.record);
      continue;
    }
    return records;
  }
}

TEST(PnpRace, RegistrationsRacingAnArrivalSeeTheCaOnceEach) {
  auto node = BootDefault("pnp-race");
  ASSERT_TRUE(node);
  Client client(node->node());
  for (int round = 0; round < 10; ++round) {
    const uint64_t guid = 0x0002C90000F00000ull + round;
    // Registrations made before, during and after the arrival is announced.
    std::vector<uint64_t> regs;
    std::atomic<bool> added_done{false};
    std::thread registrar([&] {
      while (regs.size() < 400 && (!added_done.load() || regs.size() < 4)) {
        abi::RegisterPnpOut reg{};
        EXPECT_EQ(client.RegisterPnp(
                      {{client.al_handle()}, abi::PnpClass::CA, abi::PnpRegFlags{}, 0x11}, &reg),
                  Status::SUCCESS);
        regs.push_back(reg.reg.value);
      }
    });
    uint64_t added = 0;
    ASSERT_EQ(node->AddCa(stack::CaConfig{guid, 1}, &added), Status::SUCCESS);
    added_done = true;
    registrar.join();
    int wrong = 0;
    for (const uint64_t reg : regs) {
      int seen = 0;
      bool complete = false;
      for (const abi::PnpEventRecord& r : Drain(client, reg)) {
        if (r.event == abi::PnpEvent::REG_COMPLETE) complete = true;
        if (r.event == abi::PnpEvent::CA_ADD && be64toh(r.ca_guid) == guid) ++seen;
      }
      wrong += !complete || seen != 1;
      ASSERT_EQ(client.DeregisterPnp({{reg}}), Status::SUCCESS);
    }
    EXPECT_EQ(wrong, 0) << "round " << round << ": of " << regs.size() << " registrations";
    ASSERT_EQ(node->RemoveCa(guid), Status::SUCCESS);
  }
}

}  // namespace
}  // namespace softib::testing
