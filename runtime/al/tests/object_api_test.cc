// The kernel object API (kernel/<module>_ib.h): per object kind, create, query, modify
// and destroy through public structures, at PASSIVE and at DISPATCH (the IRQL raised
// around the call, an IRP with a completion routine, the wait only back at PASSIVE); the
// structures' fields against what Query<X> returns; a failed create completes with the
// verb's status and Information 0; a busy destroy answers RESOURCE_BUSY and leaves the
// structure valid. Verbs the IDL keeps at PASSIVE (OpenCa, CloseCa, RegMem) run at
// PASSIVE in both modes.
#include "kernel/runtime_ioctls_ib.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_mr_mw_ib.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_ib.h"
#include "kernel/verbs_srq_ib.h"
#include "kernel_client.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/object_call.h"

namespace softib::testing {
namespace {

using namespace kernel;  // NOLINT: the IB_* names read as the seeds write them

enum class Mode { kPassive, kDispatch };

struct Completion {
  KEvent event{EventType::kNotification};
  Status status = Status::PENDING;
  uint64_t information = ~0ull;
  int calls = 0;
};

CompletionAction OnObjectIrpDone(DeviceObject*, Irp* irp, void* context) {
  auto* done = static_cast<Completion*>(context);
  done->status = irp->IoStatus.Status;
  done->information = irp->IoStatus.Information;
  ++done->calls;
  KeSetEvent(&done->event);
  return CompletionAction::kMoreProcessingRequired;
}

class ObjectApi : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    node_ = BootDefault(GetParam() == Mode::kDispatch ? "obj-dispatch" : "obj-passive");
    ASSERT_TRUE(node_);
    client_ = std::make_unique<Client>(node_->node());
    guid_ = node_->ca_guids()[0];
    IB_CA_CREATE create;
    create.ca_guid = htobe64(guid_);
    create.context = 0xCA;
    ASSERT_EQ(
        Create(
            &ca_, [&](Irp* irp) { return IbOpenCa(client_->al(), &create, irp); }, Mode::kPassive),
        Status::SUCCESS);
    IB_PD_CREATE pd;
    pd.context = 0xBD;
    ASSERT_EQ(Create(&pd_, [&](Irp* irp) { return IbAllocPd(ca_, &pd, irp); }), Status::SUCCESS);
  }
  void TearDown() override {
    if (pd_ != nullptr) {
      EXPECT_EQ(Run([&](Irp* irp) { return IbDeallocPd(pd_, irp); }), Status::SUCCESS);
    }
    if (ca_ != nullptr) {
      EXPECT_EQ(Run([&](Irp* irp) { return IbCloseCa(ca_, irp); }, nullptr, Mode::kPassive),
                Status::SUCCESS);
    }
    client_.reset();
  }

  // Calls `call(irp)` with a fresh IRP, at DISPATCH in that mode (or `mode`), and waits at
  // PASSIVE for the completion routine, which must run exactly once.
  template <typename Call>
  Status Run(Call&& call, uint64_t* information = nullptr, std::optional<Mode> mode = {}) {
    Irp* irp = IoAllocateIrp(1);
    Completion done;
    IoSetCompletionRoutine(irp, &OnObjectIrpDone, &done, true, true, true);
    Status returned;
    if (mode.value_or(GetParam()) == Mode::kDispatch) {
      ScopedIrql raise(Irql::kDispatch);
      returned = call(irp);
    } else {
      returned = call(irp);
    }
    EXPECT_EQ(KeWaitForSingleObject(&done.event, std::chrono::seconds(10)), Status::SUCCESS);
    EXPECT_EQ(done.calls, 1);
    if (returned != Status::PENDING) {
      EXPECT_EQ(returned, done.status);
    }
    IoFreeIrp(irp);
    if (information != nullptr) *information = done.information;
    return done.status;
  }

  template <typename Object, typename Call>
  Status Create(Object** object, Call&& call, std::optional<Mode> mode = {}) {
    uint64_t information = 0;
    const Status status = Run(call, &information, mode);
    *object = reinterpret_cast<Object*>(information);
    if (status != Status::SUCCESS) {
      EXPECT_EQ(information, 0u);
    }
    return status;
  }

