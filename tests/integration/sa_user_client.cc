// softib_sa_user_client <run dir>: a user process asking the SA of a softibd fabric
// (softib's SM inside softibd) through the AL's SA client verbs, one transcript line per
// check: every NodeRecord by one GetTable (RMPP), PathRecords by GIDs, by LIDs and by
// service ID through the path cache (hits, misses, flush), a PortInfoRecord, an ATS
// ServiceRecord registered and found by name, a 1-second lease kept by the AL's renewals
// while a raw Set of the same kind expires, and Deregister removing the record. Exit 0
// only when every check passed.
#include <endian.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sa_query.h"
#include "softib/user/access_layer.h"
#include "transcript.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"

namespace {

using namespace softib;
using integration::Check;
using integration::Expect;
using user::Status;
using Bytes = std::vector<uint8_t>;

constexpr uint8_t kGet = 0x01, kSet = 0x02, kGetTable = 0x12;
constexpr uint16_t kNodeRecord = 0x11, kPortInfoRecord = 0x12, kServiceRecord = 0x31,
                   kPathRecord = 0x35;
// ATS (the address translation service DAPL and IBAL's IPoIB register): its service ID and
// name, the IPv4 address at ServiceData8 byte 12.
constexpr uint64_t kAtsServiceId = 0x10000CE100415453ull;
constexpr char kAtsName[] = "DAPL Address Translation Service";
constexpr std::size_t kAtsIpv4 = 112 + 12;

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint64_t Be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}
void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}

struct Answer {
  Status status = Status::ERROR;
  abi::GetSaResponseOut out{};
  Bytes data;
  const uint8_t* record(uint32_t i) const { return data.data() + i * out.record_size; }
};

class Sa {
 public:
  Sa(const user::AlFile& al, uint64_t port_guid) : al_(al), port_guid_(port_guid) {}

  Answer Ask(uint8_t method, uint16_t attribute, uint64_t mask, const Bytes& tmpl,
             abi::SaRequestFlags flags = {}) {
    Answer a;
    a.status =
        integration::AskSa(al_, port_guid_, method, attribute, mask, tmpl, flags, &a.out, &a.data);
    return a;
  }

  abi::PathCacheControlOut Cache(bool flush = false) {
    abi::PathCacheControlOut out{};
    user::proxy::PathCacheControl(al_.device, {al_.al, port_guid_, flush ? 1u : 0u, 0}, out);
    return out;
  }

  Status Register(uint64_t mask, const Bytes& record, abi::RegisterServiceOut* out) {
    abi::RegisterServiceIn in{};
    in.al = al_.al;
    in.port_guid = port_guid_;
    in.component_mask = mask;
    in.timeout_ms = 2000;
    in.retry_count = 3;
    std::memcpy(in.record, record.data(), record.size());
    return user::proxy::RegisterService(al_.device, in, *out);
  }

 private:
  const user::AlFile& al_;
  const uint64_t port_guid_;
};

Bytes Gid(uint64_t prefix_be, uint64_t guid_be) {
  Bytes g(16);
  std::memcpy(g.data(), &prefix_be, 8);
  std::memcpy(g.data() + 8, &guid_be, 8);
  return g;
}

// ServiceRecords with this ID (GetTable by ServiceID), their names' count of `name`.
int CountServices(Sa& sa, uint64_t id, const char* name) {
  Bytes t(176, 0);
  Put64(t.data(), id);
  const Answer a = sa.Ask(kGetTable, kServiceRecord, 1, t);
  if (a.status != Status::SUCCESS || a.out.mad_status != 0) return 0;
  int n = 0;
  for (uint32_t i = 0; i < a.out.num_records; ++i) {
    n += std::strncmp(reinterpret_cast<const char*>(a.record(i) + 48), name, 64) == 0 ? 1 : 0;
  }
  return n;
}

