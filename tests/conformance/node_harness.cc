#include "node_harness.h"

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dispatch_support.h"
#include "softib/abi/verbs_cm.h"

namespace softib::conformance {

struct NodeHarness::Side {
  Side(std::unique_ptr<VerbEnv> e, uint64_t guid, std::span<uint8_t> buffer)
      : env(std::move(e)), maker(*env, guid, buffer) {}
  std::unique_ptr<VerbEnv> env;
  ObjectMaker maker;
  bool used = true;  // opened lazily by the first Reset
  void Fresh() {
    if (!used) return;
    env->Reopen();
    maker.Clear();
    used = false;
  }
  ObjectMaker& Use() {
    used = true;
    return maker;
  }
};

NodeHarness::NodeHarness(std::unique_ptr<TestNode> node)
    : node_(std::move(node)), buffer_(64 * 1024, 0) {
  const uint64_t guid = node_->ca_guid();
  const std::vector<uint64_t> guids = node_->stack()->ca_guids();
  if (guids.size() < 2) {
    std::fprintf(stderr, "conformance harness: the node has no second CA for the far end\n");
    std::abort();
  }
  sa_ = std::make_unique<SaResponder>(node_->node(), node_->client_device(), guids[1]);
  if (!sa_->Start(guid)) {
    std::fprintf(stderr, "conformance harness: the SA responder does not start\n");
    std::abort();
  }
  SetSettleHook([sa = sa_.get()] { sa->Settle(); });
  far_end_ = std::make_unique<FarEnd>(node_->node(), node_->client_device(), guids[1]);
  const std::string ca_socket = node_->SocketPath(node_->ca_device());
  user_ = std::make_unique<Side>(std::make_unique<ChannelEnv>(ca_socket, true, node_->node()), guid,
                                 buffer_);
  foreign_ = std::make_unique<Side>(std::make_unique<ChannelEnv>(ca_socket, true, node_->node()),
                                    guid, buffer_);
  direct_ = std::make_unique<Side>(
      std::make_unique<DirectEnv>(node_->node(), node_->client_device()), guid, buffer_);
  irp_ =
      std::make_unique<Side>(std::make_unique<KernelIrpEnv>(node_->node(), "ibal"), guid, buffer_);
  for (Side* side : {user_.get(), foreign_.get(), direct_.get(), irp_.get()}) {
    side->maker.set_far_end(far_end_.get());
  }
}

NodeHarness::~NodeHarness() {
  // Callers close before the node goes.
  irp_.reset();
  direct_.reset();
  foreign_.reset();
  user_.reset();
  far_end_.reset();
  SetSettleHook({});
  sa_.reset();
  node_.reset();
}

void NodeHarness::Reset() {
  for (Side* side : {user_.get(), foreign_.get(), direct_.get(), irp_.get()}) side->Fresh();
  far_end_->Close();  // its endpoints go too; the next CM exchange reopens it
}

NodeHarness::Side& NodeHarness::SideOf(CallPath path) {
  switch (path) {
    case CallPath::kProxy:
      return *user_;
    case CallPath::kDirect:
    case CallPath::kDirectAtDispatch:
      return *direct_;
    case CallPath::kIrpSync:
    case CallPath::kIrpAsync:
      return *irp_;
  }
  return *user_;
}

bool NodeHarness::PrepareOn(Side& side, const VerbInfo& verb, bool with_child,
                            abi::ObjectType child, std::vector<uint8_t>& input,
                            uint32_t& output_length) {
  ObjectMaker& maker = side.Use();
  if (!with_child) return maker.Prepare(verb, input, output_length);
  if (!verb.has_destroys) return false;
  maker.set_ud_qps(verb.destroys == abi::ObjectType::Qp &&
                   (child == abi::ObjectType::Mcast || child == abi::ObjectType::McastJoin));
  maker.set_alias_qps(verb.destroys == abi::ObjectType::Qp && child == abi::ObjectType::MadSvc);
  const bool ok = maker.Prepare(verb, input, output_length);
  maker.set_ud_qps(false);
  maker.set_alias_qps(false);
  if (!ok) return false;
  uint64_t target = 0;
  for (const fuzz::FieldInfo& f : verb.fields) {
    if (f.kind == fuzz::FieldKind::kHandle && f.access == fuzz::FieldAccess::kDestroy) {
      target = LoadLe(input, f.offset, 8);
    }
  }
  if (target == 0) return false;
  maker.Pin(verb.destroys, target);
  return maker.Make(child) != 0;
}

bool NodeHarness::Prepare(uint32_t ordinal, std::vector<uint8_t>& input, uint32_t& output_length) {
  last_verb_ = fuzz::FindVerb(ordinal);
  last_with_child_ = false;
  if (last_verb_ == nullptr) return false;
  const bool ok = PrepareOn(*user_, *last_verb_, false, {}, input, output_length);
  if (!ok) {
    std::fprintf(stderr, "harness: cannot prepare %s: %s answered %s\n", last_verb_->name,
                 user_->maker.last_failed_verb(), abi::ToString(user_->maker.last_failure()));
  }
  return ok;
}

bool NodeHarness::PrepareDestroyWithChild(uint32_t ordinal, abi::ObjectType child,
                                          std::vector<uint8_t>& input, uint32_t& output_length) {
  last_verb_ = fuzz::FindVerb(ordinal);
  last_with_child_ = true;
  last_child_ = child;
  if (last_verb_ == nullptr) return false;
  const bool ok = PrepareOn(*user_, *last_verb_, true, child, input, output_length);
  if (!ok) {
    std::fprintf(stderr, "harness: cannot prepare %s with a live %s: %s answered %s\n",
                 last_verb_->name, abi::ToString(child), user_->maker.last_failed_verb(),
                 abi::ToString(user_->maker.last_failure()));
  }
  return ok;
}

bool NodeHarness::Replay(Side& side, std::vector<uint8_t>& input, uint32_t& output_length) {
  side.used = true;
  side.Fresh();
  return PrepareOn(side, *last_verb_, last_with_child_, last_child_, input, output_length);
}

CallResult NodeHarness::Ioctl(uint32_t code, std::span<const uint8_t> input,
                              uint32_t output_length) {
  auto& channel = static_cast<ChannelEnv&>(*user_->env);
  user_->Use();
  channel.set_proxy(false);
  CallResult r = channel.Send(FindVerbByIoctl(code), code, input, output_length);
  channel.set_proxy(true);
  return r;
}

CallResult NodeHarness::Call(CallPath path, uint32_t ordinal, std::span<const uint8_t> input,
                             uint32_t output_length) {
  const VerbInfo* verb = fuzz::FindVerb(ordinal);
  CallResult r;
  if (verb == nullptr) {
    r.status = abi::Status::INVALID_PARAMETER;
    return r;
  }
  Side& side = SideOf(path);
  if (path == CallPath::kProxy) {
    side.Use();
    r = side.env->Send(*verb, input, output_length);
    MaskExchangeOutput(*verb, r);
    return r;
  }
  // A kernel caller names its own objects: the same request, prepared again on its side,
  // with the caller's bytes everywhere but in the handles.
  std::vector<uint8_t> request(input.begin(), input.end());
  if (last_verb_ == verb) {
    std::vector<uint8_t> own;
    uint32_t own_output_length = 0;
    if (!Replay(side, own, own_output_length)) {
      r.status = side.maker.last_failure();
      return r;
    }
    for (const fuzz::FieldInfo& f : verb->fields) {
      if (f.kind == fuzz::FieldKind::kHandle && !f.elem) {
        StoreLe(request, f.offset, 8, LoadLe(own, f.offset, 8));
      }
    }
  }
  if (path == CallPath::kDirectAtDispatch || path == CallPath::kDirect) {
    static_cast<DirectEnv&>(*side.env).set_at_dispatch(path == CallPath::kDirectAtDispatch);
  } else {
    static_cast<KernelIrpEnv&>(*side.env).set_async(path == CallPath::kIrpAsync);
  }
  side.Use();
  r = side.env->Send(*verb, request, output_length);
  // Preparing runs at PASSIVE level, whatever the last call's path.
  if (path == CallPath::kDirectAtDispatch)
    static_cast<DirectEnv&>(*side.env).set_at_dispatch(false);
  MaskExchangeOutput(*verb, r);
  return r;
}

// Output that differs between two valid calls because each path's request was prepared by
// its own CM exchange: the far end's QP number (a new QP each time) in the RTR attributes.
void NodeHarness::MaskExchangeOutput(const VerbInfo& verb, CallResult& r) {
  if (verb.name != std::string_view("CepGetRtrAttributes")) return;
  constexpr uint32_t kDestQpn = offsetof(abi::CepGetRtrAttributesOut, attributes) +
                                offsetof(abi::QpModifyAttributes, dest_qpn);
  for (uint32_t i = 0; i < sizeof(uint32_t) && kDestQpn + i < r.output.size(); ++i) {
    r.output[kDestQpn + i] = 0;
  }
}

uint64_t NodeHarness::MakeBadHandle(abi::ObjectType type, BadHandle kind) {
  ObjectMaker& maker = user_->Use();
  const uint64_t garbage = (uint64_t{static_cast<uint8_t>(type)} << 56) | (0xFFFFull << 40) |
                           (0xFFFFFull << 20) | 0xFFFFFull;
  switch (kind) {
    case BadHandle::kZero:
      return 0;
    case BadHandle::kWrongType:
      return maker.Get(type == abi::ObjectType::Al ? abi::ObjectType::Ca : abi::ObjectType::Al);
    case BadHandle::kStale: {
      const uint64_t h = maker.Get(type);
      if (h == 0) return garbage;
      const uint64_t generation = (h >> 20) & 0xFFFFF;
      const uint64_t older = generation > 1 ? generation - 1 : generation + 1;
      return (h & ~(0xFFFFFull << 20)) | (older << 20);
    }
    case BadHandle::kDestroyed: {
      if (type == abi::ObjectType::Al) {
        // A file's implicit Al goes with the file.
        ChannelEnv temporary(node_->SocketPath(node_->ca_device()), true, node_->node());
        ObjectMaker other(temporary, node_->ca_guid(), buffer_);
        return other.Get(abi::ObjectType::Al);  // `temporary` closes on return
      }
      const uint64_t h = maker.Make(type);
      if (h == 0 || !maker.Destroy(type, h)) return garbage;
      return h;
    }
    case BadHandle::kForeign: {
      const uint64_t h = foreign_->Use().Get(type);
      return h != 0 ? h : garbage;
    }
    case BadHandle::kGarbage:
      return garbage;
  }
  return garbage;
}

const std::string& NodeHarness::missing() const { return user_->maker.missing(); }

bool NodeHarness::CanCreate(abi::ObjectType type) {
  if (auto it = creatable_.find(type); it != creatable_.end()) return it->second;
  Reset();
  const bool ok = user_->Use().Make(type) != 0;
  Reset();
  creatable_[type] = ok;
  return ok;
}

namespace {

NodeHarness* g_harness = nullptr;

// Shuts the node down after the last test, before static destruction.
class HarnessTeardown : public ::testing::Environment {
 public:
  void TearDown() override {
    delete g_harness;
    g_harness = nullptr;
  }
};
const bool kTeardownRegistered = (::testing::AddGlobalTestEnvironment(new HarnessTeardown), true);

}  // namespace

const char* NotImplementedUntil(uint32_t ordinal) { return ExemptionOfVerb(ordinal); }

const char* IncompleteRequest() {
  auto& h = static_cast<NodeHarness&>(ConformanceHarness::Instance());
  return h.missing().empty() ? nullptr : h.missing().c_str();
}

// An exempted type the harness can make fails the suite: the exemption is stale.
const char* NotCreatableUntil(abi::ObjectType type) {
  const char* exemption = ExemptionOfObject(type);
  if (exemption == nullptr) return nullptr;
  auto& h = static_cast<NodeHarness&>(ConformanceHarness::Instance());
  if (!h.CanCreate(type)) return exemption;
  ADD_FAILURE() << "exemption \"" << exemption << "\" is stale: the harness makes a "
                << abi::ToString(type) << "; remove the exemption";
  return nullptr;
}

// Object exemptions cannot go stale either (a verb's is caught by its valid call,
// DispatchCases::Paths): every exempted type is one the harness cannot make.
TEST(ConformanceExemptions, NoExemptedObjectIsMade) {
  auto& h = static_cast<NodeHarness&>(ConformanceHarness::Instance());
  for (uint16_t t = 1; t < abi::kObjectTypeCount; ++t) {
    const auto type = static_cast<abi::ObjectType>(t);
    if (const char* exemption = ExemptionOfObject(type)) {
      EXPECT_FALSE(h.CanCreate(type)) << "exemption \"" << exemption << "\" is stale: the "
                                      << "harness makes a " << abi::ToString(type);
    }
  }
}

ConformanceHarness& ConformanceHarness::Instance() {
  if (g_harness == nullptr) {
    std::string error;
    auto node = TestNode::Start(&error);
    if (node == nullptr) {
      std::fprintf(stderr, "conformance harness: the node does not boot: %s\n", error.c_str());
      std::abort();
    }
    g_harness = new NodeHarness(std::move(node));
  }
  return *g_harness;
}

}  // namespace softib::conformance
