// Upward news as IRP completions: completion events, cancellation, PnP events, CA removal
// while a client holds resources.
#include <atomic>

#include "kernel_client.h"

namespace softib::testing {
namespace {

TEST(Events, ArmedCqCompletesAPendingCompletionEventWithItsContext) {
  auto node = BootDefault("ev-cq");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));
  ASSERT_EQ(kernel::IbRearmCq(client.al(), b.cq, abi::CqNotify::NEXT), Status::SUCCESS);
  PendingCall call;
  abi::GetCompletionEventOut out{};
  ASSERT_EQ(kernel::IbGetCompletionEvent(client.al(), {{b.cq}}, out, call.irp), Status::PENDING);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).pending_requests, 1u);
  uint32_t posted;
  const abi::RecvWorkRequest recv = Recv(b, 0, 64, 5);
  ASSERT_EQ(kernel::IbPostRecv(client.al(), b.qp, {&recv, 1}, &posted), Status::SUCCESS);
  const abi::SendWorkRequest send = Send(a, 0, 64, 6);
  ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, {&send, 1}, &posted), Status::SUCCESS);
  ASSERT_TRUE(call.WaitDone());
  EXPECT_EQ(call.status.load(), Status::SUCCESS);
  EXPECT_EQ(out.context, 0xC0FFEEu);
  EXPECT_EQ(out.event_count, 1u);
  EXPECT_EQ(client.PollN(b.cq, 1).size(), 1u);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).pending_requests, 0u);
}

TEST(Events, PendingEventIrpIsCancelled) {
  auto node = BootDefault("ev-cancel");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  // Through the IRP path: the AL device, the client's file.
  abi::GetCompletionEventOut out{};
  IrpWatch watch(
      kernel::BuildGetCompletionEventIrp(kernel::IbGetAlDevice(client.al()),
                                         kernel::IbGetAlFile(client.al()), {{a.cq}}, nullptr),
      &out, sizeof(out));
  ASSERT_EQ(kernel::IoCallDriver(kernel::IbGetAlDevice(client.al()), watch.irp), Status::PENDING);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).pending_requests, 1u);
  EXPECT_TRUE(kernel::IoCancelIrp(watch.irp));
  ASSERT_TRUE(watch.WaitDone());
  EXPECT_EQ(watch.status.load(), Status::CANCELED);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).pending_requests, 0u);
}

TEST(Events, ReleasingTheClientCompletesItsPendingIrpsBeforeReturning) {
  auto node = BootDefault("ev-release");
  ASSERT_TRUE(node);
  auto client = std::make_unique<Client>(node->node());
  PendingCall call;
  abi::GetAsyncEventOut out{};
  ASSERT_EQ(kernel::IbGetAsyncEvent(client->al(), {{client->al_handle()}}, out, call.irp),
            Status::PENDING);
  client.reset();
  EXPECT_TRUE(kernel::KeWaitForSingleObject(&call.done, std::chrono::nanoseconds(0)) ==
              Status::SUCCESS);
  EXPECT_EQ(call.status.load(), Status::CANCELED);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).al, 0u);
}

