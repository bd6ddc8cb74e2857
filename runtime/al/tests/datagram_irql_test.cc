// UD through address vectors, asynchronous errors reaching GetAsyncEvent, and the
// dispatch-level verbs called at DISPATCH under the verifier.
#include "kernel_client.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/work_item.h"

namespace softib::testing {
namespace {

TEST(Datagram, UdSendNamesItsAddressVectorByHandle) {
  auto node = BootDefault("dg-ud");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a, abi::QpType::UD));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b, abi::QpType::UD));
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, a.qp, 0x1234));
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, b.qp, 0x1234));
  abi::CreateAvIn av_in{};
  av_in.pd.value = a.pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = b.lid;
  abi::CreateAvOut av{};
  ASSERT_EQ(kernel::IbCreateAv(client.al(), av_in, av), Status::SUCCESS);
  abi::QueryAvOut queried{};
  ASSERT_EQ(kernel::IbQueryAv(client.al(), {av.av}, queried), Status::SUCCESS);
  EXPECT_EQ(queried.attributes.dlid, b.lid);
  EXPECT_EQ(queried.pd.value, a.pd);
  EXPECT_EQ(kernel::IbDeallocPd(client.al(), {{a.pd}}), Status::RESOURCE_BUSY);

  uint32_t posted = 0;
  const abi::RecvWorkRequest recv = Recv(b, 0, 40 + 256, 8);  // GRH space + payload
  ASSERT_EQ(kernel::IbPostRecv(client.al(), b.qp, {&recv, 1}, &posted), Status::SUCCESS);
  Pattern(a.buffer, 0, 256, 4);
  abi::SendWorkRequest wr = Send(a, 0, 256, 9);
  wr.av = av.av;
  wr.remote_qpn = b.qpn;
  wr.remote_qkey = 0x1234;  // host order, as the device takes it
  ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
  const auto got = client.PollN(b.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].length, 40u + 256u);
  EXPECT_EQ(got[0].src_qp, a.qpn);
  EXPECT_EQ(got[0].slid, a.lid);
  EXPECT_TRUE(HasPattern(b.buffer, 40, 256, 4));
  EXPECT_EQ(client.PollN(a.cq, 1).size(), 1u);

  // A stale Av handle is refused before anything is queued.
  ASSERT_EQ(kernel::IbDestroyAv(client.al(), {av.av}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::INVALID_AV_HANDLE);
  EXPECT_EQ(posted, 0u);
}

