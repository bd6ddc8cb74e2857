// SA requests built field by field for the SA's tests (each named field sets its
// ComponentMask bit), the records of an answer decoded, and the subnet's hosts.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string_view>
#include <vector>

#include "../src/sa_internal.h"
#include "softib/sm/sa.h"

namespace softib::sm::testing {

// The CA end ports of the subnet, in node order.
inline std::vector<EndPort> Hosts(const Subnet& s) {
  std::vector<EndPort> out;
  for (const EndPort& e : s.EndPorts())
    if (!s.node(e.node).is_switch()) out.push_back(e);
  return out;
}

inline uint16_t Lid(const Subnet& s, EndPort e) { return s.node(e.node).ports[e.port].lid; }

template <typename Record>
struct Query {
  Record record{};
  uint64_t mask = 0;
  std::array<uint8_t, kSaDataBytes> data{};

  Query& Set(std::string_view field, auto Record::*member, auto value) {
    record.*member = value;
    mask |= sa::ComponentBit(Record::Desc(), field);
    return *this;
  }
  SaRequest Request(uint8_t method, uint16_t requester = 0, double now = 0) {
    data.fill(0);
    record.Pack(std::span<uint8_t>(data).first(Record::kSize));
    SaRequest r;
    r.method = method;
    r.attribute = Record::kAttributeId;
    r.component_mask = mask;
    r.data = data;
    r.requester_lid = requester;
    r.now = now;
    return r;
  }
};

template <typename Record>
Record Decode(const std::vector<uint8_t>& bytes) {
  Record r;
  EXPECT_TRUE(r.Unpack(bytes));
  return r;
}

}  // namespace softib::sm::testing
