// InfiniBand packets built with the generated codecs (softib::wire, softib::mad
// value structs), each with the values tshark's InfiniBand dissector must show
// for it, named by tshark field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "softib/wire/wire.h"

namespace softib::interop {

struct Expect {
  enum class Kind { kNumber, kBytes, kIpv6, kText };
  std::string field;  // tshark field name
  Kind kind = Kind::kNumber;
  uint64_t number = 0;
  std::vector<uint8_t> bytes;  // kBytes, kIpv6
  std::string text;            // kText
  // Compared only when tshark prints the field (see MarkCrcsOptional).
  bool optional = false;
};

struct TestPacket {
  std::string name;
  std::vector<uint8_t> bytes;  // LRH through VCRC
  std::vector<Expect> expects;
};

class Expects {
 public:
  void Num(std::string field, uint64_t value);
  void Bytes(std::string field, const uint8_t* data, std::size_t size);
  template <std::size_t N>
  void Bytes(std::string field, const std::array<uint8_t, N>& data) {
    Bytes(std::move(field), data.data(), N);
  }
  void Ipv6(std::string field, const std::array<uint8_t, 16>& gid);
  void Text(std::string field, std::string text);
  std::vector<Expect>& list() { return list_; }

 private:
  std::vector<Expect> list_;
};

// LRH (+GRH) + `transport` (BTH onwards, without CRCs) + ICRC + VCRC, with
// LRH.PktLen and GRH.PayLen computed here; expectations for LRH, GRH, the
// CRCs and `more` are attached.
TestPacket Assemble(std::string name, wire::LRH lrh, std::optional<wire::GRH> grh,
                    const std::vector<uint8_t>& transport, Expects more);

// tshark 4.0 stops before the ICRC/VCRC of some MADs (SA MCMemberRecord and
// ServiceRecord responses, PerfMgt): their CRC values are compared when shown.
void MarkCrcsOptional(TestPacket& packet);

// Every packet the interop test sends through tshark.
std::vector<TestPacket> AllTestPackets();

}  // namespace softib::interop