  IB_CQ* MakeCq(uint32_t size = 64) {
    IB_CQ_CREATE create;
    create.size = size;
    IB_CQ* cq = nullptr;
    EXPECT_EQ(Create(&cq, [&](Irp* irp) { return IbCreateCq(ca_, &create, irp); }),
              Status::SUCCESS);
    return cq;
  }
  IB_QP* MakeQp(IB_CQ* cq, IB_SRQ* srq = nullptr) {
    IB_QP_CREATE create;
    create.send_cq = cq;
    create.recv_cq = cq;
    create.srq = srq;
    create.params.qp_type = abi::QpType::RC;
    create.params.caps = {16, srq != nullptr ? 0u : 16u, 2, srq != nullptr ? 0u : 2u, 0, 0};
    create.context = 0x9B;
    IB_QP* qp = nullptr;
    EXPECT_EQ(Create(&qp, [&](Irp* irp) { return IbCreateQp(pd_, &create, irp); }),
              Status::SUCCESS);
    return qp;
  }

  std::unique_ptr<stack::NodeStack> node_;
  std::unique_ptr<Client> client_;
  uint64_t guid_ = 0;
  IB_CA* ca_ = nullptr;
  IB_PD* pd_ = nullptr;
};

TEST_P(ObjectApi, CaShowsItsInstanceGuidAndPortsAndAnswersBusyWhileItHasAPd) {
  EXPECT_EQ(ca_->al, client_->al());
  EXPECT_EQ(ca_->guid, htobe64(guid_));
  EXPECT_EQ(ca_->context, 0xCAu);
  abi::QueryCaOut out{};
  std::vector<abi::PortAttributes> ports(abi::kMaxCaPorts);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryCa(ca_, &out, ports, irp); }), Status::SUCCESS);
  EXPECT_EQ(be64toh(out.attributes.ca_guid), guid_);
  EXPECT_EQ(ca_->num_ports, out.num_ports);
  EXPECT_EQ(ca_->num_ports, 1u);
  // The handle is the one the handle-based calls name.
  abi::QueryCaOut by_handle{};
  ASSERT_EQ(client_->QueryCa(ca_->handle, &by_handle, &ports), Status::SUCCESS);
  EXPECT_EQ(by_handle.num_ports, 1u);

  EXPECT_EQ(Run([&](Irp* irp) { return IbCloseCa(ca_, irp); }, nullptr, Mode::kPassive),
            Status::RESOURCE_BUSY);
  EXPECT_EQ(ca_->guid, htobe64(guid_));  // still valid, and still usable:
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryCa(ca_, &out, ports, irp); }), Status::SUCCESS);

  // A GUID no CA has: the verb's status, no object.
  IB_CA_CREATE bad;
  bad.ca_guid = htobe64(0x1234);
  abi::OpenCaOut handle_out{};
  const Status expected = client_->OpenCa({{client_->al_handle()}, bad.ca_guid, 0}, &handle_out);
  ASSERT_NE(expected, Status::SUCCESS);
  IB_CA* none = nullptr;
  EXPECT_EQ(
      Create(
          &none, [&](Irp* irp) { return IbOpenCa(client_->al(), &bad, irp); }, Mode::kPassive),
      expected);
  EXPECT_EQ(none, nullptr);
}

TEST_P(ObjectApi, PdKnowsItsCaAndIsBusyWhileAnAvLivesOnIt) {
  EXPECT_EQ(pd_->ca, ca_);
  EXPECT_EQ(pd_->al, client_->al());
  EXPECT_EQ(pd_->type, abi::PdType::NORMAL);
  EXPECT_EQ(pd_->context, 0xBDu);
  IB_AV_CREATE av_create;
  av_create.attributes.port_num = 1;
  av_create.attributes.dlid = 2;
  IB_AV* av = nullptr;
  ASSERT_EQ(Create(&av, [&](Irp* irp) { return IbCreateAv(pd_, &av_create, irp); }),
            Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDeallocPd(pd_, irp); }), Status::RESOURCE_BUSY);
  EXPECT_EQ(pd_->ca, ca_);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyAv(av, irp); }), Status::SUCCESS);

  IB_PD_CREATE bad;
  bad.type = static_cast<abi::PdType>(77);  // no such type: rejected before the handler
  IB_PD* none = nullptr;
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbAllocPd(ca_, &bad, irp); }),
            Status::INVALID_PARAMETER);
  // A null parent: the verb's invalid-handle status.
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbAllocPd(nullptr, &bad, irp); }),
            Status::INVALID_CA_HANDLE);
}

