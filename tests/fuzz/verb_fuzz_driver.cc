#include "verb_fuzz_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "object_maker.h"
#include "softib/abi/runtime_ioctls.h"
#include "test_node.h"
#include "verb_env.h"

namespace softib::fuzz {
namespace {

using abi::ObjectType;
using abi::Status;
using conformance::CallResult;
using conformance::LoadLe;
using conformance::StoreLe;

// More live objects than this and the file is reopened (a fresh handle table).
constexpr size_t kMaxLiveObjects = 256;

// Reads the fuzz input front to back; zeros once it is exhausted.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t Int(uint32_t bytes) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < bytes && i < 8; ++i) v |= uint64_t{Byte()} << (8 * i);
    return v;
  }
  std::span<const uint8_t> Rest() { return {data_ + pos_, size_ - pos_}; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

[[noreturn]] void Finding(const VerbInfo& verb, const std::string& what) {
  std::fprintf(stderr, "verb fuzz finding: %s: %s\n", verb.name, what.c_str());
  std::abort();
}

uint32_t ObjectCount(const abi::ObjectCounts& c, ObjectType type) {
  switch (type) {
    case ObjectType::Al:
      return c.al;
    case ObjectType::Ca:
      return c.ca;
    case ObjectType::Pd:
      return c.pd;
    case ObjectType::Av:
      return c.av;
    case ObjectType::Cq:
      return c.cq;
    case ObjectType::Qp:
      return c.qp;
    case ObjectType::Srq:
      return c.srq;
    case ObjectType::Mr:
      return c.mr;
    case ObjectType::Mw:
      return c.mw;
    case ObjectType::Mcast:
      return c.mcast;
    case ObjectType::MadPool:
      return c.mad_pool;
    case ObjectType::MadSvc:
      return c.mad_svc;
    case ObjectType::Cep:
      return c.cep;
    case ObjectType::PnpReg:
      return c.pnp_reg;
    case ObjectType::SaReq:
      return c.sa_req;
    case ObjectType::SaReg:
      return c.sa_reg;
    case ObjectType::McastJoin:
      return c.mcast_join;
    default:
      return 0;
  }
}

constexpr ObjectType kTypes[] = {ObjectType::Al,    ObjectType::Ca,       ObjectType::Pd,
                                 ObjectType::Av,    ObjectType::Cq,       ObjectType::Qp,
                                 ObjectType::Srq,   ObjectType::Mr,       ObjectType::Mw,
                                 ObjectType::Mcast, ObjectType::MadPool,  ObjectType::MadSvc,
                                 ObjectType::Cep,   ObjectType::PnpReg,   ObjectType::SaReq,
                                 ObjectType::SaReg, ObjectType::McastJoin};

// The booted node, the fuzzed user file and the objects it holds.
class FuzzNode {
 public:
  FuzzNode() {
    std::string error;
    node_ = conformance::TestNode::Start(&error);
    if (node_ == nullptr) {
      std::fprintf(stderr, "verb fuzz: the node does not boot: %s\n", error.c_str());
      std::abort();
    }
    buffer_.assign(64 * 1024, 0);
    env_ = std::make_unique<conformance::UserFileEnv>(node_->node(), node_->ca_device(),
                                                      static_cast<int32_t>(getpid()));
    maker_ = std::make_unique<conformance::ObjectMaker>(*env_, node_->ca_guid(), buffer_);
    Refill();
  }

  // A fresh file with one object of each type the node can make.
  void Refill() {
    env_->Reopen();
    maker_->Clear();
    live_.clear();
    for (ObjectType type :
         {ObjectType::Al, ObjectType::Ca, ObjectType::Pd, ObjectType::Cq, ObjectType::Srq,
          ObjectType::Qp, ObjectType::Av, ObjectType::Mr, ObjectType::Mw, ObjectType::PnpReg}) {
      (void)maker_->Get(type);
    }
    maker_->set_ud_qps(true);
    const uint64_t ud = maker_->Make(ObjectType::Qp);
    maker_->set_ud_qps(false);
    if (ud != 0) maker_->Pin(ObjectType::Qp, ud);
    (void)maker_->Make(ObjectType::Mcast);
    // What exists is what the file's counts say, learnt by asking for each object again.
    for (ObjectType type : kTypes) {
      const uint64_t h = maker_->Get(type);
      if (h != 0) live_[type].push_back(h);
    }
    baseline_ = Counts();
    // Helper objects the maker made beyond the cached ones are counted in the baseline.
    for (ObjectType type : kTypes) {
      extra_[type] = ObjectCount(baseline_, type) - static_cast<uint32_t>(live_[type].size());
    }
  }

  abi::ObjectCounts Counts() {
    const VerbInfo* verb = FindVerbByName("QueryObjectCounts");
    abi::QueryObjectCountsIn in{};
    in.al.value = maker_->Get(ObjectType::Al);
    in.scope = abi::CountScope::FILE;
    const CallResult r =
        env_->Send(*verb, {reinterpret_cast<const uint8_t*>(&in), sizeof(in)}, verb->out_size);
    if (r.status != Status::SUCCESS) Finding(*verb, "QueryObjectCounts failed");
    abi::QueryObjectCountsOut out{};
    if (!r.output.empty())
      std::memcpy(&out, r.output.data(), std::min(sizeof(out), r.output.size()));
    return out.counts;
  }

  uint64_t Pick(ObjectType type, uint8_t choice) {
    const auto& v = live_[type];
    return v.empty() ? 0 : v[choice % v.size()];
  }

  void Run(const VerbInfo& verb, Reader& in);

 private:
  uint64_t FuzzHandle(const fuzz::FieldInfo& f, Reader& in);
  std::vector<uint8_t> Structured(const VerbInfo& verb, Reader& in, uint32_t* output_length);
  void Check(const VerbInfo& verb, const CallResult& r, uint32_t output_length);
  void Track(const VerbInfo& verb, std::span<const uint8_t> input, const CallResult& r);

  std::unique_ptr<conformance::TestNode> node_;
  std::vector<uint8_t> buffer_;
  std::unique_ptr<conformance::UserFileEnv> env_;
  std::unique_ptr<conformance::ObjectMaker> maker_;
  std::map<ObjectType, std::vector<uint64_t>> live_;
  std::map<ObjectType, uint32_t> extra_;
  abi::ObjectCounts baseline_{};
};

uint64_t FuzzNode::FuzzHandle(const fuzz::FieldInfo& f, Reader& in) {
  const uint8_t choice = in.Byte();
  switch (choice % 8) {
    case 0:
      return 0;
    case 1:
      return in.Int(8);  // garbage
    case 2:              // a live handle of another type
      return Pick(kTypes[in.Byte() % std::size(kTypes)], in.Byte());
    default:
      return Pick(f.object, choice / 8);
  }
}

std::vector<uint8_t> FuzzNode::Structured(const VerbInfo& verb, Reader& in,
                                          uint32_t* output_length) {
  uint32_t count = 0;
  if (verb.in_elem_size != 0) {
    count = in.Byte() % (std::min(verb.in_max, 4u) + 1);
    if (in.Byte() % 16 == 0) count = verb.in_max + 1;
  }
  const uint32_t elems = std::min(count, verb.in_max);
  std::vector<uint8_t> input(verb.in_size + elems * verb.in_elem_size, 0);
  for (uint32_t e = 0; e <= elems; ++e) {
    for (const fuzz::FieldInfo& f : verb.fields) {
      if (f.elem != (e < elems) || (!f.elem && e != elems)) continue;
      const uint32_t at = f.offset + (f.elem ? verb.in_size + e * verb.in_elem_size : 0);
      const uint8_t choice = in.Byte();
      switch (f.kind) {
        case fuzz::FieldKind::kEnum:
          StoreLe(input, at, f.size,
                  choice % 8 != 0 && !f.values.empty() ? f.values[in.Byte() % f.values.size()]
                                                       : in.Int(f.size));
          break;
        case fuzz::FieldKind::kFlags:
          StoreLe(input, at, f.size, in.Int(f.size) & (choice % 8 != 0 ? f.mask : ~0ull));
          break;
        case fuzz::FieldKind::kHandle:
          StoreLe(input, at, 8, FuzzHandle(f, in));
          break;
        case fuzz::FieldKind::kReserved:
          if (choice % 32 == 0) StoreLe(input, at, std::min(f.size, 8u), in.Int(f.size));
          break;
        case fuzz::FieldKind::kCount:
          StoreLe(input, at, f.size, choice % 16 == 0 ? in.Int(f.size) : count);
          break;
        case fuzz::FieldKind::kInt:
          for (uint32_t i = 0; i < f.size && at + i < input.size(); ++i) input[at + i] = in.Byte();
          break;
      }
    }
  }
  *output_length =
      verb.out_size + (in.Byte() % (std::min(verb.out_max, 8u) + 1)) * verb.out_elem_size;
  const uint8_t lengths = in.Byte();
  if (lengths % 16 == 0) {
    const int delta = static_cast<int>(in.Byte() % 17) - 8;
    input.resize(static_cast<size_t>(std::max<int>(0, static_cast<int>(input.size()) + delta)));
  } else if (lengths % 16 == 1 && verb.out_size != 0) {
    *output_length = in.Byte() % verb.out_size;
  }
  return input;
}

void FuzzNode::Check(const VerbInfo& verb, const CallResult& r, uint32_t output_length) {
  const bool listed =
      MayReturn(verb, r.status) || r.status == Status::INVALID_PARAMETER ||
      (r.status == Status::CANCELED && conformance::IsWait(verb)) ||
      (r.status == Status::UNSUPPORTED && conformance::ExemptionOfVerb(verb.ordinal) != nullptr);
  if (!listed) Finding(verb, std::string("status not in the IDL: ") + abi::ToString(r.status));
  if (r.information > output_length) {
    Finding(verb, "output length " + std::to_string(r.information) + " > buffer " +
                      std::to_string(output_length));
  }
}

void FuzzNode::Track(const VerbInfo& verb, std::span<const uint8_t> input, const CallResult& r) {
  if (r.status != Status::SUCCESS) return;
  if (verb.has_creates && r.output.size() >= verb.creates_offset + 8) {
    live_[verb.creates].push_back(LoadLe(r.output, verb.creates_offset, 8));
  }
  if (verb.has_destroys) {
    for (const fuzz::FieldInfo& f : verb.fields) {
      if (f.kind != fuzz::FieldKind::kHandle || f.access != fuzz::FieldAccess::kDestroy) continue;
      auto& v = live_[verb.destroys];
      v.erase(std::remove(v.begin(), v.end(), LoadLe(input, f.offset, 8)), v.end());
    }
  }
}

void FuzzNode::Run(const VerbInfo& verb, Reader& in) {
  uint32_t output_length = 0;
  std::vector<uint8_t> input;
  if (in.Byte() % 16 == 0) {  // raw bytes
    output_length = static_cast<uint32_t>(in.Int(2) % (2 * verb.out_size + 64));
    const auto rest = in.Rest();
    input.assign(rest.begin(), rest.begin() + std::min<size_t>(rest.size(), verb.in_size + 64));
  } else {
    input = Structured(verb, in, &output_length);
  }
  const CallResult r = env_->Send(&verb, verb.ioctl, input, output_length);
  Check(verb, r, output_length);
  Track(verb, input, r);

  const abi::ObjectCounts counts = Counts();
  size_t total = 0;
  for (ObjectType type : kTypes) {
    const uint32_t expected = static_cast<uint32_t>(live_[type].size()) + extra_[type];
    if (ObjectCount(counts, type) != expected) {
      Finding(verb, std::string("QueryObjectCounts: ") + abi::ToString(type) + " " +
                        std::to_string(ObjectCount(counts, type)) + ", expected " +
                        std::to_string(expected));
    }
    total += expected;
  }
  if (total > kMaxLiveObjects) Refill();
}

FuzzNode* g_node = nullptr;

// libFuzzer ends with exit(): shut the node down then, so that its threads stop and its
// run directory goes.
void ShutDown() {
  delete g_node;
  g_node = nullptr;
}

FuzzNode& Node() {
  if (g_node == nullptr) {
    g_node = new FuzzNode;
    std::atexit(&ShutDown);
  }
  return *g_node;
}

}  // namespace

int FuzzVerbs(const char* module, std::span<const uint32_t> ordinals, const uint8_t* data,
              size_t size) {
  if (ordinals.empty() || size == 0) return 0;
  Reader in(data, size);
  const VerbInfo* verb = FindVerb(ordinals[in.Byte() % ordinals.size()]);
  if (verb == nullptr || std::strcmp(verb->module, module) != 0) return 0;
  Node().Run(*verb, in);
  return 0;
}

}  // namespace softib::fuzz
