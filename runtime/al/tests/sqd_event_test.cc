// SQ_DRAINED reaches the AL client that owns the QP: an async event naming the QP's handle
// and context, after the drained QP's outstanding completions.
#include "kernel_client.h"

namespace softib::testing {
namespace {

TEST(SqdEvent, DrainingAnRcQpReportsSqDrainedToItsOwner) {
  auto node = BootDefault("sqd-event");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));
  for (int i = 0; i < 8; ++i) {
    const abi::SendWorkRequest wr = Write(a, 0, 8192, b, 0, i);
    uint32_t posted = 0;
    ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
  }
  PendingCall waiter;
  abi::GetAsyncEventOut out{};
  ASSERT_EQ(kernel::IbGetAsyncEvent(client.al(), {{client.al_handle()}}, out, waiter.irp),
            Status::PENDING);
  abi::ModifyQpIn in{};
  in.qp.value = a.qp;
  in.attributes.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::EN_SQD_ASYNC_NOTIFY;
  in.attributes.state = abi::QpState::SQD;
  in.attributes.en_sqd_async_notify = 1;
  ASSERT_EQ(client.ModifyQp(in), Status::SUCCESS);
  ASSERT_TRUE(kernel::KeWaitForSingleObject(&waiter.done, std::chrono::seconds(10)) ==
              Status::SUCCESS);
  EXPECT_EQ(waiter.status.load(), Status::SUCCESS);
  EXPECT_EQ(out.record.code, abi::AsyncEventType::SQ_DRAINED);
  EXPECT_EQ(out.record.qp.value, a.qp);
  EXPECT_EQ(out.record.context, 0x9999u);  // the QP's (Client::Build)
  // Every write that was started completed before the drain was reported.
  abi::QueryQpOut q{};
  ASSERT_EQ(client.QueryQp({{a.qp}}, &q), Status::SUCCESS);
  EXPECT_EQ(q.attributes.state, abi::QpState::SQD);
  EXPECT_EQ(q.attributes.sq_draining, 0);
}

}  // namespace
}  // namespace softib::testing