TEST_P(ObjectApi, AvAttributesFollowQueryAndModify) {
  IB_AV_CREATE create;
  create.attributes.port_num = 1;
  create.attributes.dlid = 2;
  create.attributes.sl = 3;
  IB_AV* av = nullptr;
  ASSERT_EQ(Create(&av, [&](Irp* irp) { return IbCreateAv(pd_, &create, irp); }), Status::SUCCESS);
  EXPECT_EQ(av->pd, pd_);
  abi::QueryAvOut out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryAv(av, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.pd.value, pd_->handle);
  EXPECT_EQ(out.attributes.dlid, av->attributes.dlid);
  EXPECT_EQ(out.attributes.sl, av->attributes.sl);
  EXPECT_EQ(av->attributes.dlid, 2);

  abi::ModifyAvIn modify{};
  modify.attributes = create.attributes;
  modify.attributes.dlid = 5;
  ASSERT_EQ(Run([&](Irp* irp) { return IbModifyAv(av, modify, irp); }), Status::SUCCESS);
  EXPECT_EQ(av->attributes.dlid, 5);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryAv(av, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.attributes.dlid, 5);

  // A failed modify leaves the structure as it was.
  modify.attributes.port_num = 9;
  EXPECT_EQ(Run([&](Irp* irp) { return IbModifyAv(av, modify, irp); }), Status::INVALID_PORT);
  EXPECT_EQ(av->attributes.port_num, 1);

  IB_AV_CREATE bad = create;
  bad.attributes.port_num = 9;
  IB_AV* none = nullptr;
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbCreateAv(pd_, &bad, irp); }),
            Status::INVALID_PORT);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyAv(av, irp); }), Status::SUCCESS);
}

TEST_P(ObjectApi, CqSizeFollowsQueryAndResizeAndIsBusyWhileAQpUsesIt) {
  IB_CQ_CREATE create;
  create.size = 100;
  create.context = 0xC0FFEE;
  IB_CQ* cq = nullptr;
  ASSERT_EQ(Create(&cq, [&](Irp* irp) { return IbCreateCq(ca_, &create, irp); }), Status::SUCCESS);
  EXPECT_EQ(cq->ca, ca_);
  EXPECT_EQ(cq->context, 0xC0FFEEu);
  EXPECT_GE(cq->size, 100u);
  abi::QueryCqOut out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryCq(cq, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.size, cq->size);

  abi::ModifyCqIn resize{};
  resize.size = 300;
  abi::ModifyCqOut granted{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbModifyCq(cq, resize, &granted, irp); }), Status::SUCCESS);
  EXPECT_GE(granted.size, 300u);
  EXPECT_EQ(cq->size, granted.size);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryCq(cq, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.size, cq->size);

  IB_QP* qp = MakeQp(cq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(cq, irp); }), Status::RESOURCE_BUSY);
  EXPECT_EQ(cq->size, granted.size);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryCq(cq, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyQp(qp, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(cq, irp); }), Status::SUCCESS);

  IB_CQ_CREATE bad;
  bad.size = 0;
  abi::CreateCqOut handle_out{};
  const Status expected = client_->CreateCq({{ca_->handle}, 0, 0, 0}, &handle_out);
  ASSERT_NE(expected, Status::SUCCESS);
  IB_CQ* none = nullptr;
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbCreateCq(ca_, &bad, irp); }), expected);
}