TEST(Datagram, CqOverflowReachesTheAlAsAnAsyncEventWithTheCqsContext) {
  auto node = BootDefault("dg-overflow");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a, abi::QpType::UD));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b, abi::QpType::UD));
  // A one-entry receive CQ on b: the second datagram overflows it.
  abi::CreateCqOut small{};
  ASSERT_EQ(client.CreateCq({{b.ca}, 1, 0, 0xBEEF}, &small), Status::SUCCESS);
  ASSERT_EQ(small.actual_size, 1u);
  abi::CreateQpIn qp_in{};
  qp_in.pd.value = b.pd;
  qp_in.send_cq.value = b.cq;
  qp_in.recv_cq = small.cq;
  qp_in.params.qp_type = abi::QpType::UD;
  qp_in.params.caps = {8, 8, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  ASSERT_EQ(client.CreateQp(qp_in, &qp), Status::SUCCESS);
  Side b2 = b;
  b2.qp = qp.qp.value;
  b2.qpn = qp.qp_num;
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, a.qp, 1));
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, b2.qp, 1));
  abi::CreateAvIn av_in{};
  av_in.pd.value = a.pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = b.lid;
  abi::CreateAvOut av{};
  ASSERT_EQ(kernel::IbCreateAv(client.al(), av_in, av), Status::SUCCESS);
  uint32_t posted;
  for (int i = 0; i < 2; ++i) {
    const abi::RecvWorkRequest recv = Recv(b, 1024 * i, 512, i);  // b's registered buffer
    ASSERT_EQ(kernel::IbPostRecv(client.al(), b2.qp, {&recv, 1}, &posted), Status::SUCCESS);
  }
  abi::SendWorkRequest wr = Send(a, 0, 16, 1);
  wr.av = av.av;
  wr.remote_qpn = b2.qpn;
  wr.remote_qkey = 1;
  const abi::SendWorkRequest wrs[] = {wr, wr};
  ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, wrs, &posted), Status::SUCCESS);

  abi::GetAsyncEventOut event{};
  IrpWatch watch(kernel::BuildGetAsyncEventIrp(kernel::IbGetAlDevice(client.al()),
                                               kernel::IbGetAlFile(client.al()),
                                               {{client.al_handle()}}, nullptr),
                 &event, sizeof(event));
  kernel::IoCallDriver(kernel::IbGetAlDevice(client.al()), watch.irp);
  if (!watch.WaitDone()) {
    kernel::IoCancelIrp(watch.irp);  // bounded: a lost event fails the test, never hangs it
    watch.WaitDone();
    FAIL() << "no asynchronous event";
  }
  ASSERT_EQ(watch.status.load(), Status::SUCCESS);
  EXPECT_EQ(event.record.code, abi::AsyncEventType::CQ_OVERFLOW);
  EXPECT_EQ(event.record.cq.value, small.cq.value);
  EXPECT_EQ(event.record.ca.value, b.ca);
  EXPECT_EQ(event.record.context, 0xBEEFu);
}

// Issues `call(irp)` at DISPATCH with an IRP and returns the verb's final status, waiting
// for it at PASSIVE when it pended.
template <typename Call>
Status AtDispatch(Call call) {
  PendingCall pending;
  Status s;
  {
    kernel::ScopedIrql dispatch(kernel::Irql::kDispatch);
    s = call(pending.irp);
  }
  if (s != Status::PENDING) return s;
  return pending.WaitDone() ? pending.status.load() : Status::TIMEOUT;
}

