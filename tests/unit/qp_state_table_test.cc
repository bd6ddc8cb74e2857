// The generated QP state table against the modify-QP rules of the InfiniBand specification
// (IBA vol. 1, 10.3 and 11.2.5 "QP State Transition Properties"; the same rules as the
// Linux kernel's verbs state table). The expectations are written here from the
// specification, not derived from idl/qp_state.idl.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>

#include "softib/abi/qp_state_table.h"

namespace softib::abi {
namespace {

using A = QpAttrMask;
using S = QpState;
using T = QpType;

// STATE (the requested next state) is part of every modify in softib's encoding.
uint32_t Attrs(std::initializer_list<A> attrs) {
  uint32_t mask = ToUnderlying(A::STATE);
  for (A a : attrs) mask |= ToUnderlying(a);
  return mask;
}

Status Check(T type, S from, S to, std::initializer_list<A> attrs) {
  return CheckQpTransition(type, from, to, Attrs(attrs));
}

// Each attribute of `required` alone missing fails; all of them succeed.
void ExpectRequired(T type, S from, S to, std::initializer_list<A> required) {
  EXPECT_EQ(Check(type, from, to, required), Status::SUCCESS);
  for (A missing : required) {
    uint32_t mask = Attrs(required) & ~uint32_t{ToUnderlying(missing)};
    EXPECT_EQ(CheckQpTransition(type, from, to, mask), Status::INVALID_SETTING)
        << "without " << ToUnderlying(missing);
  }
}

constexpr S kAllStates[] = {S::RESET, S::INIT, S::RTR, S::RTS, S::SQD, S::SQE, S::ERROR};

TEST(QpStateTable, RcResetToInitRequiresPkeyIndexPortAccessFlags) {
  ExpectRequired(T::RC, S::RESET, S::INIT, {A::PKEY_INDEX, A::PORT, A::ACCESS_FLAGS});
}

TEST(QpStateTable, UcResetToInitRequiresPkeyIndexPortAccessFlags) {
  ExpectRequired(T::UC, S::RESET, S::INIT, {A::PKEY_INDEX, A::PORT, A::ACCESS_FLAGS});
}

TEST(QpStateTable, UdResetToInitRequiresQkeyAndForbidsAccessFlags) {
  ExpectRequired(T::UD, S::RESET, S::INIT, {A::PKEY_INDEX, A::PORT, A::QKEY});
  EXPECT_EQ(Check(T::UD, S::RESET, S::INIT, {A::PKEY_INDEX, A::PORT, A::QKEY, A::ACCESS_FLAGS}),
            Status::INVALID_SETTING);
}

TEST(QpStateTable, SpecialQpsHaveNoPortAttribute) {
  // QP0/QP1 are bound to their port when created: PORT is not a modify attribute.
  ExpectRequired(T::GSI, S::RESET, S::INIT, {A::PKEY_INDEX, A::QKEY});
  EXPECT_EQ(Check(T::SMI, S::RESET, S::INIT, {A::PKEY_INDEX, A::QKEY, A::PORT}),
            Status::INVALID_SETTING);
}

TEST(QpStateTable, RcInitToRtrRequiresPathAndResponderAttributes) {
  ExpectRequired(T::RC, S::INIT, S::RTR,
                 {A::AV, A::PATH_MTU, A::DEST_QPN, A::RQ_PSN, A::MAX_DEST_RD_ATOMIC,
                  A::MIN_RNR_TIMER});
  EXPECT_EQ(Check(T::RC, S::INIT, S::RTR,
                  {A::AV, A::PATH_MTU, A::DEST_QPN, A::RQ_PSN, A::MAX_DEST_RD_ATOMIC,
                   A::MIN_RNR_TIMER, A::ALT_PATH, A::ACCESS_FLAGS, A::PKEY_INDEX}),
            Status::SUCCESS);
}

TEST(QpStateTable, UcInitToRtrHasNoRdmaReadResources) {
  ExpectRequired(T::UC, S::INIT, S::RTR, {A::AV, A::PATH_MTU, A::DEST_QPN, A::RQ_PSN});
  EXPECT_EQ(Check(T::UC, S::INIT, S::RTR,
                  {A::AV, A::PATH_MTU, A::DEST_QPN, A::RQ_PSN, A::MAX_DEST_RD_ATOMIC}),
            Status::INVALID_SETTING);
}

TEST(QpStateTable, UdInitToRtrNeedsNothingButAllowsQkey) {
  EXPECT_EQ(Check(T::UD, S::INIT, S::RTR, {}), Status::SUCCESS);
  EXPECT_EQ(Check(T::UD, S::INIT, S::RTR, {A::QKEY, A::PKEY_INDEX}), Status::SUCCESS);
  EXPECT_EQ(Check(T::UD, S::INIT, S::RTR, {A::AV}), Status::INVALID_SETTING);
}

TEST(QpStateTable, RcRtrToRtsRequiresRequesterAttributes) {
  ExpectRequired(T::RC, S::RTR, S::RTS,
                 {A::SQ_PSN, A::TIMEOUT, A::RETRY_COUNT, A::RNR_RETRY, A::MAX_RD_ATOMIC});
  EXPECT_EQ(Check(T::RC, S::RTR, S::RTS,
                  {A::SQ_PSN, A::TIMEOUT, A::RETRY_COUNT, A::RNR_RETRY, A::MAX_RD_ATOMIC,
                   A::CUR_STATE, A::ALT_PATH, A::ACCESS_FLAGS, A::MIN_RNR_TIMER,
                   A::PATH_MIG_STATE}),
            Status::SUCCESS);
}

TEST(QpStateTable, UcAndUdRtrToRtsRequireOnlySqPsn) {
  ExpectRequired(T::UC, S::RTR, S::RTS, {A::SQ_PSN});
  ExpectRequired(T::UD, S::RTR, S::RTS, {A::SQ_PSN});
  EXPECT_EQ(Check(T::UD, S::RTR, S::RTS, {A::SQ_PSN, A::TIMEOUT}), Status::INVALID_SETTING);
}

TEST(QpStateTable, ForbiddenAttributeRejected) {
  const auto rtr_to_rts = {A::SQ_PSN, A::TIMEOUT, A::RETRY_COUNT, A::RNR_RETRY,
                           A::MAX_RD_ATOMIC};
  uint32_t mask = Attrs(rtr_to_rts);
  EXPECT_EQ(CheckQpTransition(T::RC, S::RTR, S::RTS, mask | ToUnderlying(A::QKEY)),
            Status::INVALID_SETTING);
  EXPECT_EQ(CheckQpTransition(T::RC, S::RTR, S::RTS, mask | ToUnderlying(A::DEST_QPN)),
            Status::INVALID_SETTING);
  // The path may change while the send queue is drained (SQD -> SQD), not in RTS -> RTS.
  EXPECT_EQ(Check(T::RC, S::SQD, S::SQD, {A::AV}), Status::SUCCESS);
  EXPECT_EQ(Check(T::RC, S::RTS, S::RTS, {A::AV}), Status::INVALID_SETTING);
  // CUR_STATE is optional only from RTR, RTS, SQD and SQE.
  EXPECT_EQ(Check(T::RC, S::RESET, S::INIT,
                  {A::PKEY_INDEX, A::PORT, A::ACCESS_FLAGS, A::CUR_STATE}),
            Status::INVALID_SETTING);
}

TEST(QpStateTable, SkippingStatesIsIllegal) {
  for (T type : {T::RC, T::UC, T::UD}) {
    EXPECT_EQ(Check(type, S::RESET, S::RTS, {A::SQ_PSN}), Status::INVALID_STATE);
    EXPECT_EQ(Check(type, S::RESET, S::RTR, {}), Status::INVALID_STATE);
    EXPECT_EQ(Check(type, S::INIT, S::RTS, {A::SQ_PSN}), Status::INVALID_STATE);
    EXPECT_EQ(Check(type, S::RTS, S::RTR, {}), Status::INVALID_STATE);
    EXPECT_EQ(Check(type, S::ERROR, S::RTS, {}), Status::INVALID_STATE);
    EXPECT_EQ(Check(type, S::RESET, S::SQD, {}), Status::INVALID_STATE);
  }
}

TEST(QpStateTable, AnyStateToResetOrErrorIsLegal) {
  for (T type : {T::RC, T::UC, T::UD, T::SMI, T::GSI}) {
    for (S from : kAllStates) {
      EXPECT_EQ(Check(type, from, S::ERROR, {}), Status::SUCCESS) << ToString(from);
      EXPECT_EQ(Check(type, from, S::RESET, {}), Status::SUCCESS) << ToString(from);
      // Nothing else may accompany a move to RESET or ERROR.
      EXPECT_EQ(Check(type, from, S::ERROR, {A::QKEY}), Status::INVALID_SETTING);
    }
  }
}

TEST(QpStateTable, SendQueueDrainAndErrorRecovery) {
  for (T type : {T::RC, T::UC, T::UD}) {
    EXPECT_EQ(Check(type, S::RTS, S::SQD, {}), Status::SUCCESS);
    EXPECT_EQ(Check(type, S::RTS, S::SQD, {A::EN_SQD_ASYNC_NOTIFY}), Status::SUCCESS);
    EXPECT_EQ(Check(type, S::SQD, S::RTS, {}), Status::SUCCESS);
  }
  // A send-queue error takes UC and UD QPs to SQE, from which RTS recovers them; an RC QP
  // goes to ERROR instead, so SQE -> RTS does not exist for RC.
  EXPECT_EQ(Check(T::UC, S::SQE, S::RTS, {}), Status::SUCCESS);
  EXPECT_EQ(Check(T::UD, S::SQE, S::RTS, {A::QKEY}), Status::SUCCESS);
  EXPECT_EQ(Check(T::RC, S::SQE, S::RTS, {}), Status::INVALID_STATE);
}

TEST(QpStateTable, ValuesOutsideTheirEnumOrMaskAreInvalidParameters) {
  EXPECT_EQ(CheckQpTransition(static_cast<T>(0x7777), S::RESET, S::INIT, Attrs({})),
            Status::INVALID_PARAMETER);
  EXPECT_EQ(CheckQpTransition(T::RC, static_cast<S>(99), S::ERROR, Attrs({})),
            Status::INVALID_PARAMETER);
  EXPECT_EQ(CheckQpTransition(T::RC, S::RESET, S::ERROR, Attrs({}) | 0x80000000u),
            Status::INVALID_PARAMETER);
}

TEST(QpStateTable, TableIsConstexpr) {
  static_assert(FindQpTransition(T::RC, S::RESET, S::INIT)->legal);
  static_assert(!FindQpTransition(T::RC, S::RESET, S::RTS)->legal);
  static_assert(FindQpTransition(T::RC, S::RESET, S::INIT)->required & ToUnderlying(A::PORT));
  SUCCEED();
}

}  // namespace
}  // namespace softib::abi