TEST_P(ObjectApi, SrqAttributesMatchQueryAndItIsBusyWhileAQpUsesIt) {
  IB_SRQ_CREATE create;
  create.attributes = {32, 2, 0, 0};
  create.context = 0x5B;
  IB_SRQ* srq = nullptr;
  ASSERT_EQ(Create(&srq, [&](Irp* irp) { return IbCreateSrq(pd_, &create, irp); }),
            Status::SUCCESS);
  EXPECT_EQ(srq->pd, pd_);
  EXPECT_EQ(srq->context, 0x5Bu);
  EXPECT_GE(srq->attributes.max_wr, 32u);
  abi::QuerySrqOut out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQuerySrq(srq, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.attributes.max_wr, srq->attributes.max_wr);
  EXPECT_EQ(out.attributes.max_sge, srq->attributes.max_sge);

  abi::ModifySrqIn arm{};
  arm.mask = abi::SrqAttrMask::LIMIT;
  arm.attributes.srq_limit = 4;
  ASSERT_EQ(Run([&](Irp* irp) { return IbModifySrq(srq, arm, irp); }), Status::SUCCESS);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQuerySrq(srq, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.attributes.srq_limit, 4u);
  EXPECT_EQ(srq->attributes.srq_limit, 4u);  // refreshed by the query

  IB_CQ* cq = MakeCq();
  IB_QP* qp = MakeQp(cq, srq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->srq, srq);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroySrq(srq, irp); }), Status::RESOURCE_BUSY);
  EXPECT_EQ(srq->pd, pd_);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyQp(qp, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroySrq(srq, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(cq, irp); }), Status::SUCCESS);

  IB_SRQ_CREATE bad;
  bad.attributes = {1u << 30, 1, 0, 0};
  abi::CreateSrqIn handle_in{};
  handle_in.pd.value = pd_->handle;
  handle_in.attributes = bad.attributes;
  abi::CreateSrqOut handle_out{};
  const Status expected = kernel::IbCreateSrq(client_->al(), handle_in, handle_out);
  ASSERT_NE(expected, Status::SUCCESS);
  IB_SRQ* none = nullptr;
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbCreateSrq(pd_, &bad, irp); }), expected);
}

TEST_P(ObjectApi, QpFieldsMatchQueryQpAndModifyMovesItToInit) {
  IB_CQ* send = MakeCq();
  IB_CQ* recv = MakeCq();
  IB_QP_CREATE create;
  create.send_cq = send;
  create.recv_cq = recv;
  create.params.qp_type = abi::QpType::UD;
  create.params.caps = {8, 8, 1, 1, 0, 0};
  create.context = 0x77;
  IB_QP* qp = nullptr;
  ASSERT_EQ(Create(&qp, [&](Irp* irp) { return IbCreateQp(pd_, &create, irp); }), Status::SUCCESS);
  EXPECT_EQ(qp->pd, pd_);
  EXPECT_EQ(qp->send_cq, send);
  EXPECT_EQ(qp->recv_cq, recv);
  EXPECT_EQ(qp->srq, nullptr);
  EXPECT_EQ(qp->qp_type, abi::QpType::UD);
  EXPECT_EQ(qp->context, 0x77u);
  EXPECT_GE(qp->caps.sq_depth, 8u);
  abi::QueryQpOut out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryQp(qp, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.attributes.qp_num, qp->qp_num);
  EXPECT_EQ(out.attributes.qp_type, qp->qp_type);
  EXPECT_EQ(out.attributes.caps.sq_depth, qp->caps.sq_depth);
  EXPECT_EQ(out.attributes.state, abi::QpState::RESET);
  EXPECT_EQ(out.pd.value, pd_->handle);
  EXPECT_EQ(out.send_cq.value, send->handle);
  EXPECT_EQ(out.recv_cq.value, recv->handle);

  using M = abi::QpAttrMask;
  abi::ModifyQpIn init{};
  init.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
  init.attributes.state = abi::QpState::INIT;
  init.attributes.port_num = 1;
  init.attributes.qkey = 0x11111111;
  ASSERT_EQ(Run([&](Irp* irp) { return IbModifyQp(qp, init, irp); }), Status::SUCCESS);
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryQp(qp, &out, irp); }), Status::SUCCESS);
  EXPECT_EQ(out.attributes.state, abi::QpState::INIT);

  // A CQ in use: busy, and both structures stay valid.
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(send, irp); }), Status::RESOURCE_BUSY);
  EXPECT_EQ(qp->send_cq, send);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyQp(qp, irp); }), Status::SUCCESS);

  IB_QP_CREATE bad = create;
  bad.params.caps = {1u << 30, 8, 1, 1, 0, 0};
  abi::CreateQpIn handle_in{};
  handle_in.pd.value = pd_->handle;
  handle_in.send_cq.value = send->handle;
  handle_in.recv_cq.value = recv->handle;
  handle_in.params = bad.params;
  abi::CreateQpOut handle_out{};
  const Status expected = client_->CreateQp(handle_in, &handle_out);
  ASSERT_NE(expected, Status::SUCCESS);
  IB_QP* none = nullptr;
  EXPECT_EQ(Create(&none, [&](Irp* irp) { return IbCreateQp(pd_, &bad, irp); }), expected);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(send, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(recv, irp); }), Status::SUCCESS);
}

