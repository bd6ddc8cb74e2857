// softib_bench_path_record: PathRecord queries per second from a user process through the
// AL's SA client, answered from the AL's path cache, against the same query sent to the SA
// every time (SaRequestFlags.BYPASS_CACHE: a MAD to softibd's internal SM and back), in the
// same run. The softibd it starts runs the default fabric with its internal SM (at host-0001,
// a light host without an AL); the query is host-0002's path to another CA by GIDs (a Get), each
// one SendSaRequest + GetSaResponse + CancelSaRequest through the channel. Rounds interleave the
// two kinds so that other load on the machine hits both alike.
#include <endian.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "sa_query.h"
#include "softib/user/access_layer.h"
#include "softibd_instance.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"

namespace {

namespace abi = softib::abi;
namespace user = softib::user;
using softib::bench::Die;
using softib::bench::NowNs;
constexpr const char* kProgram = "softib_bench_path_record";
constexpr uint8_t kGet = 0x01, kGetTable = 0x12;
constexpr uint16_t kNodeRecord = 0x0011, kPathRecord = 0x0035;
constexpr int kRounds = 10;

struct Sa {
  const user::AlFile& al;
  uint64_t port_guid;  // network order
  // One query; the records' bytes.
  std::vector<uint8_t> Ask(uint8_t method, uint16_t attribute, uint64_t mask,
                           const std::vector<uint8_t>& tmpl, abi::SaRequestFlags flags,
                           abi::GetSaResponseOut* out) {
    std::vector<uint8_t> data;
    if (softib::integration::AskSa(al, port_guid, method, attribute, mask, tmpl, flags, out,
                                   &data) != user::Status::SUCCESS ||
        out->mad_status != 0)
      Die(kProgram, "no answer from the SA");
    return data;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const uint32_t iterations =
      argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 20000;
  if (iterations < kRounds) Die(kProgram, "usage: softib_bench_path_record [iterations >= 10]");
  softib::integration::SoftibdInstance daemon;
  if (!daemon.Start(SOFTIBD_BINARY, {"--fabric", "default", "--sm", "internal"}))
    Die(kProgram, "softibd did not start");
  user::AlFile al;
  if (user::OpenAl((daemon.run_dir() + "/host-0002").c_str(), &al) != user::Status::SUCCESS)
    Die(kProgram, "OpenAl");
  uint64_t guids[64] = {};
  abi::GetCaGuidsOut got{};
  user::proxy::GetCaGuids(al.device, {al.al}, got, guids);
  user::CaFile ca;
  if (user::OpenCaByGuid(al, guids[0], 0, &ca) != user::Status::SUCCESS) Die(kProgram, "OpenCa");
  abi::PortAttributes me{};
  for (int i = 0; i < 400 && (me.link_state != 4 || me.sm_lid == 0); ++i) {
    std::vector<abi::PortAttributes> ports(2);
    abi::QueryCaOut q{};
    user::proxy::QueryCa(ca.device, {ca.ca}, q, ports);
    me = ports[0];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (me.link_state != 4 || me.sm_lid == 0) Die(kProgram, "port 1 never became active");
  Sa sa{al, me.port_guid};

  // Another CA's port GUID, from the NodeRecords (a GetTable).
  abi::GetSaResponseOut out{};
  const std::vector<uint8_t> nodes = sa.Ask(kGetTable, kNodeRecord, 0, {}, {}, &out);
  uint64_t peer = 0;
  for (uint32_t i = 0; i < out.num_records && peer == 0; ++i) {
    const uint8_t* r = nodes.data() + i * out.record_size;
    uint64_t port_guid;
    std::memcpy(&port_guid, r + 24, 8);
    if (r[6] == 1 && port_guid != me.port_guid) peer = port_guid;  // a CA, not us
  }
  if (peer == 0) Die(kProgram, "no other CA in the NodeRecords");
  std::vector<uint8_t> path(64, 0);  // DGID at 8, SGID at 24 (IBA 15.2.5.16)
  std::memcpy(&path[8], &me.subnet_prefix, 8);
  std::memcpy(&path[16], &peer, 8);
  std::memcpy(&path[24], &me.subnet_prefix, 8);
  std::memcpy(&path[32], &me.port_guid, 8);
  const uint64_t gids = (1ull << 2) | (1ull << 3);

  const uint32_t per_round = iterations / kRounds;
  uint64_t cached_ns = 0, uncached_ns = 0;
  (void)sa.Ask(kGet, kPathRecord, gids, path, {}, &out);  // the cache's first answer
  abi::PathCacheControlOut before{};
  user::proxy::PathCacheControl(al.device, {al.al, me.port_guid, 0, 0}, before);
  for (int round = 0; round < kRounds; ++round) {
    uint64_t t0 = NowNs();
    for (uint32_t i = 0; i < per_round; ++i) (void)sa.Ask(kGet, kPathRecord, gids, path, {}, &out);
    cached_ns += NowNs() - t0;
    t0 = NowNs();
    for (uint32_t i = 0; i < per_round; ++i)
      (void)sa.Ask(kGet, kPathRecord, gids, path, abi::SaRequestFlags::BYPASS_CACHE, &out);
    uncached_ns += NowNs() - t0;
  }
  abi::PathCacheControlOut after{};
  user::proxy::PathCacheControl(al.device, {al.al, me.port_guid, 0, 0}, after);
  const double n = per_round * kRounds;
  const double cached = n / (cached_ns / 1e9), uncached = n / (uncached_ns / 1e9);
  std::printf("PathRecord by GIDs, host-0002 to another CA, %u queries of each kind\n",
              static_cast<unsigned>(n));
  std::printf("  cached    %10.0f PathRecords/s  (cache hits +%llu)\n", cached,
              static_cast<unsigned long long>(after.hits - before.hits));
  std::printf("  uncached  %10.0f PathRecords/s  (SA queries +%llu)\n", uncached,
              static_cast<unsigned long long>(after.misses - before.misses));
  std::printf("  ratio cached/uncached: %.2f\n", cached / uncached);
  user::CloseCaFile(&ca);
  user::CloseAl(&al);
  return daemon.Stop() == 0 ? 0 : 1;
}
