// libFuzzer target for the HCA ports' SMA and PMA (hca/device sma*.cc, pma.cc): the input
// is a series of MADs, each [port byte][up to 256 MAD bytes], handed to one two-port HCA
// through ProcessLocalMad, so Sets accumulate state (LIDs, states, M_Key, tables) across
// the series; every eighth MAD the clock advances and a cable is plugged or unplugged.
// Any crash or sanitizer report is a finding; so is a response that is not a GetResp of
// the request's class and TID, a kBad for a well-formed MAD on a good port, or a port
// left with a multicast LID or an impossible state.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hca/device/hca.h"

namespace {

using softib::hca::BackToBackCable;
using softib::hca::Hca;
using softib::hca::HcaConfig;
using softib::hca::LocalMadResult;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  HcaConfig config;
  config.num_ports = 2;
  Hca hca(config);
  BackToBackCable cable;
  hca.port(2).lid = 7;  // one preconfigured port, one for the SM
  hca.SetPortLink(1, &cable.end(0));
  hca.SetPortLink(2, &cable.end(1));
  uint64_t now = 0;
  for (unsigned n = 0; size > 0; ++n) {
    const uint8_t port = data[0] % 4;  // 0 and 3 do not exist
    ++data;
    --size;
    std::array<uint8_t, 256> request{};
    const std::size_t take = std::min<std::size_t>(size, request.size());
    std::memcpy(request.data(), data, take);
    data += take;
    size -= take;
    std::array<uint8_t, 256> response{};
    const LocalMadResult r = hca.ProcessLocalMad(port, request, response);
    const bool known_class = request[1] == 0x01 || request[1] == 0x81 || request[1] == 0x04;
    const bool good = port >= 1 && port <= 2 && request[0] == 1 && known_class;
    Check((r == LocalMadResult::kBad) == !good);
    if (r == LocalMadResult::kReply) {
      Check(response[0] == 1 && response[1] == request[1] && response[3] == 0x81);
      Check(std::equal(request.begin() + 8, request.begin() + 24, response.begin() + 8));
    }
    for (uint8_t p = 1; p <= 2; ++p) {
      Check(hca.port(p).lid < 0xC000);
      const uint8_t state = hca.port(p).LinkState();
      Check(state >= 1 && state <= 4);
    }
    if (n % 8 == 7) {
      now += 3'000'000'000ull;
      hca.SetNow(now);
      const uint8_t p = static_cast<uint8_t>(1 + (n / 8) % 2);
      hca.SetPortLink(p, hca.port(p).link == nullptr ? &cable.end(p - 1) : nullptr);
    }
  }
  return 0;
}
