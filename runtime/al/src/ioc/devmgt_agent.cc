#include "runtime/al/src/ioc/devmgt_agent.h"

#include <array>
#include <cstring>

#include "runtime/al/src/gsi_agent.h"
#include "runtime/al/src/mad_format.h"

namespace softib::al {

namespace {

constexpr uint8_t kClassDevMgt = 0x06;
constexpr std::size_t kDevMgtData = 64;  // common header 24 + reserved 40 (IBA 16.3.1)

void Answer(GsiAgent& agent, std::span<const uint8_t> request, const MadOrigin& origin) {
  if (request.size() != mad::kMadSize || mad::IsResponse(request.data())) return;
  std::array<uint8_t, mad::kMadSize> response{};
  std::memcpy(response.data(), request.data(), 24);  // the common header, TID included
  response[3] = mad::kMethodGetResp;
  uint16_t status = 0;
  const uint8_t method = mad::Method(request.data());
  const uint16_t attribute = mad::AttributeId(request.data());
  const uint32_t modifier =
      static_cast<uint32_t>(request[20]) << 24 | request[21] << 16 | request[22] << 8 | request[23];
  if (method == mad::kMethodGet) {
    status = agent.ca()->io_unit.Get(attribute, modifier,
                                     std::span<uint8_t>(response.data() + kDevMgtData, 192));
  } else {
    status = ioc::kStatusUnsupportedAttribute;  // a Set of a read-only attribute
  }
  response[4] = static_cast<uint8_t>(status >> 8);
  response[5] = static_cast<uint8_t>(status);
  (void)agent.Send(ReturnAddress(origin), response, {}, {});
}

}  // namespace

std::unique_ptr<GsiRegistration> StartDevMgtAgent(AccessLayer* al) {
  GsiAgentSpec spec;
  spec.mgmt_class = kClassDevMgt;
  spec.mgmt_version = 1;
  spec.methods = {mad::kMethodGet, mad::kMethodSet};
  spec.on_receive = [](GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin) {
    Answer(agent, mad, origin);
  };
  return GsiRegistration::Register(al, std::move(spec));
}

}  // namespace softib::al
