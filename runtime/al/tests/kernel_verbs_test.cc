// Kernel clients through the AL on a booted node: an RC pair between the two CAs, by
// direct call and by IRP, with exact completions and bytes; busy-on-destroy; handles that
// must not resolve; release with work in flight.
#include "kernel_client.h"

namespace softib::testing {
namespace {

TEST(KernelVerbs, BootedNodeShowsItsCasWithActivePortsAndLids) {
  auto node = BootDefault("kv-boot");
  ASSERT_TRUE(node);
  Client client(node->node());
  const auto guids = client.CaGuids();
  ASSERT_EQ(guids, node->ca_guids());
  ASSERT_EQ(guids.size(), 2u);
  EXPECT_EQ(node->ca_device_name(guids[0]).substr(0, 4), "hca-");
  EXPECT_EQ(node->ca_device_name(guids[0]).size(), 20u);
  for (std::size_t i = 0; i < guids.size(); ++i) {
    abi::OpenCaOut ca{};
    ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guids[i]), 0}, &ca), Status::SUCCESS);
    abi::QueryCaOut out{};
    std::vector<abi::PortAttributes> ports;
    ASSERT_EQ(client.QueryCa(ca.ca.value, &out, &ports), Status::SUCCESS);
    EXPECT_EQ(be64toh(out.attributes.ca_guid), guids[i]);  // network order
    ASSERT_EQ(out.num_ports, 1u);
    EXPECT_EQ(ports[0].lid, 1 + i);
    EXPECT_EQ(ports[0].link_state, 4);  // ACTIVE
  }
}

class RcPair : public ::testing::TestWithParam<Path> {};

