// The CM verbs before the CM exists (issue 5): each runs the generated validation, so a
// malformed request gets its exact rejection, and a well-formed one answers UNSUPPORTED.
#include "kernel/verbs_cm_direct.h"
#include "kernel_client.h"

namespace softib::testing {
namespace {

TEST(CmVerbs, ValidationRunsFirstThenTheVerbSaysUnsupported) {
  auto node = BootDefault("cm-verbs");
  ASSERT_TRUE(node);
  // Declared before the client: the HCA may reach registered memory until IbReleaseAl.
  Side side;
  Client client(node->node());

  abi::CreateCepOut cep{};
  EXPECT_EQ(kernel::IbCreateCep(client.al(), {{client.al_handle()}, 0x77}, cep),
            Status::UNSUPPORTED);
  EXPECT_EQ(cep.cep.value, 0u);
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

  // Nothing was created.
  EXPECT_EQ(al::QueryNodeObjectCounts(node->access_layer()).cep, 0u);
}

}  // namespace
}  // namespace softib::testing