TEST_P(ObjectApi, MrAndMwKeysMatchTheirQueries) {
  std::vector<uint8_t> buffer(8192);
  IB_MR_CREATE create;
  create.region.vaddr = reinterpret_cast<uint64_t>(buffer.data());
  create.region.length = buffer.size();
  create.region.access =
      abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::MW_BIND;
  IB_MR* mr = nullptr;
  ASSERT_EQ(Create(
                &mr, [&](Irp* irp) { return IbRegMem(pd_, &create, irp); }, Mode::kPassive),
            Status::SUCCESS);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(mr->address, create.region.vaddr);
  EXPECT_EQ(mr->length, buffer.size());
  EXPECT_EQ(mr->access, create.region.access);
  abi::QueryMrOut mr_out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryMr(mr, &mr_out, irp); }), Status::SUCCESS);
  EXPECT_EQ(mr_out.attributes.lkey, mr->lkey);
  EXPECT_EQ(mr_out.attributes.rkey, mr->rkey);
  EXPECT_EQ(mr_out.attributes.pd.value, pd_->handle);

  IB_MW_CREATE mw_create;
  mw_create.type = abi::MwType::TYPE1;
  IB_MW* mw = nullptr;
  ASSERT_EQ(Create(&mw, [&](Irp* irp) { return IbCreateMw(pd_, &mw_create, irp); }),
            Status::SUCCESS);
  EXPECT_EQ(mw->pd, pd_);
  EXPECT_EQ(mw->type, abi::MwType::TYPE1);
  abi::QueryMwOut mw_out{};
  ASSERT_EQ(Run([&](Irp* irp) { return IbQueryMw(mw, &mw_out, irp); }), Status::SUCCESS);
  EXPECT_EQ(mw_out.rkey, mw->rkey);
  EXPECT_EQ(mw_out.type, mw->type);
  EXPECT_EQ(mw_out.pd.value, pd_->handle);

  EXPECT_EQ(Run([&](Irp* irp) { return IbDeallocPd(pd_, irp); }), Status::RESOURCE_BUSY);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyMw(mw, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDeregMr(mr, irp); }), Status::SUCCESS);

  IB_MW_CREATE bad_mw;
  bad_mw.type = static_cast<abi::MwType>(9);
  IB_MW* none_mw = nullptr;
  EXPECT_EQ(Create(&none_mw, [&](Irp* irp) { return IbCreateMw(pd_, &bad_mw, irp); }),
            Status::INVALID_PARAMETER);
  IB_MR_CREATE bad_mr = create;
  bad_mr.region.access = static_cast<abi::AccessFlags>(0x80000000u);
  IB_MR* none_mr = nullptr;
  EXPECT_EQ(Create(
                &none_mr, [&](Irp* irp) { return IbRegMem(pd_, &bad_mr, irp); }, Mode::kPassive),
            Status::INVALID_PARAMETER);
}

TEST_P(ObjectApi, ANullIrpIsRefusedAndNothingIsCreated) {
  IB_CQ_CREATE create;
  create.size = 16;
  EXPECT_EQ(IbCreateCq(ca_, &create, nullptr), Status::INVALID_PARAMETER);
  EXPECT_EQ(IbDestroyCq(static_cast<IB_CQ*>(nullptr), nullptr), Status::INVALID_PARAMETER);
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).cq, 0u);
  IB_CQ* cq = MakeCq();
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).cq, 1u);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(cq, irp); }), Status::SUCCESS);
  EXPECT_EQ(al::QueryNodeObjectCounts(node_->access_layer()).cq, 0u);
}

TEST_P(ObjectApi, SpeedPathOverloadsTakeTheObjects) {
  IB_CQ* cq = MakeCq();
  IB_QP* qp = MakeQp(cq);
  ASSERT_NE(qp, nullptr);
  uint32_t entries = 99;
  EXPECT_EQ(IbPeekCq(cq, &entries), Status::SUCCESS);
  EXPECT_EQ(entries, 0u);
  abi::WorkCompletion wc{};
  uint32_t polled = 7;
  EXPECT_EQ(IbPollCq(cq, {&wc, 1}, &polled), Status::NOT_FOUND);
  EXPECT_EQ(IbRearmCq(cq, abi::CqNotify::NEXT), Status::SUCCESS);
  EXPECT_EQ(IbPollCq(static_cast<IB_CQ*>(nullptr), {&wc, 1}, &polled), Status::INVALID_CQ_HANDLE);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyQp(qp, irp); }), Status::SUCCESS);
  EXPECT_EQ(Run([&](Irp* irp) { return IbDestroyCq(cq, irp); }), Status::SUCCESS);
}

