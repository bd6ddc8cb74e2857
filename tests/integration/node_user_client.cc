// softib_node_user_client: what a user process sees of a host pulled out of the fabric and
// put back (`softib fabric remove|add HOST`). One line per event, flushed:
//   ca RUN_DIR SECONDS     on the host itself: registered for CA class PnP events, with the
//                          CA open. Prints "CA_REMOVE guid=G", then the open CA's query
//                          status ("query after removal: status S"), "CA_ADD guid=G", then a
//                          query of the CA opened again ("query after arrival: status S
//                          ports=N"). Exit 0 once both came, 1 after SECONDS.
//   traps RUN_DIR COUNT SECONDS
//                          elsewhere: subscribed through its port to the SA's traps 64 and
//                          65 (GID in / out of service). Prints "subscribed", then
//                          "REPORT trap=T gid=G" per Report. Exit 0 after COUNT, 1 after
//                          SECONDS.
#include <endian.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
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

namespace {

using namespace softib;
using user::Status;

std::mutex print_mutex;

void Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(print_mutex);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int Fail(const char* what, Status s) {
  Print(std::string("FAILED ") + what + ": " + std::to_string(static_cast<int>(s)));
  return 1;
}

std::string Hex64(uint64_t v) {
  char text[20];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

// Waits until `done` or the deadline, then leaves at once: pumping threads hold pending
// IOCTLs that only the file's end completes.
[[noreturn]] void ExitWhen(const std::atomic<bool>& done, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::fflush(stdout);
  std::_Exit(done.load() ? 0 : 1);
}

Status QueryPorts(const user::CaFile& ca, uint32_t* num_ports) {
  abi::QueryCaOut out{};
  abi::PortAttributes ports[8];
  const Status s = user::proxy::QueryCa(ca.device, {ca.ca}, out, ports);
  *num_ports = out.num_ports;
  return s;
}

int WatchCa(const char* run_dir, int seconds) {
  user::AlFile al;
  uint64_t ca_guid = 0;
  const char* failed = nullptr;
  if (Status s = integration::OpenFirstCa(run_dir, &al, &ca_guid, &failed); s != Status::SUCCESS)
    return Fail(failed, s);
  user::CaFile ca;
  if (Status s = user::OpenCaByGuid(al, ca_guid, 0, &ca); s != Status::SUCCESS)
    return Fail("OpenCa", s);
  abi::RegisterPnpOut reg{};
  if (Status s = user::proxy::RegisterPnp(al.device, {al.al, abi::PnpClass::CA, {}, 1}, reg);
      s != Status::SUCCESS)
    return Fail("RegisterPnp", s);
  static std::atomic<bool> done{false};
  std::thread pump([&al, &ca, reg] {
    bool removed = false;
    for (;;) {
      abi::GetPnpEventOut out{};
      if (user::proxy::GetPnpEvent(al.device, {reg.reg}, out) != Status::SUCCESS) return;
      const abi::PnpEventRecord& r = out.record;
      const std::string guid = Hex64(be64toh(r.guid));
      uint32_t ports = 0;
      if (r.event == abi::PnpEvent::REG_COMPLETE) {
        Print("REG_COMPLETE");
      } else if (r.event == abi::PnpEvent::CA_REMOVE) {
        Print("CA_REMOVE guid=" + guid);
        const Status s = QueryPorts(ca, &ports);
        Print("query after removal: status " + std::to_string(static_cast<int>(s)));
        removed = true;
      } else if (r.event == abi::PnpEvent::CA_ADD) {
        Print("CA_ADD guid=" + guid);
        if (!removed) continue;  // the present CA, before REG_COMPLETE
        // The old file's CA is gone for good; a new open reaches the CA that came back.
        user::CaFile again;
        Status s = user::OpenCaByGuid(al, r.guid, 0, &again);
        if (s == Status::SUCCESS) s = QueryPorts(again, &ports);
        Print("query after arrival: status " + std::to_string(static_cast<int>(s)) +
              " ports=" + std::to_string(ports));
        done.store(true);
      }
    }
  });
  pump.detach();
  ExitWhen(done, seconds);
}

int WatchTraps(const char* run_dir, int count, int seconds) {
  user::AlFile al;
  uint64_t ca_guid = 0;
  const char* failed = nullptr;
  if (Status s = integration::OpenFirstCa(run_dir, &al, &ca_guid, &failed); s != Status::SUCCESS)
    return Fail(failed, s);
  // Port 1's GUID: the CA's GUID + 1 on softib's HCAs; the AL checks it names a port.
  const uint64_t port_guid = htobe64(be64toh(ca_guid) + 1);
  abi::SubscribeReportOut in_service{}, out_of_service{};
  for (auto [trap, out] : {std::pair{uint16_t{64}, &in_service}, {uint16_t{65}, &out_of_service}}) {
    abi::SubscribeReportIn in{};
    in.al = al.al;
    in.port_guid = port_guid;
    in.timeout_ms = 1000;
    in.retry_count = 3;
    in.trap_number = trap;
    if (Status s = user::proxy::SubscribeReport(al.device, in, *out); s != Status::SUCCESS)
      return Fail(trap == 64 ? "SubscribeReport 64" : "SubscribeReport 65", s);
  }
  Print("subscribed");
  static std::atomic<int> seen{0};
  static std::atomic<bool> done{false};
  auto pump = [&al, count](abi::Handle<abi::ObjectType::SaInform> inform) {
    for (;;) {
      abi::GetReportOut out{};
      if (user::proxy::GetReport(al.device, {inform}, out) != Status::SUCCESS) return;
      // Notice (IBA 13.4.8.2): TrapNumber at byte 4, DataDetails at 10; Trap 64/65's
      // GIDADDR is at DataDetails byte 6 (14.2.5.1).
      const unsigned trap = out.notice[4] << 8 | out.notice[5];
      uint64_t prefix, id;
      std::memcpy(&prefix, out.notice + 16, 8);
      std::memcpy(&id, out.notice + 24, 8);
      Print("REPORT trap=" + std::to_string(trap) + " gid=" + Hex64(be64toh(prefix)) + ":" +
            Hex64(be64toh(id)));
      if (seen.fetch_add(1) + 1 >= count) done.store(true);
    }
  };
  std::thread(pump, in_service.inform).detach();
  std::thread(pump, out_of_service.inform).detach();
  ExitWhen(done, seconds);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "ca") == 0) return WatchCa(argv[2], std::atoi(argv[3]));
  if (argc == 5 && std::strcmp(argv[1], "traps") == 0)
    return WatchTraps(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(stderr,
               "usage: softib_node_user_client ca RUN_DIR SECONDS\n"
               "       softib_node_user_client traps RUN_DIR COUNT SECONDS\n");
  return 2;
}