TEST_P(RcPair, RdmaWriteAndSendCompleteExactlyWithTheirBytes) {
  auto node = BootDefault(GetParam() == Path::kDirect ? "kv-rc-direct" : "kv-rc-irp");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node(), GetParam());
  const auto guids = node->ca_guids();
  ASSERT_NO_FATAL_FAILURE(client.Build(guids[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(guids[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));

  abi::QueryQpOut q{};
  ASSERT_EQ(client.QueryQp({{a.qp}}, &q), Status::SUCCESS);
  EXPECT_EQ(q.attributes.state, abi::QpState::RTS);
  EXPECT_EQ(q.attributes.qp_num, a.qpn);
  EXPECT_EQ(q.pd.value, a.pd);
  EXPECT_EQ(q.send_cq.value, a.cq);

  Pattern(a.buffer, 0, 5000, 7);  // 5 packets at MTU 1024
  Pattern(a.buffer, 8192, 300, 9);
  uint32_t posted = 0;
  const abi::RecvWorkRequest recv = Recv(b, 16384, 1000, 77);
  ASSERT_EQ(kernel::IbPostRecv(client.al(), b.qp, {&recv, 1}, &posted), Status::SUCCESS);
  const abi::SendWorkRequest wrs[] = {Write(a, 0, 5000, b, 4096, 1), Send(a, 8192, 300, 2)};
  ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, wrs, &posted), Status::SUCCESS);
  EXPECT_EQ(posted, 2u);

  const auto sent = client.PollN(a.cq, 2);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].wr_id, 1u);
  EXPECT_EQ(sent[0].opcode, abi::WcOpcode::RDMA_WRITE);
  EXPECT_EQ(sent[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(sent[1].wr_id, 2u);
  EXPECT_EQ(sent[1].opcode, abi::WcOpcode::SEND);
  EXPECT_EQ(sent[1].status, abi::WcStatus::SUCCESS);
  const auto received = client.PollN(b.cq, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 77u);
  EXPECT_EQ(received[0].opcode, abi::WcOpcode::RECV);
  EXPECT_EQ(received[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(received[0].length, 300u);
  EXPECT_EQ(received[0].qp_num, b.qpn);
  EXPECT_EQ(received[0].src_qp, a.qpn);
  EXPECT_TRUE(HasPattern(b.buffer, 4096, 5000, 7));
  EXPECT_EQ(b.buffer[4096 + 5000], 0);
  EXPECT_TRUE(HasPattern(b.buffer, 16384, 300, 9));
  EXPECT_EQ(b.buffer[16384 + 300], 0);

  // Nothing else arrives.
  abi::WorkCompletion extra[4];
  uint32_t n = 0;
  EXPECT_EQ(kernel::IbPollCq(client.al(), a.cq, extra, &n), Status::NOT_FOUND);
  EXPECT_EQ(kernel::IbPollCq(client.al(), b.cq, extra, &n), Status::NOT_FOUND);
}

INSTANTIATE_TEST_SUITE_P(Paths, RcPair, ::testing::Values(Path::kDirect, Path::kIrp),
                         [](const auto& info) {
                           return info.param == Path::kDirect ? "Direct" : "Irp";
                         });

TEST(KernelVerbs, DestroyWithChildrenOrUsersIsBusyAndNeverCascades) {
  auto node = BootDefault("kv-busy");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  EXPECT_EQ(client.DeallocPd({{a.pd}}), Status::RESOURCE_BUSY);  // QP and MR under it
  EXPECT_EQ(client.DestroyCq({{a.cq}}), Status::RESOURCE_BUSY);  // the QP uses it
  EXPECT_EQ(client.CloseCa({{a.ca}}), Status::RESOURCE_BUSY);
  abi::QueryQpOut q{};
  EXPECT_EQ(client.QueryQp({{a.qp}}, &q), Status::SUCCESS);  // nothing was torn down
  EXPECT_EQ(client.DestroyQp({{a.qp}}), Status::SUCCESS);
  EXPECT_EQ(client.DestroyCq({{a.cq}}), Status::SUCCESS);
  EXPECT_EQ(client.DeallocPd({{a.pd}}), Status::RESOURCE_BUSY);  // the MR
  EXPECT_EQ(client.DeregMr({{a.mr}}), Status::SUCCESS);
  EXPECT_EQ(client.DeallocPd({{a.pd}}), Status::SUCCESS);
  EXPECT_EQ(client.CloseCa({{a.ca}}), Status::SUCCESS);
  const abi::ObjectCounts counts = al::QueryNodeObjectCounts(node->access_layer());
  EXPECT_EQ(counts.qp + counts.cq + counts.mr + counts.pd + counts.ca, 0u);
}

TEST(KernelVerbs, StaleDestroyedWrongTypeAndForeignHandlesDoNotResolve) {
  auto node = BootDefault("kv-handles");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side a, b;
  Client client(node->node());
  Client other(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(other.Build(node->ca_guids()[0], 1, &b));
  abi::QueryQpOut q{};
  EXPECT_EQ(client.QueryQp({{b.qp}}, &q), Status::INVALID_QP_HANDLE);  // another client's
  EXPECT_EQ(client.QueryQp({{a.cq}}, &q), Status::INVALID_QP_HANDLE);  // a CQ's
  EXPECT_EQ(client.QueryQp({{0}}, &q), Status::INVALID_QP_HANDLE);
  EXPECT_EQ(client.QueryQp({{0x0123456789ABCDEFull}}, &q), Status::INVALID_QP_HANDLE);
  const uint64_t old_qp = a.qp;
  ASSERT_EQ(client.DestroyQp({{a.qp}}), Status::SUCCESS);
  EXPECT_EQ(client.QueryQp({{old_qp}}, &q), Status::INVALID_QP_HANDLE);
  EXPECT_EQ(client.DestroyQp({{old_qp}}), Status::INVALID_QP_HANDLE);
  // A new QP may reuse the slot later, never the handle value.
  abi::CreateQpIn in{};
  in.pd.value = a.pd;
  in.send_cq.value = a.cq;
  in.recv_cq.value = a.cq;
  in.params.qp_type = abi::QpType::RC;
  in.params.caps = {8, 8, 1, 1, 0, 0};
  abi::CreateQpOut out{};
  ASSERT_EQ(client.CreateQp(in, &out), Status::SUCCESS);
  EXPECT_NE(out.qp.value, old_qp);
  // The speed path checks handles the same way.
  abi::WorkCompletion wc;
  uint32_t n;
  EXPECT_EQ(kernel::IbPollCq(client.al(), b.cq, {&wc, 1}, &n), Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(kernel::IbPostSend(client.al(), old_qp, {}, &n), Status::INVALID_QP_HANDLE);
}

TEST(KernelVerbs, ReleasingAClientWithWorkInFlightDestroysEverythingItOwned) {
  auto node = BootDefault("kv-release");
  ASSERT_TRUE(node);
  const abi::ObjectCounts before = al::QueryNodeObjectCounts(node->access_layer());
  {
    // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
    Side a, b;
    Client client(node->node());
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a, abi::QpType::RC, 1 << 20));
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b, abi::QpType::RC, 1 << 20));
    ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
    ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));
    ASSERT_EQ(kernel::IbRearmCq(client.al(), b.cq, abi::CqNotify::NEXT), Status::SUCCESS);
    for (int i = 0; i < 32; ++i) {
      const abi::SendWorkRequest wr = Write(a, 0, 32768, b, 0, i);
      uint32_t posted = 0;
      ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
    }
    client.Release();  // packets, ACKs and completions are still on their way
  }
  const abi::ObjectCounts after = al::QueryNodeObjectCounts(node->access_layer());
  EXPECT_EQ(std::memcmp(&before, &after, sizeof(before)), 0);
  EXPECT_EQ(after.qp, 0u);
  EXPECT_EQ(after.pending_requests, 0u);
}

}  // namespace
}  // namespace softib::testing