TEST(ObjectApiWait, CreateAndWaitReturnsTheObjectAtPassive) {
  auto node = BootDefault("obj-wait");
  ASSERT_TRUE(node);
  Client client(node->node());
  IB_CA_CREATE create;
  create.ca_guid = htobe64(node->ca_guids()[1]);
  IB_CA* ca = nullptr;
  ASSERT_EQ(IbCreateAndWait([&](Irp* irp) { return IbOpenCa(client.al(), &create, irp); }, &ca),
            Status::SUCCESS);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->guid, create.ca_guid);
  EXPECT_EQ(IbCallAndWait([&](Irp* irp) { return IbCloseCa(ca, irp); }), Status::SUCCESS);
}

// An object call whose verb pends (GetCompletionEvent waits for the CQ's notification):
// started at DISPATCH it returns PENDING without completing the caller's IRP, which
// completes later — from the AL's completion of its own IRP — with the verb's status and
// output, once a completion arrives on the armed CQ.
TEST(ObjectApiPending, APendingVerbCompletesTheCallersIrpLater) {
  auto node = BootDefault("obj-pending");
  ASSERT_TRUE(node);
  Side a, b;  // before the client: the HCA may reach registered memory until IbReleaseAl
  Client client(node->node());
  const auto guids = node->ca_guids();
  ASSERT_NO_FATAL_FAILURE(client.Build(guids[0], 1, &a));
  ASSERT_NO_FATAL_FAILURE(client.Build(guids[1], 2, &b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(a, b));
  ASSERT_NO_FATAL_FAILURE(client.Connect(b, a));
  IB_CQ* cq = client.cq_object(b.cq);
  IB_QP* qp_a = client.qp_object(a.qp);
  IB_QP* qp_b = client.qp_object(b.qp);
  ASSERT_NE(cq, nullptr);
  ASSERT_NE(qp_a, nullptr);
  ASSERT_NE(qp_b, nullptr);
  EXPECT_EQ(cq->context, 0xC0FFEEu);
  ASSERT_EQ(IbRearmCq(cq, abi::CqNotify::NEXT), Status::SUCCESS);

  Irp* irp = IoAllocateIrp(1);
  Completion done;
  IoSetCompletionRoutine(irp, &OnObjectIrpDone, &done, true, true, true);
  abi::GetCompletionEventOut event{};
  Status returned;
  {
    ScopedIrql raise(Irql::kDispatch);
    returned = IbGetCompletionEvent(cq, &event, irp);
  }
  EXPECT_EQ(returned, Status::PENDING);
  EXPECT_EQ(done.calls, 0);

  uint32_t posted = 0;
  const abi::RecvWorkRequest recv = Recv(b, 0, 64, 5);
  ASSERT_EQ(IbPostRecv(qp_b, {&recv, 1}, &posted), Status::SUCCESS);
  const abi::SendWorkRequest send = Send(a, 0, 64, 6);
  ASSERT_EQ(IbPostSend(qp_a, {&send, 1}, &posted), Status::SUCCESS);
  ASSERT_EQ(KeWaitForSingleObject(&done.event, std::chrono::seconds(10)), Status::SUCCESS);
  EXPECT_EQ(done.calls, 1);
  EXPECT_EQ(done.status, Status::SUCCESS);
  EXPECT_EQ(done.information, sizeof(abi::GetCompletionEventOut));
  EXPECT_EQ(event.context, 0xC0FFEEu);
  EXPECT_GE(event.event_count, 1u);
  IoFreeIrp(irp);
  const auto received = client.PollN(b.cq, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].wr_id, 5u);
}

INSTANTIATE_TEST_SUITE_P(Irql, ObjectApi, ::testing::Values(Mode::kPassive, Mode::kDispatch),
                         [](const auto& info) {
                           return info.param == Mode::kPassive ? "Passive" : "Dispatch";
                         });

}  // namespace
}  // namespace softib::testing