TEST(Irql, DispatchLevelVerbsRunAtDispatchWithoutBlocking) {
  auto node = BootDefault("irql-dispatch");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a;
  Client client(node->node());
  abi::OpenCaOut ca{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(node->ca_guids()[0]), 0}, &ca),
            Status::SUCCESS);  // OpenCa is PASSIVE
  // Each verb is issued at DISPATCH with an IRP: a direct call whose CI work may pend (the
  // HCA driver's pend mode pends every CI IRP) must bring one; its result is awaited at
  // PASSIVE, as a DPC's caller would learn it from the completion routine.
  abi::AllocPdOut pd{};
  ASSERT_EQ(AtDispatch([&](kernel::Irp* irp) {
              return kernel::IbAllocPd(client.al(), {ca.ca, abi::PdType{}, 0, 0}, pd, irp);
            }),
            Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(AtDispatch([&](kernel::Irp* irp) {
              return kernel::IbCreateCq(client.al(), {ca.ca, 8, 0, 0}, cq, irp);
            }),
            Status::SUCCESS);
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps = {8, 8, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  ASSERT_EQ(
      AtDispatch([&](kernel::Irp* irp) { return kernel::IbCreateQp(client.al(), qp_in, qp, irp); }),
      Status::SUCCESS);
  abi::ModifyQpIn modify{};
  modify.qp = qp.qp;
  modify.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX |
                           abi::QpAttrMask::PORT | abi::QpAttrMask::ACCESS_FLAGS;
  modify.attributes.state = abi::QpState::INIT;
  modify.attributes.port_num = 1;
  ASSERT_EQ(
      AtDispatch([&](kernel::Irp* irp) { return kernel::IbModifyQp(client.al(), modify, irp); }),
      Status::SUCCESS);
  {
    // The speed path is direct and never pends.
    kernel::ScopedIrql dispatch(kernel::Irql::kDispatch);
    abi::WorkCompletion wc;
    uint32_t n;
    EXPECT_EQ(kernel::IbPollCq(client.al(), cq.cq.value, {&wc, 1}, &n), Status::NOT_FOUND);
    EXPECT_EQ(kernel::IbRearmCq(client.al(), cq.cq.value, abi::CqNotify::NEXT), Status::SUCCESS);
  }
  std::vector<abi::PortAttributes> ports(1);
  abi::QueryCaOut query{};
  EXPECT_EQ(AtDispatch([&](kernel::Irp* irp) {
              return kernel::IbQueryCa(client.al(), {ca.ca}, query, ports, irp);
            }),
            Status::SUCCESS);
  EXPECT_EQ(query.num_ports, 1u);
  EXPECT_EQ(
      AtDispatch([&](kernel::Irp* irp) { return kernel::IbDestroyQp(client.al(), {qp.qp}, irp); }),
      Status::SUCCESS);
  EXPECT_EQ(
      AtDispatch([&](kernel::Irp* irp) { return kernel::IbDestroyCq(client.al(), {cq.cq}, irp); }),
      Status::SUCCESS);
  EXPECT_EQ(
      AtDispatch([&](kernel::Irp* irp) { return kernel::IbDeallocPd(client.al(), {pd.pd}, irp); }),
      Status::SUCCESS);
}

// A MAD QP's destroy at DISPATCH (issue 17's "fewer threads" kept ReleaseMadQp's work item:
// mad_qp.cc says why): the verb succeeds without blocking under the verifier, the QP is gone
// at once, and once the work item ran the same PD and CQ take a new MAD QP up to RTS and
// give it back at PASSIVE.
TEST(Irql, MadQpDestroyedAtDispatchIsReleasedByItsWorkItem) {
  auto node = BootDefault("irql-mad-qp");
  ASSERT_TRUE(node);
  Client client(node->node());
  abi::OpenCaOut ca{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(node->ca_guids()[0]), 0}, &ca),
            Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(kernel::IbAllocPd(client.al(), {ca.ca, abi::PdType::NORMAL, 0, 0}, pd),
            Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(kernel::IbCreateCq(client.al(), {ca.ca, 64, 0, 0}, cq), Status::SUCCESS);
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::MAD;
  qp_in.params.caps = {16, 16, 1, 1, 0, 0};
  const uint32_t qps_before = al::QueryNodeObjectCounts(node->access_layer()).qp;
  abi::CreateQpOut qp{};
  ASSERT_EQ(kernel::IbCreateQp(client.al(), qp_in, qp), Status::SUCCESS);
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, qp.qp.value, 0x80010000));
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).qp, qps_before + 1);
  {
    kernel::ScopedIrql dispatch(kernel::Irql::kDispatch);
    EXPECT_EQ(kernel::IbDestroyQp(client.al(), {qp.qp}), Status::SUCCESS);
  }
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).qp, qps_before);
  abi::QueryQpOut gone{};
  EXPECT_EQ(kernel::IbQueryQp(client.al(), {qp.qp}, gone), Status::INVALID_QP_HANDLE);
  kernel::IoFlushQueuedWorkItems(node->node());  // the release's second half has run

  abi::CreateQpOut again{};
  ASSERT_EQ(kernel::IbCreateQp(client.al(), qp_in, again), Status::SUCCESS);
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, again.qp.value, 0x80010000));
  abi::QueryQpOut query{};
  ASSERT_EQ(kernel::IbQueryQp(client.al(), {again.qp}, query), Status::SUCCESS);
  EXPECT_EQ(query.attributes.qp_type, abi::QpType::MAD);
  EXPECT_EQ(query.attributes.state, abi::QpState::RTS);
  EXPECT_EQ(kernel::IbDestroyQp(client.al(), {again.qp}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyCq(client.al(), {cq.cq}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDeallocPd(client.al(), {pd.pd}), Status::SUCCESS);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).qp, qps_before);
}

}  // namespace
}  // namespace softib::testing
