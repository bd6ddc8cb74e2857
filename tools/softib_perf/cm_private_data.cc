#include "cm_private_data.h"

#include <algorithm>
#include <cstring>

namespace softib::perf {

namespace {

enum Kind : uint8_t { kReq = 1, kRep = 2 };

void PutBe(uint8_t* p, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * (bytes - 1 - i)));
}
uint64_t GetBe(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

void PutHeader(uint8_t* p, Kind kind) {
  p[0] = 'S';
  p[1] = 'P';
  p[2] = kCmLayoutVersion;
  p[3] = kind;
}
bool CheckHeader(std::span<const uint8_t> data, size_t bytes, Kind kind, std::string* error) {
  if (data.size() < bytes || data[0] != 'S' || data[1] != 'P' || data[3] != kind) {
    *error =
        "the private data is not a softib_perf " + std::string(kind == kReq ? "plan" : "answer");
    return false;
  }
  if (data[2] != kCmLayoutVersion) {
    *error = "private data layout version " + std::to_string(data[2]) + ", this side speaks " +
             std::to_string(kCmLayoutVersion);
    return false;
  }
  return true;
}

}  // namespace

bool EncodeReqPrivateData(const TestPlan& plan, const PeerInfo& mine,
                          std::array<uint8_t, kReqPrivateDataBytes>* out, std::string* error) {
  for (uint32_t i = 1; i < plan.num_sizes; ++i) {
    if (plan.sizes[i] != plan.sizes[0] << i) {
      *error = "the sizes are not a doubling run (the REQ's plan cannot carry them)";
      return false;
    }
  }
  uint8_t* p = out->data();
  out->fill(0);
  PutHeader(p, kReq);
  p[4] = static_cast<uint8_t>(plan.test);
  p[5] = static_cast<uint8_t>(plan.transport);
  p[6] = static_cast<uint8_t>(plan.atomic_type);
  p[7] = plan.validate ? 1 : 0;
  PutBe(p + 8, plan.iterations, 4);
  PutBe(p + 12, plan.tx_depth, 2);
  PutBe(p + 14, plan.rx_depth, 2);
  PutBe(p + 16, plan.inline_size, 2);
  p[18] = static_cast<uint8_t>(plan.num_sizes);
  PutBe(p + 20, plan.sizes[0], 4);
  PutBe(p + 24, mine.rkey, 4);
  PutBe(p + 32, mine.vaddr, 8);
  PutBe(p + 40, mine.buffer_bytes, 8);
  return true;
}

bool DecodeReqPrivateData(std::span<const uint8_t> data, TestPlan* plan, PeerInfo* peer,
                          std::string* error) {
  if (!CheckHeader(data, kReqPrivateDataBytes, kReq, error)) return false;
  const uint8_t* p = data.data();
  *plan = TestPlan{};
  plan->magic = kPlanMagic;
  plan->test = p[4];
  plan->transport = p[5];
  plan->atomic_type = p[6];
  plan->validate = p[7] & 1;
  plan->iterations = static_cast<uint32_t>(GetBe(p + 8, 4));
  plan->tx_depth = static_cast<uint32_t>(GetBe(p + 12, 2));
  plan->rx_depth = static_cast<uint32_t>(GetBe(p + 14, 2));
  plan->inline_size = static_cast<uint32_t>(GetBe(p + 16, 2));
  plan->num_sizes = p[18];
  const uint64_t first = GetBe(p + 20, 4);
  if (plan->num_sizes < 1 || plan->num_sizes > 32 || first == 0 ||
      (first << (plan->num_sizes - 1)) > (1ull << 30)) {
    *error = "the plan's sizes are out of range";
    return false;
  }
  for (uint32_t i = 0; i < plan->num_sizes; ++i) {
    plan->sizes[i] = static_cast<uint32_t>(first << i);
  }
  *peer = PeerInfo{};
  peer->magic = kInfoMagic;
  peer->rkey = static_cast<uint32_t>(GetBe(p + 24, 4));
  peer->vaddr = GetBe(p + 32, 8);
  peer->buffer_bytes = GetBe(p + 40, 8);
  return true;
}

std::array<uint8_t, kRepPrivateDataBytes> EncodeRepPrivateData(const PeerInfo& mine) {
  std::array<uint8_t, kRepPrivateDataBytes> out{};
  PutHeader(out.data(), kRep);
  PutBe(out.data() + 8, mine.rkey, 4);
  PutBe(out.data() + 16, mine.vaddr, 8);
  PutBe(out.data() + 24, mine.buffer_bytes, 8);
  return out;
}

bool DecodeRepPrivateData(std::span<const uint8_t> data, PeerInfo* peer, std::string* error) {
  if (!CheckHeader(data, kRepPrivateDataBytes, kRep, error)) return false;
  const uint8_t* p = data.data();
  if (GetBe(p + 4, 4) != 0) {
    *error = "the server's answer has status " + std::to_string(GetBe(p + 4, 4));
    return false;
  }
  *peer = PeerInfo{};
  peer->magic = kInfoMagic;
  peer->rkey = static_cast<uint32_t>(GetBe(p + 8, 4));
  peer->vaddr = GetBe(p + 16, 8);
  peer->buffer_bytes = GetBe(p + 24, 8);
  return true;
}

std::array<uint8_t, kRejPrivateDataBytes> EncodeRejReason(const std::string& reason) {
  std::array<uint8_t, kRejPrivateDataBytes> out{};
  std::memcpy(out.data(), reason.data(), std::min(reason.size(), out.size() - 1));
  return out;
}

std::string DecodeRejReason(std::span<const uint8_t> data) {
  std::string text;
  for (uint8_t c : data) {
    if (c == 0) break;
    text.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '?');
  }
  return text;
}

}  // namespace softib::perf
