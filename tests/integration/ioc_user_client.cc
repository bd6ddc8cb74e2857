// softib_ioc_user_client: I/O controllers from user processes (verbs_ioc) and their discovery
// as IOU/IOC PnP events.
//   softib_ioc_user_client target RUN_DIR GUID   an I/O controller with two services on the
//       node's first CA, registered; prints "registered slot N", then holds it until it is
//       killed or stdin closes (the file's cleanup withdraws it).
//   softib_ioc_user_client watch RUN_DIR COUNT SECONDS   registers for IOU and IOC PnP events
//       and prints one line per event until COUNT events (REG_COMPLETE not counted) or
//       SECONDS passed; exit 0 when COUNT arrived.
#include <endian.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "node_files.h"
#include "softib/user/access_layer.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_ioc_proxy.h"

namespace {

using namespace softib;
using user::Status;

int Fail(const char* what, Status s) {
  std::printf("FAILED %s: %d\n", what, static_cast<int>(s));
  return 1;
}

int Target(const char* run_dir, uint64_t ioc_guid) {
  user::AlFile al;
  uint64_t ca_guid = 0;
  const char* failed = nullptr;
  if (Status s = integration::OpenFirstCa(run_dir, &al, &ca_guid, &failed); s != Status::SUCCESS)
    return Fail(failed, s);
  user::CaFile ca;
  if (Status s = user::OpenCaByGuid(al, ca_guid, 0, &ca); s != Status::SUCCESS)
    return Fail("OpenCa", s);
  abi::CreateIocIn create{};
  create.ca = ca.ca;
  for (int i = 0; i < 8; ++i) create.profile[i] = static_cast<uint8_t>(ioc_guid >> (56 - 8 * i));
  create.profile[28] = 0x01;  // IOClass 0x0100 (SRP's)
  std::snprintf(reinterpret_cast<char*>(create.profile + 64), 64, "softib IOC %016llx",
                static_cast<unsigned long long>(ioc_guid));
  abi::CreateIocOut ioc{};
  if (Status s = user::proxy::CreateIoc(ca.device, create, ioc); s != Status::SUCCESS)
    return Fail("CreateIoc", s);
  for (uint64_t n = 1; n <= 2; ++n) {
    abi::AddIocServiceIn add{};
    add.ioc = ioc.ioc;
    add.service_id = htobe64(ioc_guid + n);
    std::snprintf(reinterpret_cast<char*>(add.name), sizeof add.name, "service-%llu",
                  static_cast<unsigned long long>(n));
    abi::AddIocServiceOut svc{};
    if (Status s = user::proxy::AddIocService(ca.device, add, svc); s != Status::SUCCESS)
      return Fail("AddIocService", s);
  }
  abi::RegisterIocOut slot{};
  if (Status s = user::proxy::RegisterIoc(ca.device, {ioc.ioc}, slot); s != Status::SUCCESS)
    return Fail("RegisterIoc", s);
  std::printf("registered slot %u\n", slot.slot);
  std::fflush(stdout);
  char buffer[64];
  while (::read(0, buffer, sizeof buffer) > 0) {
  }
  return 0;
}

const char* EventName(abi::PnpEvent e) {
  switch (e) {
    case abi::PnpEvent::IOU_ADD:
      return "IOU_ADD";
    case abi::PnpEvent::IOU_REMOVE:
      return "IOU_REMOVE";
    case abi::PnpEvent::IOC_ADD:
      return "IOC_ADD";
    case abi::PnpEvent::IOC_REMOVE:
      return "IOC_REMOVE";
    case abi::PnpEvent::REG_COMPLETE:
      return "REG_COMPLETE";
    default:
      return "other";
  }
}

int Watch(const char* run_dir, int count, int seconds) {
  user::AlFile al;
  if (Status s = user::OpenAl(run_dir, &al); s != Status::SUCCESS) return Fail("OpenAl", s);
  abi::RegisterPnpOut iou{}, ioc{};
  if (Status s = user::proxy::RegisterPnp(al.device, {al.al, abi::PnpClass::IOU, {}, 1}, iou);
      s != Status::SUCCESS)
    return Fail("RegisterPnp IOU", s);
  if (Status s = user::proxy::RegisterPnp(al.device, {al.al, abi::PnpClass::IOC, {}, 2}, ioc);
      s != Status::SUCCESS)
    return Fail("RegisterPnp IOC", s);
  std::printf("watching\n");
  std::fflush(stdout);
  // Each registration in its own thread: GetPnpEvent waits until an event comes.
  std::atomic<int> seen{0};
  std::mutex print;
  auto pump = [&](abi::Handle<abi::ObjectType::PnpReg> reg) {
    for (;;) {
      abi::GetPnpEventOut out{};
      if (user::proxy::GetPnpEvent(al.device, {reg}, out) != Status::SUCCESS) return;
      const abi::PnpEventRecord& r = out.record;
      // One line, written whole: the two registrations' threads print at once.
      char line[512];
      if (r.event == abi::PnpEvent::REG_COMPLETE) {
        std::snprintf(line, sizeof line, "REG_COMPLETE class=%s\n",
                      out.record.pnp_context == 1 ? "IOU" : "IOC");
      } else if (r.event == abi::PnpEvent::IOC_ADD || r.event == abi::PnpEvent::IOC_REMOVE) {
        std::snprintf(
            line, sizeof line, "%s guid=%016llx lid=%u slot=%u entries=%u id=%.40s first=%.40s\n",
            EventName(r.event), static_cast<unsigned long long>(be64toh(r.guid)), r.iou_lid,
            r.ioc_slot, r.num_service_entries, reinterpret_cast<const char*>(r.ioc_profile + 64),
            reinterpret_cast<const char*>(r.service_entries));
      } else {
        std::snprintf(line, sizeof line, "%s guid=%016llx lid=%u\n", EventName(r.event),
                      static_cast<unsigned long long>(be64toh(r.guid)), r.iou_lid);
      }
      {
        std::lock_guard<std::mutex> lock(print);
        std::fputs(line, stdout);
        std::fflush(stdout);
      }
      if (r.event != abi::PnpEvent::REG_COMPLETE) seen.fetch_add(1);  // counted once printed
    }
  };
  std::thread a(pump, iou.reg), b(pump, ioc.reg);
  a.detach();
  b.detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (seen.load() < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fflush(stdout);
  std::_Exit(seen.load() >= count ? 0 : 1);  // the waiting threads hold pending IOCTLs
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "target") == 0)
    return Target(argv[2], std::strtoull(argv[3], nullptr, 16));
  if (argc == 5 && std::strcmp(argv[1], "watch") == 0)
    return Watch(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(stderr,
               "usage: softib_ioc_user_client target RUN_DIR IOC_GUID_HEX\n"
               "       softib_ioc_user_client watch RUN_DIR COUNT SECONDS\n");
  return 2;
}