int Run(const char* run_dir) {
  user::AlFile al;
  if (!Expect(user::OpenAl(run_dir, &al), "OpenAl")) return 1;
  uint64_t guids[64] = {};
  abi::GetCaGuidsOut got{};
  Expect(user::proxy::GetCaGuids(al.device, {al.al}, got, guids), "GetCaGuids");
  user::CaFile ca;
  if (!Expect(user::OpenCaByGuid(al, guids[0], 0, &ca), "OpenCa")) return 1;
  std::vector<abi::PortAttributes> ports(2);
  abi::QueryCaOut q{};
  Expect(user::proxy::QueryCa(ca.device, {ca.ca}, q, ports), "QueryCa");
  const abi::PortAttributes me = ports[0];
  Check(me.sm_lid != 0 && me.link_state == 4, "port 1 Active with an SM");
  Sa sa(al, me.port_guid);

  // Every NodeRecord in one GetTable (more than one MAD: RMPP).
  Answer nodes = sa.Ask(kGetTable, kNodeRecord, 0, {});
  Expect(nodes.status, "NodeRecord GetTable");
  Check(nodes.out.num_records == 7 && nodes.out.record_size >= 108,
        "7 NodeRecords, " + std::to_string(nodes.out.record_size) + " bytes apart");
  // A peer: a CA port other than ours.
  uint16_t peer_lid = 0;
  uint64_t peer_guid = 0;
  for (uint32_t i = 0; i < nodes.out.num_records; ++i) {
    const uint8_t* r = nodes.record(i);
    if (r[6] == 1 && Be64(r + 24) != be64toh(me.port_guid) && Be16(r) != 0) {
      peer_lid = Be16(r);
      peer_guid = Be64(r + 24);
    }
  }
  Check(peer_lid != 0, "a peer CA port at LID " + std::to_string(peer_lid));
  const Bytes own_gid = Gid(me.subnet_prefix, me.port_guid);
  const Bytes peer_gid = Gid(me.subnet_prefix, htobe64(peer_guid));

  // PathRecord by GIDs, twice: the SA once, the cache once.
  Bytes by_gid(64, 0);
  std::memcpy(&by_gid[8], peer_gid.data(), 16);
  std::memcpy(&by_gid[24], own_gid.data(), 16);
  const uint64_t gids = (1ull << 2) | (1ull << 3);
  const abi::PathCacheControlOut before = sa.Cache();
  for (int i = 0; i < 2; ++i) {
    const Answer p = sa.Ask(kGet, kPathRecord, gids, by_gid);
    Expect(p.status, "PathRecord by GIDs");
    Check(p.out.num_records == 1 && Be16(p.record(0) + 40) == peer_lid &&
              Be16(p.record(0) + 42) == me.lid,
          "path to LID " + std::to_string(peer_lid) + " from " + std::to_string(me.lid));
  }
  abi::PathCacheControlOut stats = sa.Cache();
  Check(stats.hits == before.hits + 1 && stats.misses == before.misses + 1,
        "the second from the cache (hits " + std::to_string(stats.hits) + ", misses " +
            std::to_string(stats.misses) + ")");
  // By LIDs (GetTable), by service ID with the GIDs; BYPASS_CACHE asks the SA.
  Bytes by_lid(64, 0);
  Put16(&by_lid[40], peer_lid);
  Put16(&by_lid[42], me.lid);
  const Answer l = sa.Ask(kGetTable, kPathRecord, (1ull << 4) | (1ull << 5), by_lid);
  Check(l.status == Status::SUCCESS && l.out.num_records >= 1 &&
            std::memcmp(l.record(0) + 8, peer_gid.data(), 16) == 0,
        "PathRecord by LIDs names the peer's GID");
  Bytes by_service = by_gid;
  Put64(&by_service[0], 0x1234567890ull);
  const Answer sv = sa.Ask(kGet, kPathRecord, gids | 3, by_service);
  Check(sv.status == Status::SUCCESS && sv.out.num_records == 1 &&
            Be16(sv.record(0) + 40) == peer_lid,
        "PathRecord by service ID");
  const Answer fresh = sa.Ask(kGet, kPathRecord, gids, by_gid, abi::SaRequestFlags::BYPASS_CACHE);
  stats = sa.Cache();
  Check(fresh.status == Status::SUCCESS && stats.misses == before.misses + 4,
        "BYPASS_CACHE went to the SA (misses " + std::to_string(stats.misses) + ")");
  Check(sa.Cache(true).entries >= 1 && sa.Cache().entries == 0, "flushed");

  // Our PortInfoRecord.
  Bytes pir(68, 0);
  Put16(&pir[0], me.lid);
  const Answer pi = sa.Ask(kGet, kPortInfoRecord, 1, pir);
  Check(pi.status == Status::SUCCESS && pi.out.num_records == 1 &&
            Be16(pi.record(0) + 4 + 16) == me.lid,
        "PortInfoRecord of LID " + std::to_string(me.lid));
  // A template the SA cannot take: an error status, no records.
  Bytes nobody(64, 0);
  Put16(&nobody[40], 0xBFFF);
  const Answer none = sa.Ask(kGet, kPathRecord, 1ull << 4, nobody);
  Check(none.status == Status::SUCCESS && none.out.mad_status != 0 && none.out.num_records == 0,
        "PathRecord to no one: MAD status " + std::to_string(none.out.mad_status));

  // ATS: our IPv4 address registered, found by a ServiceRecord GetTable.
  Bytes ats(176, 0);
  Put64(&ats[0], kAtsServiceId);
  std::memcpy(&ats[8], own_gid.data(), 16);
  Put16(&ats[24], 0xFFFF);
  ats[28] = ats[29] = ats[30] = ats[31] = 0xFF;  // forever
  std::memcpy(&ats[48], kAtsName, sizeof kAtsName - 1);
  const uint8_t ip[4] = {10, 1, 2, static_cast<uint8_t>(me.lid)};
  std::memcpy(&ats[kAtsIpv4], ip, 4);
  const uint64_t ats_mask =
      0x57 | (0xFull << (7 + 12));  // ID, GID, P_Key, lease, name, data8 13-16
  abi::RegisterServiceOut reg{};
  Expect(sa.Register(ats_mask, ats, &reg), "RegisterService ATS");
  Check(std::memcmp(reg.registered, ats.data(), 8) == 0, "the SA's record back");
  Bytes find(176, 0);
  std::memcpy(&find[8], own_gid.data(), 16);
  std::memcpy(&find[48], kAtsName, sizeof kAtsName - 1);
  const Answer found = sa.Ask(kGetTable, kServiceRecord, (1ull << 1) | (1ull << 6), find);
  bool ip_found = false;
  for (uint32_t i = 0; found.status == Status::SUCCESS && i < found.out.num_records; ++i) {
    ip_found |= Be64(found.record(i)) == kAtsServiceId &&
                std::memcmp(found.record(i) + kAtsIpv4, ip, 4) == 0;
  }
  Check(ip_found, "ATS record found by GID and name, IPv4 10.1.2." + std::to_string(me.lid));

  // A 1-second lease: the AL renews it; a raw Set of another ID expires.
  Bytes leased(176, 0);
  Put64(&leased[0], 0x5A00 + me.lid);
  std::memcpy(&leased[8], own_gid.data(), 16);
  leased[31] = 1;
  std::memcpy(&leased[48], "lease", 5);
  abi::RegisterServiceOut kept{};
  Expect(sa.Register(0x53, leased, &kept), "RegisterService, lease 1 s");
  Bytes raw = leased;
  Put64(&raw[0], 0x5B00 + me.lid);
  Expect(sa.Ask(kSet, kServiceRecord, 0x53, raw).status, "a raw ServiceRecord Set, lease 1 s");
  Check(CountServices(sa, 0x5B00 + me.lid, "lease") == 1, "the raw one is there");
  // The SA drops the raw one a lease after its Set. The AL's was set before it: had the AL
  // not renewed it, it would be gone by then too.
  bool expired = false;
  for (int i = 0; i < 500 && !expired; ++i) {  // bounded (10 s): a hang, not a timing check
    expired = CountServices(sa, 0x5B00 + me.lid, "lease") == 0;
    if (!expired) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Check(expired, "not renewed: the raw one expired");
  Check(CountServices(sa, 0x5A00 + me.lid, "lease") == 1,
        "renewed: still there once the raw one expired");
  Expect(user::proxy::DeregisterService(al.device, {kept.reg}), "DeregisterService");
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // the Delete is on its way
    gone = CountServices(sa, 0x5A00 + me.lid, "lease") == 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Check(gone, "deregistered: gone");
  Expect(user::proxy::DeregisterService(al.device, {kept.reg}), "DeregisterService again",
         Status::INVALID_SA_REG_HANDLE);
  user::CloseCaFile(&ca);
  user::CloseAl(&al);
  return integration::FinishTranscript();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: softib_sa_user_client RUN_DIR\n");
    return 2;
  }
  return Run(argv[1]);
}
