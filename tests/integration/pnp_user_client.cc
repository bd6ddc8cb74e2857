// softib_pnp_user_client RUN_DIR SECONDS: a user process registered for PORT class PnP events
// on its node; one line per event, flushed, until SECONDS passed or stdin closes:
//   <EVENT> port=<n> state=<link state> lid=<LID> sm_lid=<SM LID> gid=<GID 0>
// (the port's attributes the event carries; GID 0 is the subnet prefix and the port GUID,
// as fe80:0000:0000:0000:0002:c903:00a0:0021). REG_COMPLETE ends the present state. Exit 0.
#include <endian.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "softib/user/access_layer.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_al_proxy.h"

namespace {

using namespace softib;

const char* Name(abi::PnpEvent e) {
  switch (e) {
    case abi::PnpEvent::PORT_ADD:
      return "PORT_ADD";
    case abi::PnpEvent::PORT_REMOVE:
      return "PORT_REMOVE";
    case abi::PnpEvent::PORT_ACTIVE:
      return "PORT_ACTIVE";
    case abi::PnpEvent::PORT_DOWN:
      return "PORT_DOWN";
    case abi::PnpEvent::LID_CHANGE:
      return "LID_CHANGE";
    case abi::PnpEvent::PKEY_CHANGE:
      return "PKEY_CHANGE";
    case abi::PnpEvent::SM_CHANGE:
      return "SM_CHANGE";
    case abi::PnpEvent::GID_CHANGE:
      return "GID_CHANGE";
    case abi::PnpEvent::REG_COMPLETE:
      return "REG_COMPLETE";
    default:
      return "OTHER";
  }
}

// GID 0 of the port in the record: its subnet prefix and port GUID, both network order.
std::string Gid0(const abi::PortAttributes& port) {
  const uint64_t halves[2] = {be64toh(port.subnet_prefix), be64toh(port.port_guid)};
  std::string text;
  for (uint64_t half : halves) {
    for (int shift = 48; shift >= 0; shift -= 16) {
      char group[8];
      std::snprintf(group, sizeof group, "%04x", static_cast<unsigned>(half >> shift & 0xFFFF));
      if (!text.empty()) text += ':';
      text += group;
    }
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: softib_pnp_user_client RUN_DIR SECONDS\n");
    return 2;
  }
  user::AlFile al;
  if (user::OpenAl(argv[1], &al) != user::Status::SUCCESS) {
    std::printf("FAILED OpenAl\n");
    return 1;
  }
  abi::RegisterPnpOut reg{};
  if (user::proxy::RegisterPnp(al.device, {al.al, abi::PnpClass::PORT, {}, 7}, reg) !=
      user::Status::SUCCESS) {
    std::printf("FAILED RegisterPnp\n");
    return 1;
  }
  std::thread pump([&] {
    for (;;) {
      abi::GetPnpEventOut out{};
      if (user::proxy::GetPnpEvent(al.device, {reg.reg}, out) != user::Status::SUCCESS) return;
      const abi::PnpEventRecord& r = out.record;
      std::printf("%s port=%u state=%u lid=%u sm_lid=%u gid=%s\n", Name(r.event), r.port_num,
                  r.port.link_state, r.port.lid, r.port.sm_lid, Gid0(r.port).c_str());
      std::fflush(stdout);
    }
  });
  pump.detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[2]));
  while (std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fflush(stdout);
  std::_Exit(0);  // the pump holds a pending IOCTL
}
