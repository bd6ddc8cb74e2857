// The CM verbs' generated validation runs first, so a malformed request gets its exact
// rejection; verbs out of the CEP's state answer INVALID_STATE.
#include "kernel/verbs_cm_direct.h"
#include "kernel_client.h"

namespace softib::testing {
namespace {

TEST(CmVerbs, ValidationRunsFirstThenTheStateDecides) {
  auto node = BootDefault("cm-verbs");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side side;
  Client client(node->node());

  abi::CreateCepOut cep{};
  ASSERT_EQ(kernel::IbCreateCep(client.al(), {{client.al_handle()}, 0x77}, cep), Status::SUCCESS);
  EXPECT_NE(cep.cep.value, 0u);
  EXPECT_EQ(kernel::IbCreateCep(client.al(), {{client.al_handle() ^ 0x10000}, 0x77}, cep),
            Status::INVALID_AL_HANDLE);
  // A PD handle where an Al belongs.
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &side));
  EXPECT_EQ(kernel::IbCreateCep(client.al(), {{side.pd}, 0x77}, cep), Status::INVALID_AL_HANDLE);

  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{0}}), Status::INVALID_CEP_HANDLE);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{side.qp}}), Status::INVALID_CEP_HANDLE);

  // A non-zero reserved field is refused before the handle is even looked at.
  abi::CepListenIn listen{};
  listen.reserved0 = 1;
  EXPECT_EQ(kernel::IbCepListen(client.al(), listen), Status::INVALID_PARAMETER);
  listen.reserved0 = 0;
  EXPECT_EQ(kernel::IbCepListen(client.al(), listen), Status::INVALID_CEP_HANDLE);

  // An idle CEP: nothing to answer, nothing to disconnect, no path to load.
  EXPECT_EQ(kernel::IbCepSendRtu(client.al(), {{cep.cep.value}, 0, 0}, {}), Status::INVALID_STATE);
  EXPECT_EQ(kernel::IbCepSendDreq(client.al(), {{cep.cep.value}, 0, 0}, {}), Status::INVALID_STATE);
  EXPECT_EQ(kernel::IbCepSendDrep(client.al(), {{cep.cep.value}, 0, 0}, {}), Status::INVALID_STATE);
  abi::CepSendMraIn mra{};
  mra.cep.value = cep.cep.value;
  EXPECT_EQ(kernel::IbCepSendMra(client.al(), mra, {}), Status::INVALID_STATE);
  abi::CepSendRejIn rej{};
  rej.cep.value = cep.cep.value;
  rej.reason = 28;
  EXPECT_EQ(kernel::IbCepSendRej(client.al(), rej, {}), Status::INVALID_STATE);
  rej.ari_length = 73;
  EXPECT_EQ(kernel::IbCepSendRej(client.al(), rej, {}), Status::INVALID_PARAMETER);
  abi::CepGetRtsAttributesOut rts{};
  EXPECT_EQ(kernel::IbCepGetRtsAttributes(client.al(), {{cep.cep.value}}, rts),
            Status::INVALID_STATE);
  abi::CepSendLapIn lap{};
  lap.cep.value = cep.cep.value;
  EXPECT_EQ(kernel::IbCepSendLap(client.al(), lap, {}), Status::INVALID_STATE);
  abi::CepSendAprIn apr{};
  apr.cep.value = cep.cep.value;
  EXPECT_EQ(kernel::IbCepSendApr(client.al(), apr, {}), Status::INVALID_STATE);
  apr.info_length = 73;
  EXPECT_EQ(kernel::IbCepSendApr(client.al(), apr, {}), Status::INVALID_PARAMETER);
  abi::CepSendSidrRepIn sidr_rep{};
  sidr_rep.cep.value = cep.cep.value;
  sidr_rep.status = 1;  // service ID not supported: no QP needed
  EXPECT_EQ(kernel::IbCepSendSidrRep(client.al(), sidr_rep, {}), Status::INVALID_STATE);
  sidr_rep.status = 0;  // valid, without a QP: the state decides first
  EXPECT_EQ(kernel::IbCepSendSidrRep(client.al(), sidr_rep, {}), Status::INVALID_STATE);
  abi::CepGetEventOut event{};
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{cep.cep.value}}, event), Status::CANCELED);
  // A listen's compare beyond the REQ's private data.
  abi::CepListenIn bad{};
  bad.cep.value = cep.cep.value;
  bad.compare_offset = 90;
  bad.compare_length = 3;
  EXPECT_EQ(kernel::IbCepListen(client.al(), bad), Status::INVALID_SETTING);

  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{cep.cep.value}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{cep.cep.value}}), Status::INVALID_CEP_HANDLE);
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).cep, 0u);
}

}  // namespace
}  // namespace softib::testing