TEST(Events, CaRemovalFailsTheCasObjectsAndReachesPnpClientsWithoutLeaks) {
  auto node = BootDefault("ev-remove");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp({{client.al_handle()}, abi::PnpClass::CA, {}, 0x55}, &reg),
            Status::SUCCESS);
  for (int i = 0; i < 2; ++i) {
    const abi::PnpEventRecord r = NextPnp(client, reg.reg.value);
    EXPECT_EQ(r.event, abi::PnpEvent::CA_ADD);
    EXPECT_EQ(be64toh(r.ca_guid), guids[i]);
    EXPECT_EQ(r.pnp_context, 0x55u);
  }
  EXPECT_EQ(NextPnp(client, reg.reg.value).event, abi::PnpEvent::REG_COMPLETE);

  ASSERT_NO_FATAL_FAILURE(client.Build(guids[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(guids[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));
  ASSERT_EQ(kernel::IbRearmCq(client.al(), a.cq, abi::CqNotify::NEXT), Status::SUCCESS);
  PendingCall cq_wait;
  abi::GetCompletionEventOut cq_out{};
  ASSERT_EQ(kernel::IbGetCompletionEvent(client.al(), {{a.cq}}, cq_out, cq_wait.irp),
            Status::PENDING);
  PendingCall pnp_wait;
  abi::GetPnpEventOut pnp_out{};
  ASSERT_EQ(kernel::IbGetPnpEvent(client.al(), {{reg.reg.value}}, pnp_out, pnp_wait.irp),
            Status::PENDING);
  // Work in flight towards the CA that goes away.
  uint32_t posted;
  const abi::SendWorkRequest wr = Write(b, 0, 4096, a, 0, 1);
  ASSERT_EQ(kernel::IbPostSend(client.al(), b.qp, {&wr, 1}, &posted), Status::SUCCESS);

  ASSERT_EQ(node->RemoveCa(guids[0]), Status::SUCCESS);
  ASSERT_TRUE(pnp_wait.WaitDone());
  EXPECT_EQ(pnp_out.record.event, abi::PnpEvent::CA_REMOVE);
  EXPECT_EQ(be64toh(pnp_out.record.ca_guid), guids[0]);
  ASSERT_TRUE(cq_wait.WaitDone());
  EXPECT_EQ(cq_wait.status.load(), Status::CANCELED);

  // The CA's objects answer CA_REMOVED; the other CA works on.
  abi::QueryCaOut q{};
  std::vector<abi::PortAttributes> ports;
  EXPECT_EQ(client.QueryCa(a.ca, &q, &ports), Status::CA_REMOVED);
  abi::QueryQpOut qp{};
  EXPECT_EQ(client.QueryQp({{a.qp}}, &qp), Status::CA_REMOVED);
  abi::CreateCqOut cq{};
  EXPECT_EQ(client.CreateCq({{a.ca}, 16, 0, 0}, &cq), Status::CA_REMOVED);
  abi::WorkCompletion wc;
  uint32_t n;
  EXPECT_EQ(kernel::IbPollCq(client.al(), a.cq, {&wc, 1}, &n), Status::CA_REMOVED);
  EXPECT_EQ(client.QueryQp({{b.qp}}, &qp), Status::SUCCESS);
  EXPECT_EQ(client.CaGuids(), std::vector<uint64_t>{guids[1]});
  abi::OpenCaOut open{};
  EXPECT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guids[0]), 0}, &open),
            Status::INVALID_GUID);

  // Teardown of the removed CA's objects works as usual.
  EXPECT_EQ(client.DestroyQp({{a.qp}}), Status::SUCCESS);
  EXPECT_EQ(client.DestroyCq({{a.cq}}), Status::SUCCESS);
  EXPECT_EQ(client.DeregMr({{a.mr}}), Status::SUCCESS);
  EXPECT_EQ(client.DeallocPd({{a.pd}}), Status::SUCCESS);
  EXPECT_EQ(client.CloseCa({{a.ca}}), Status::SUCCESS);

  // A CA added at run time arrives as an event.
  uint64_t added = 0;
  ASSERT_EQ(node->AddCa({}, &added), Status::SUCCESS);
  const abi::PnpEventRecord arrival = NextPnp(client, reg.reg.value);
  EXPECT_EQ(arrival.event, abi::PnpEvent::CA_ADD);
  EXPECT_EQ(be64toh(arrival.ca_guid), added);

  client.Release();
  const abi::ObjectCounts counts = al::QueryNodeObjectCounts(node->access_layer());
  abi::ObjectCounts zero{};
  EXPECT_EQ(std::memcmp(&counts, &zero, sizeof(zero)), 0);
}

}  // namespace
}  // namespace softib::testing
