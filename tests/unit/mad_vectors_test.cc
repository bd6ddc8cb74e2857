// The generated MAD/header codecs against tests/data/mad_vectors.txt and
// tests/data/ipoib_vectors.txt: byte vectors written by hand from the IBTA tables and the
// IPoIB RFCs, independent of idl/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mad_vector_file.h"
#include "softib/codec/engine.h"
#include "softib/codec/format_desc.h"
#include "softib/mad/mad_cm.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_devmgt.h"
#include "softib/mad/mad_perf.h"
#include "softib/mad/mad_sa.h"
#include "softib/mad/mad_sm.h"
#include "softib/wire/ipoib.h"
#include "softib/wire/wire.h"

#ifndef SOFTIB_MAD_VECTORS_FILE
#error "SOFTIB_MAD_VECTORS_FILE must name tests/data/mad_vectors.txt"
#endif
#ifndef SOFTIB_IPOIB_VECTORS_FILE
#error "SOFTIB_IPOIB_VECTORS_FILE must name tests/data/ipoib_vectors.txt"
#endif

namespace softib {
namespace {

using codec::FieldKind;
using codec::FieldValue;
using testing::MadVector;

const std::vector<MadVector>& AllVectors() {
  static const std::vector<MadVector> vectors = [] {
    std::vector<MadVector> v;
    std::string error;
    // The MAD and IBA header vectors, then those of the IPoIB formats (idl/ipoib.idl).
    for (const char* path : {SOFTIB_MAD_VECTORS_FILE, SOFTIB_IPOIB_VECTORS_FILE}) {
      std::vector<MadVector> file;
      if (!testing::ReadMadVectors(path, &file, &error)) {
        ADD_FAILURE() << error;
        return std::vector<MadVector>{};
      }
      v.insert(v.end(), file.begin(), file.end());
    }
    return v;
  }();
  return vectors;
}

bool IsByteKind(FieldKind kind) {
  return kind == FieldKind::kGid || kind == FieldKind::kBytes || kind == FieldKind::kString;
}

std::optional<uint64_t> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const uint64_t v = std::strtoull(text.c_str(), &end, 0);
  if (*end != '\0') return std::nullopt;
  return v;
}

// Hex pairs without separators ("0a1b"), or nullopt.
std::optional<std::vector<uint8_t>> ParseHex(const std::string& text) {
  std::vector<uint8_t> out;
  if (text.size() % 2 != 0) return std::nullopt;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    if (!std::isxdigit(static_cast<unsigned char>(text[i])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 1])))
      return std::nullopt;
    out.push_back(static_cast<uint8_t>(std::stoul(text.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The expected bytes of a gid/bytes/string field: quoted text or hex, zero-padded.
// "HEAD..TAIL" (HEAD may be empty) puts TAIL at the end of the field and zeros
// between, so a long field can be checked at both ends.
std::optional<std::vector<uint8_t>> ExpectedBytes(const std::string& text, std::size_t width) {
  std::string unquoted;
  if (testing::Unquote(text, &unquoted)) {
    if (unquoted.size() > width) return std::nullopt;
    std::vector<uint8_t> out(unquoted.begin(), unquoted.end());
    out.resize(width, 0);
    return out;
  }
  const auto gap = text.find("..");
  auto head = ParseHex(text.substr(0, gap));
  if (!head) return std::nullopt;
  std::vector<uint8_t> tail;
  if (gap != std::string::npos) {
    auto parsed = ParseHex(text.substr(gap + 2));
    if (!parsed || parsed->empty()) return std::nullopt;
    tail = std::move(*parsed);
  }
  if (head->size() + tail.size() > width) return std::nullopt;
  head->resize(width - tail.size(), 0);
  head->insert(head->end(), tail.begin(), tail.end());
  return head;
}

std::string HexText(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string FieldNames(const std::vector<FieldValue>& values) {
  std::string names;
  for (const auto& v : values) {
    if (v.index == 0) names += " " + std::string(v.desc->name);
  }
  return names;
}

class MadVectorTest : public ::testing::TestWithParam<MadVector> {};

TEST_P(MadVectorTest, DecodesAndReencodes) {
  const MadVector& vec = GetParam();
  SCOPED_TRACE("vector " + vec.name + " (mad_vectors.txt:" + std::to_string(vec.line) + ")");
  const codec::FormatDesc* desc = codec::FindFormat(vec.layout);
  ASSERT_NE(desc, nullptr) << "no layout named " << vec.layout;
  EXPECT_EQ(desc->name, vec.layout) << "layout name differs in case";
  if (vec.size) {
    EXPECT_EQ(desc->size, *vec.size) << "layout size differs from the specification";
  }
  ASSERT_LE(vec.bytes.size(), desc->size) << "vector longer than the layout";
  std::vector<uint8_t> bytes = vec.bytes;
  bytes.resize(desc->size, 0);

  const std::vector<FieldValue> values = codec::DecodeFields(*desc, bytes);
  std::map<std::string, const FieldValue*> by_name;
  for (const auto& v : values) by_name[v.name] = &v;

  std::map<std::string, bool> listed;
  for (const auto& [name, text] : vec.expect) {
    listed[name] = true;
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      ADD_FAILURE() << "no field " << name << " in " << vec.layout
                    << "; it has:" << FieldNames(values);
      continue;
    }
    const FieldValue& v = *it->second;
    if (IsByteKind(v.desc->kind)) {
      const auto want = ExpectedBytes(text, v.desc->bit_width / 8);
      ASSERT_TRUE(want.has_value()) << "bad bytes value for " << name << ": " << text;
      EXPECT_EQ(v.bytes, *want) << name;
    } else {
      const auto want = ParseNumber(text);
      ASSERT_TRUE(want.has_value()) << "bad number for " << name << ": " << text;
      EXPECT_EQ(v.value, *want) << name << " decodes as 0x" << std::hex << v.value
                                << ", the specification puts 0x" << *want;
    }
  }
  if (!vec.complete) return;

  // Every field the vector leaves out must be zero: a field the IDL placed on
  // top of bits this vector sets would show up here.
  for (const auto& v : values) {
    if (listed.count(v.name)) continue;
    const bool zero = v.value == 0 &&
                      std::all_of(v.bytes.begin(), v.bytes.end(), [](uint8_t b) { return b == 0; });
    EXPECT_TRUE(zero) << v.name
                      << " (not in the vector) decodes as non-zero: " << codec::FormatFieldValue(v);
  }

  // Re-encode from the expected values alone onto zeroed bytes.
  std::vector<uint8_t> rebuilt(desc->size, 0);
  for (const auto& [name, text] : vec.expect) {
    std::string value = text;
    std::string unquoted;
    const auto it = by_name.find(name);
    if (testing::Unquote(text, &unquoted)) {
      value = unquoted;
    } else if (it != by_name.end() && IsByteKind(it->second->desc->kind)) {
      const auto want = ExpectedBytes(text, it->second->desc->bit_width / 8);
      if (want) value = HexText(*want);
    }
    const std::string error = codec::SetField(*desc, rebuilt, name, value);
    EXPECT_EQ(error, "") << "SetField(" << name << ", " << text << ")";
  }
  for (std::size_t i = 0; i < bytes.size(); ++i)
    EXPECT_EQ(rebuilt[i], bytes[i]) << "byte " << i << " after SetField from the expect list";
}

std::string VectorName(const ::testing::TestParamInfo<MadVector>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Spec, MadVectorTest, ::testing::ValuesIn(AllVectors()), VectorName);

// The same vectors through the generated value structs and views (not only the
// descriptor-driven engine): Unpack gives the expected members, Pack gives the
// bytes back.
template <typename T>
using Members = std::map<std::string, std::function<uint64_t(const T&)>>;

#define SOFTIB_MEMBER(name)                                            \
  {                                                                    \
#name, [](const auto& s) { return static_cast<uint64_t>(s.name); } \
  }

template <typename T>
void CheckTyped(const Members<T>& members) {
  int vectors = 0;
  for (const MadVector& vec : AllVectors()) {
    if (vec.layout != T::kName) continue;
    SCOPED_TRACE("vector " + vec.name);
    std::vector<uint8_t> bytes = vec.bytes;
    bytes.resize(T::kSize, 0);
    T value;
    EXPECT_FALSE(value.Unpack(std::span<const uint8_t>(bytes).first(T::kSize - 1)))
        << "Unpack must refuse a short buffer";
    ASSERT_TRUE(value.Unpack(bytes));
    for (const auto& [name, text] : vec.expect) {
      const auto it = members.find(name);
      if (it == members.end()) continue;
      EXPECT_EQ(it->second(value), ParseNumber(text).value_or(~0ull)) << name;
    }
    const auto packed = value.Pack();
    EXPECT_TRUE(std::equal(packed.begin(), packed.end(), bytes.begin())) << "Pack(Unpack(bytes))";
    ++vectors;
  }
  EXPECT_GT(vectors, 0) << "no vector for " << T::kName;
}

TEST(TypedCodecs, NodeInfo) {
  CheckTyped<mad::NodeInfo>(
      {SOFTIB_MEMBER(BaseVersion), SOFTIB_MEMBER(ClassVersion), SOFTIB_MEMBER(NodeType),
       SOFTIB_MEMBER(NumPorts), SOFTIB_MEMBER(SystemImageGUID), SOFTIB_MEMBER(NodeGUID),
       SOFTIB_MEMBER(PortGUID), SOFTIB_MEMBER(PartitionCap), SOFTIB_MEMBER(DeviceID),
       SOFTIB_MEMBER(Revision), SOFTIB_MEMBER(LocalPortNum), SOFTIB_MEMBER(VendorID)});
}

TEST(TypedCodecs, PortInfo) {
  CheckTyped<mad::PortInfo>({SOFTIB_MEMBER(LID),
                             SOFTIB_MEMBER(CapabilityMask),
                             SOFTIB_MEMBER(LinkWidthEnabled),
                             SOFTIB_MEMBER(LinkWidthSupported),
                             SOFTIB_MEMBER(LinkWidthActive),
                             SOFTIB_MEMBER(LinkSpeedSupported),
                             SOFTIB_MEMBER(PortState),
                             SOFTIB_MEMBER(PortPhysicalState),
                             SOFTIB_MEMBER(LinkDownDefaultState),
                             SOFTIB_MEMBER(M_KeyProtectBits),
                             SOFTIB_MEMBER(LMC),
                             SOFTIB_MEMBER(LinkSpeedActive),
                             SOFTIB_MEMBER(LinkSpeedEnabled),
                             SOFTIB_MEMBER(NeighborMTU),
                             SOFTIB_MEMBER(MasterSMSL),
                             SOFTIB_MEMBER(VLCap),
                             SOFTIB_MEMBER(InitType),
                             SOFTIB_MEMBER(InitTypeReply),
                             SOFTIB_MEMBER(MTUCap),
                             SOFTIB_MEMBER(VLStallCount),
                             SOFTIB_MEMBER(HOQLife),
                             SOFTIB_MEMBER(OperationalVLs),
                             SOFTIB_MEMBER(PartitionEnforcementInbound),
                             SOFTIB_MEMBER(PartitionEnforcementOutbound),
                             SOFTIB_MEMBER(FilterRawInbound),
                             SOFTIB_MEMBER(FilterRawOutbound),
                             SOFTIB_MEMBER(ClientReregister),
                             SOFTIB_MEMBER(MulticastPKeyTrapSuppressionEnabled),
                             SOFTIB_MEMBER(SubnetTimeOut),
                             SOFTIB_MEMBER(RespTimeValue),
                             SOFTIB_MEMBER(LocalPhyErrors),
                             SOFTIB_MEMBER(OverrunErrors),
                             SOFTIB_MEMBER(LinkRoundTripLatency),
                             SOFTIB_MEMBER(LinkSpeedExtActive),
                             SOFTIB_MEMBER(LinkSpeedExtSupported),
                             SOFTIB_MEMBER(LinkSpeedExtEnabled)});
}

TEST(TypedCodecs, PortInfoView) {
  for (const MadVector& vec : AllVectors()) {
    if (vec.name != "PortInfo_mixed_bits") continue;
    std::vector<uint8_t> bytes = vec.bytes;
    bytes.resize(mad::PortInfo::kSize, 0);
    mad::PortInfoView view(bytes);
    EXPECT_EQ(view.M_KeyProtectBits(), 2);
    EXPECT_EQ(view.LMC(), 5);
    EXPECT_EQ(view.HOQLife(), 10);
    EXPECT_EQ(view.FilterRawOutbound(), 1);
    view.set_LMC(7);
    EXPECT_EQ(bytes[34], 0x87) << "set_LMC keeps M_KeyProtectBits";
    view.set_SubnetTimeOut(0);
    view.set_ClientReregister(1);
    EXPECT_EQ(bytes[51], 0x80);
    return;
  }
  FAIL() << "vector PortInfo_mixed_bits missing";
}

TEST(TypedCodecs, SwitchInfo) {
  CheckTyped<mad::SwitchInfo>(
      {SOFTIB_MEMBER(LinearFDBCap), SOFTIB_MEMBER(LifeTimeValue), SOFTIB_MEMBER(PortStateChange),
       SOFTIB_MEMBER(OptimizedSLtoVLMappingProgramming), SOFTIB_MEMBER(InboundEnforcementCap),
       SOFTIB_MEMBER(OutboundEnforcementCap), SOFTIB_MEMBER(FilterRawInboundCap),
       SOFTIB_MEMBER(FilterRawOutboundCap), SOFTIB_MEMBER(EnhancedPort0),
       SOFTIB_MEMBER(MulticastFDBTop)});
}

TEST(TypedCodecs, PathRecord) {
  CheckTyped<mad::PathRecord>(
      {SOFTIB_MEMBER(DLID), SOFTIB_MEMBER(SLID), SOFTIB_MEMBER(RawTraffic),
       SOFTIB_MEMBER(FlowLabel), SOFTIB_MEMBER(HopLimit), SOFTIB_MEMBER(TClass),
       SOFTIB_MEMBER(Reversible), SOFTIB_MEMBER(NumbPath), SOFTIB_MEMBER(P_Key),
       SOFTIB_MEMBER(QoSClass), SOFTIB_MEMBER(SL), SOFTIB_MEMBER(MTUSelector), SOFTIB_MEMBER(MTU),
       SOFTIB_MEMBER(RateSelector), SOFTIB_MEMBER(Rate), SOFTIB_MEMBER(PacketLifeTimeSelector),
       SOFTIB_MEMBER(PacketLifeTime), SOFTIB_MEMBER(Preference)});
}

TEST(TypedCodecs, PortCounters) {
  CheckTyped<mad::PortCounters>(
      {SOFTIB_MEMBER(PortSelect), SOFTIB_MEMBER(CounterSelect), SOFTIB_MEMBER(SymbolErrorCounter),
       SOFTIB_MEMBER(LocalLinkIntegrityErrors), SOFTIB_MEMBER(ExcessiveBufferOverrunErrors),
       SOFTIB_MEMBER(VL15Dropped), SOFTIB_MEMBER(PortRcvPkts)});
}

TEST(TypedCodecs, ConnectRequest) {
  CheckTyped<mad::ConnectRequest>({SOFTIB_MEMBER(LocalCommunicationID),
                                   SOFTIB_MEMBER(ServiceID),
                                   SOFTIB_MEMBER(LocalQPN),
                                   SOFTIB_MEMBER(ResponderResources),
                                   SOFTIB_MEMBER(RemoteCMResponseTimeout),
                                   SOFTIB_MEMBER(TransportServiceType),
                                   SOFTIB_MEMBER(EndToEndFlowControl),
                                   SOFTIB_MEMBER(StartingPSN),
                                   SOFTIB_MEMBER(LocalCMResponseTimeout),
                                   SOFTIB_MEMBER(RetryCount),
                                   SOFTIB_MEMBER(PathPacketPayloadMTU),
                                   SOFTIB_MEMBER(RDCExists),
                                   SOFTIB_MEMBER(RNRRetryCount),
                                   SOFTIB_MEMBER(MaxCMRetries),
                                   SOFTIB_MEMBER(SRQ),
                                   SOFTIB_MEMBER(ExtendedTransportType),
                                   SOFTIB_MEMBER(PrimaryFlowLabel),
                                   SOFTIB_MEMBER(PrimaryPacketRate),
                                   SOFTIB_MEMBER(PrimarySL),
                                   SOFTIB_MEMBER(PrimarySubnetLocal),
                                   SOFTIB_MEMBER(PrimaryLocalACKTimeout),
                                   SOFTIB_MEMBER(AlternateFlowLabel),
                                   SOFTIB_MEMBER(AlternatePacketRate),
                                   SOFTIB_MEMBER(AlternateLocalACKTimeout),
                                   SOFTIB_MEMBER(SAPSupported)});
}

TEST(TypedCodecs, ConnectReply) {
  CheckTyped<mad::ConnectReply>({SOFTIB_MEMBER(LocalQPN), SOFTIB_MEMBER(LocalEEContextNumber),
                                 SOFTIB_MEMBER(StartingPSN), SOFTIB_MEMBER(TargetACKDelay),
                                 SOFTIB_MEMBER(FailoverAccepted),
                                 SOFTIB_MEMBER(EndToEndFlowControl), SOFTIB_MEMBER(RNRRetryCount),
                                 SOFTIB_MEMBER(SRQ), SOFTIB_MEMBER(LocalCAGUID)});
}

TEST(TypedCodecs, WireHeaders) {
  CheckTyped<wire::LRH>({SOFTIB_MEMBER(VL), SOFTIB_MEMBER(LVer), SOFTIB_MEMBER(SL),
                         SOFTIB_MEMBER(LNH), SOFTIB_MEMBER(DLID), SOFTIB_MEMBER(PktLen),
                         SOFTIB_MEMBER(SLID)});
  CheckTyped<wire::BTH>({SOFTIB_MEMBER(OpCode), SOFTIB_MEMBER(SE), SOFTIB_MEMBER(M),
                         SOFTIB_MEMBER(PadCnt), SOFTIB_MEMBER(TVer), SOFTIB_MEMBER(P_Key),
                         SOFTIB_MEMBER(DestQP), SOFTIB_MEMBER(A), SOFTIB_MEMBER(PSN)});
  CheckTyped<wire::GRH>({SOFTIB_MEMBER(IPVer), SOFTIB_MEMBER(TClass), SOFTIB_MEMBER(FlowLabel),
                         SOFTIB_MEMBER(PayLen), SOFTIB_MEMBER(NxtHdr), SOFTIB_MEMBER(HopLmt)});
  CheckTyped<wire::DETH>({SOFTIB_MEMBER(Q_Key), SOFTIB_MEMBER(SrcQP)});
  CheckTyped<wire::RETH>({SOFTIB_MEMBER(VA), SOFTIB_MEMBER(R_Key), SOFTIB_MEMBER(DMALen)});
  CheckTyped<wire::AETH>({SOFTIB_MEMBER(Syndrome), SOFTIB_MEMBER(MSN)});
  CheckTyped<wire::AtomicETH>({SOFTIB_MEMBER(VA), SOFTIB_MEMBER(R_Key), SOFTIB_MEMBER(SwapAddData),
                               SOFTIB_MEMBER(CompareData)});
}

TEST(TypedCodecs, ClassPortInfoNoticeInformInfo) {
  CheckTyped<mad::ClassPortInfo>(
      {SOFTIB_MEMBER(CapabilityMask), SOFTIB_MEMBER(CapabilityMask2), SOFTIB_MEMBER(RespTimeValue),
       SOFTIB_MEMBER(RedirectTC), SOFTIB_MEMBER(RedirectSL), SOFTIB_MEMBER(RedirectFL),
       SOFTIB_MEMBER(RedirectQP), SOFTIB_MEMBER(TrapSL), SOFTIB_MEMBER(TrapFL),
       SOFTIB_MEMBER(TrapHL), SOFTIB_MEMBER(TrapQP), SOFTIB_MEMBER(TrapQ_Key)});
  CheckTyped<mad::Notice>({SOFTIB_MEMBER(IsGeneric), SOFTIB_MEMBER(Type),
                           SOFTIB_MEMBER(ProducerTypeVendorID), SOFTIB_MEMBER(TrapNumberDeviceID),
                           SOFTIB_MEMBER(IssuerLID), SOFTIB_MEMBER(NoticeToggle),
                           SOFTIB_MEMBER(NoticeCount)});
  CheckTyped<mad::SmpNotice>(
      {SOFTIB_MEMBER(IsGeneric), SOFTIB_MEMBER(Type), SOFTIB_MEMBER(ProducerTypeVendorID),
       SOFTIB_MEMBER(TrapNumberDeviceID), SOFTIB_MEMBER(NoticeToggle), SOFTIB_MEMBER(NoticeCount)});
  CheckTyped<mad::InformInfo>({SOFTIB_MEMBER(LIDRangeBegin), SOFTIB_MEMBER(IsGeneric),
                               SOFTIB_MEMBER(Type), SOFTIB_MEMBER(TrapNumberDeviceID),
                               SOFTIB_MEMBER(QPN), SOFTIB_MEMBER(RespTimeValue),
                               SOFTIB_MEMBER(ProducerTypeVendorID)});
}

TEST(TypedCodecs, TrapDetails) {
  CheckTyped<mad::Trap144Details>(
      {SOFTIB_MEMBER(LIDADDR), SOFTIB_MEMBER(OtherLocalChanges), SOFTIB_MEMBER(CAPABILITYMASK),
       SOFTIB_MEMBER(CapabilityMask2Change), SOFTIB_MEMBER(HierarchyInfoChange),
       SOFTIB_MEMBER(SMPriorityChange), SOFTIB_MEMBER(LinkSpeedEnabledChange),
       SOFTIB_MEMBER(LinkWidthEnabledChange), SOFTIB_MEMBER(NodeDescriptionChange),
       SOFTIB_MEMBER(CapabilityMask2)});
  CheckTyped<mad::Trap256Details>({SOFTIB_MEMBER(LIDADDR), SOFTIB_MEMBER(Method),
                                   SOFTIB_MEMBER(AttributeModifier), SOFTIB_MEMBER(M_Key),
                                   SOFTIB_MEMBER(DRNotice), SOFTIB_MEMBER(DRPathTruncated),
                                   SOFTIB_MEMBER(DRHopCount)});
  CheckTyped<mad::Trap257_258Details>(
      {SOFTIB_MEMBER(KEY), SOFTIB_MEMBER(SL), SOFTIB_MEMBER(QP1), SOFTIB_MEMBER(QP2)});
  CheckTyped<mad::Trap259Details>({SOFTIB_MEMBER(DataValid), SOFTIB_MEMBER(PKEY), SOFTIB_MEMBER(SL),
                                   SOFTIB_MEMBER(QP1), SOFTIB_MEMBER(QP2), SOFTIB_MEMBER(SWLIDADDR),
                                   SOFTIB_MEMBER(PortNo)});
}

TEST(TypedCodecs, SaRecords) {
  CheckTyped<mad::MulticastForwardingTableRecord>(
      {SOFTIB_MEMBER(LID), SOFTIB_MEMBER(Position), SOFTIB_MEMBER(BlockNum)});
  CheckTyped<mad::MultiPathRecord>(
      {SOFTIB_MEMBER(RawTraffic), SOFTIB_MEMBER(FlowLabel), SOFTIB_MEMBER(HopLimit),
       SOFTIB_MEMBER(Reversible), SOFTIB_MEMBER(NumbPath), SOFTIB_MEMBER(QoSClass),
       SOFTIB_MEMBER(SL), SOFTIB_MEMBER(MTUSelector), SOFTIB_MEMBER(MTU),
       SOFTIB_MEMBER(IndependenceSelector), SOFTIB_MEMBER(GIDScope), SOFTIB_MEMBER(SGIDCount),
       SOFTIB_MEMBER(DGIDCount), SOFTIB_MEMBER(ServiceID56LSB)});
  CheckTyped<mad::SMInfoRecord>({SOFTIB_MEMBER(LID), SOFTIB_MEMBER(ActCount),
                                 SOFTIB_MEMBER(Priority), SOFTIB_MEMBER(SMState)});
  CheckTyped<mad::InformInfoRecord>({SOFTIB_MEMBER(Enum), SOFTIB_MEMBER(QPN),
                                     SOFTIB_MEMBER(RespTimeValue),
                                     SOFTIB_MEMBER(ProducerTypeVendorID)});
}

TEST(TypedCodecs, PerfAndDevMgt) {
  CheckTyped<mad::PortSamplesControl>({SOFTIB_MEMBER(OpCode), SOFTIB_MEMBER(CounterWidth),
                                       SOFTIB_MEMBER(CounterMask0), SOFTIB_MEMBER(CounterMasks1to9),
                                       SOFTIB_MEMBER(CounterMasks10to14),
                                       SOFTIB_MEMBER(SampleStatus), SOFTIB_MEMBER(OptionMask),
                                       SOFTIB_MEMBER(Tag), SOFTIB_MEMBER(SamplesOnlyOptionMask)});
  CheckTyped<mad::PortCountersExtended>({SOFTIB_MEMBER(CounterSelect2), SOFTIB_MEMBER(PortXmitData),
                                         SOFTIB_MEMBER(SymbolErrorCounter),
                                         SOFTIB_MEMBER(QP1Dropped)});
  CheckTyped<mad::IOUnitInfo>({SOFTIB_MEMBER(ChangeID), SOFTIB_MEMBER(MaxControllers),
                               SOFTIB_MEMBER(DiagDeviceID), SOFTIB_MEMBER(OptionROM)});
  CheckTyped<mad::IOControllerProfile>(
      {SOFTIB_MEMBER(GUID), SOFTIB_MEMBER(VendorID), SOFTIB_MEMBER(DeviceID),
       SOFTIB_MEMBER(IOClass), SOFTIB_MEMBER(IOSubclass), SOFTIB_MEMBER(RDMAReadQueueDepth),
       SOFTIB_MEMBER(ServiceEntries)});
}

TEST(TypedCodecs, CmMessages) {
  CheckTyped<mad::MsgRcptAck>({SOFTIB_MEMBER(LocalCommunicationID), SOFTIB_MEMBER(MessageMRAed),
                               SOFTIB_MEMBER(ServiceTimeout)});
  CheckTyped<mad::ConnectReject>(
      {SOFTIB_MEMBER(MessageRejected), SOFTIB_MEMBER(RejectedInfoLength), SOFTIB_MEMBER(Reason)});
  CheckTyped<mad::DisconnectRequest>({SOFTIB_MEMBER(RemoteQPNEECN)});
  CheckTyped<mad::ReadyToUse>({SOFTIB_MEMBER(LocalCommunicationID)});
  CheckTyped<mad::DisconnectReply>({SOFTIB_MEMBER(RemoteCommunicationID)});
  CheckTyped<wire::RDETH>({SOFTIB_MEMBER(EECnxt)});
}

TEST(TypedCodecs, IpoibFormats) {
  CheckTyped<wire::IpoibEncapHeader>({SOFTIB_MEMBER(Type)});
  CheckTyped<wire::IpoibHwAddr>({SOFTIB_MEMBER(C), SOFTIB_MEMBER(QPN)});
  CheckTyped<wire::IpoibArp>({SOFTIB_MEMBER(HardwareType), SOFTIB_MEMBER(ProtocolType),
                              SOFTIB_MEMBER(HardwareLength), SOFTIB_MEMBER(Operation),
                              SOFTIB_MEMBER(SenderProtocolAddress),
                              SOFTIB_MEMBER(TargetProtocolAddress)});
  CheckTyped<wire::IpoibNdLinkLayerOption>({SOFTIB_MEMBER(Type), SOFTIB_MEMBER(Length)});
  CheckTyped<wire::IpoibCmPrivateData>({SOFTIB_MEMBER(QPN), SOFTIB_MEMBER(ReceiveMTU)});
  CheckTyped<wire::EthernetHeader>({SOFTIB_MEMBER(EtherType)});
  CheckTyped<wire::EthernetArp>({SOFTIB_MEMBER(Operation), SOFTIB_MEMBER(SenderProtocolAddress)});
}

// Every layout the codec registry knows (the generated list, so a layout added
// to idl/ shows up here by itself) needs a hand-written vector that is
// `complete` (the bytes are rebuilt from the spec's values alone) and one that
// states the layout's size as the specification gives it.
TEST(MadVectorFile, EveryLayoutHasACompleteVectorAndItsSize) {
  std::set<std::string> complete;
  std::set<std::string> sized;
  for (const auto& v : AllVectors()) {
    if (v.complete) complete.insert(v.layout);
    if (v.size) sized.insert(v.layout);
  }
  const auto formats = codec::AllFormats();
  ASSERT_GT(formats.size(), 0u) << "the codec registry is empty";
  std::string no_vector;
  std::string no_size;
  int missing = 0;
  for (const codec::FormatDesc* desc : formats) {
    const std::string name(desc->name);
    if (!complete.count(name)) {
      no_vector += "\n  " + name;
      ++missing;
    }
    if (!sized.count(name)) no_size += " " + name;
  }
  EXPECT_TRUE(no_vector.empty()) << missing << " of " << formats.size()
                                 << " layouts have no complete vector in mad_vectors.txt:"
                                 << no_vector;
  EXPECT_TRUE(no_size.empty()) << "no vector states the size of:" << no_size;
}

// A field that is zero in every vector is not tested by them: placed anywhere
// over zero bytes, it would decode the same. So every named (non-reserved) field
// of every layout must be non-zero in at least one complete vector. A field
// whose position no independent source confirms may be exempted here, with the
// reason; the exemption fails as soon as a vector covers the field.
const std::map<std::string, std::string>& UncoveredFieldExemptions() {
  static const std::map<std::string, std::string> exemptions = {
      {"PathRecord.ReversePathPKeyMemberBit",
       "release 1.3 addition; none of libibmad, OpenSM, Intel IbAccess, python-rdma or "
       "Wireshark places it, so no vector can be written for it independently of idl/"},
  };
  return exemptions;
}

TEST(MadVectorFile, EveryFieldIsNonZeroInSomeCompleteVector) {
  std::map<std::string, std::set<std::string>> nonzero;  // layout -> fields
  for (const auto& v : AllVectors()) {
    const codec::FormatDesc* desc = codec::FindFormat(v.layout);
    if (!v.complete || desc == nullptr || v.bytes.size() > desc->size) continue;
    std::vector<uint8_t> bytes = v.bytes;
    bytes.resize(desc->size, 0);
    for (const auto& f : codec::DecodeFields(*desc, bytes)) {
      const bool zero = f.value == 0 && std::all_of(f.bytes.begin(), f.bytes.end(),
                                                    [](uint8_t b) { return b == 0; });
      if (!zero) nonzero[v.layout].insert(std::string(f.desc->name));
    }
  }
  std::string never;
  for (const codec::FormatDesc* desc : codec::AllFormats()) {
    const std::string layout(desc->name);
    for (const auto& field : desc->fields) {
      if (field.reserved) continue;
      const std::string name = layout + "." + std::string(field.name);
      const bool covered = nonzero[layout].count(std::string(field.name)) > 0;
      const bool exempt = UncoveredFieldExemptions().count(name) > 0;
      if (!covered && !exempt) never += "\n  " + name;
      EXPECT_FALSE(covered && exempt) << name << " is covered now: drop its exemption";
    }
  }
  EXPECT_TRUE(never.empty()) << "fields that no complete vector sets:" << never;
}

TEST(MadVectorFile, PortInfoHasSeveralVectors) {
  int count = 0;
  for (const auto& v : AllVectors()) count += v.layout == "PortInfo";
  EXPECT_GE(count, 3) << "PortInfo's sub-byte fields need several vectors";
}

TEST(MadVectorFile, NamesAreUnique) {
  std::map<std::string, int> seen;
  for (const auto& v : AllVectors()) EXPECT_EQ(++seen[v.name], 1) << v.name;
}

}  // namespace
}  // namespace softib
