// softib_verbs_client: a user program against a running softibd.
//
//   softib_verbs_client <run dir> verbs|control
//     The verb sequence of a first RDMA program: open the AL, list the CAs, open two of
//     them by GUID, PD, MRs over this process's buffers, CQ, an RC QP on each CA connected
//     to the other, rings mapped, RDMA WRITE, SEND (with immediate), exact completions and
//     buffer contents, teardown, and the file's object counts back to zero. `control`
//     leaves out the speed path (rings, posts, polls). Prints a transcript
//     that depends on nothing but the node's configuration (no handles, keys or
//     addresses), so that 32- and 64-bit runs can be compared byte for byte. Exit 0 only
//     when every check passed.
//
//   softib_verbs_client <run dir> hog|hog-peer <count>
//     The process-death test's victim: on the first CA, `count` each of PDs, MRs, CQs and
//     QPs (in INIT) and a pending GetCompletionEvent per CQ, prints "holding" and waits to
//     be killed. hog-peer also posts a
//     receive on each QP and makes one more RC QP for the test's peer: prints
//     "victim <lid> <qpn>", reads "peer <lid> <qpn>" from stdin, connects and posts a SEND
//     to the peer before it says "holding".
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "rc_endpoint.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_mr_mw_proxy.h"
#include "user/verbs_pd_av_proxy.h"

namespace softib::integration {
namespace {

using abi::ToString;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollLimit{10'000};

// The transcript: every check is one line, "ok" or "FAILED".
class Transcript {
 public:
  bool Check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok    " : "FAILED", what.c_str());
    std::fflush(stdout);
    ++checks_;
    if (!ok) ++failures_;
    return ok;
  }
  bool Expect(user::Status status, const std::string& what,
              user::Status expected = user::Status::SUCCESS) {
    return Check(status == expected, what + ": " + ToString(status));
  }
  int Finish() {
    std::printf("%d checks, %d failed\n", checks_, failures_);
    return failures_ == 0 ? 0 : 1;
  }
  bool failed() const { return failures_ != 0; }

 private:
  int checks_ = 0;
  int failures_ = 0;
};

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string Describe(const abi::WorkCompletion& wc) {
  std::string text = "wr_id=" + std::to_string(wc.wr_id) + " opcode=" + ToString(wc.opcode) +
                     " status=" + ToString(wc.status) + " length=" + std::to_string(wc.length);
  if ((wc.flags & abi::WcFlags::IMMEDIATE) == abi::WcFlags::IMMEDIATE) {
    text += " imm=" + Hex(wc.immediate_data).substr(8);
  }
  return text;
}

void Fill(std::vector<uint8_t>& buffer, uint8_t seed) {
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(seed + i * 7);
}

// One CA's side of the test: its file, PD, buffers and endpoint.
struct Side {
  user::CaFile ca;
  abi::Handle<abi::ObjectType::Pd> pd{};
  uint16_t lid = 0;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(8192);  // [0,4096) source, [4096,8192) sink
  abi::Handle<abi::ObjectType::Mr> mr{};
  uint32_t lkey = 0, rkey = 0;
  RcEndpoint endpoint;
};

void RunDataPath(Transcript& t, Side& a, Side& b);
void Teardown(Transcript& t, Side (&sides)[2], user::AlFile& al);

int RunVerbs(const char* run_dir, bool speed_path) {
  Transcript t;
  user::AlFile al;
  if (!t.Expect(user::OpenAl(run_dir, &al), "open AL \"ibal\"")) return t.Finish();

  abi::GetCaGuidsIn guids_in{};
  guids_in.al = al.al;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  t.Expect(user::proxy::GetCaGuids(al.device, guids_in, guids_out, guids), "GetCaGuids");
  if (!t.Check(guids_out.num_cas >= 2, "CAs: " + std::to_string(guids_out.num_cas))) {
    return t.Finish();
  }

  user::CaFile unknown;
  t.Expect(user::OpenCaByGuid(al, HostToNet64(0x0123456789abcdefULL), 0, &unknown),
           "open CA 0123456789abcdef (none such)", user::Status::INVALID_GUID);

  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    Side& s = sides[i];
    const std::string name = "CA " + Hex(HostToNet64(guids[i]));  // GUIDs travel in network order
    if (!t.Expect(user::OpenCaByGuid(al, guids[i], /*context=*/i + 1, &s.ca), "open " + name)) {
      return t.Finish();
    }
    uint8_t link_state = 0;
    t.Expect(PortLid(s.ca, &s.lid, &link_state), name + " QueryCa");
    t.Check(link_state == 4 && s.lid != 0,
            name + " port 1 lid=" + std::to_string(s.lid) + " state=" + std::to_string(link_state));
    t.Expect(AllocPd(s.ca, &s.pd), name + " AllocPd");
    const auto access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                        abi::AccessFlags::REMOTE_READ;
    t.Expect(RegisterBuffer(s.ca, s.pd, s.buffer.data(), s.buffer.size(), access, &s.mr, &s.lkey,
                            &s.rkey),
             name + " RegMem 8192 bytes");
    if (!t.Expect(s.endpoint.Create(s.ca, s.pd, 16), name + " CreateCq + CreateQp RC")) {
      return t.Finish();
    }
  }
  const Side& a = sides[0];
  const Side& b = sides[1];
  t.Expect(sides[0].endpoint.Connect(b.lid, b.endpoint.qpn()), "QP A RESET->INIT->RTR->RTS");
  t.Expect(sides[1].endpoint.Connect(a.lid, a.endpoint.qpn()), "QP B RESET->INIT->RTR->RTS");
  for (int i = 0; i < 2; ++i) {
    abi::QpState state = abi::QpState::RESET;
    t.Expect(sides[i].endpoint.QueryState(&state), std::string(i == 0 ? "A" : "B") + " QueryQp");
    t.Check(state == abi::QpState::RTS,
            std::string("QP ") + (i == 0 ? "A" : "B") + " state " + ToString(state));
  }
  if (t.failed()) return t.Finish();
  if (speed_path) RunDataPath(t, sides[0], sides[1]);
  if (t.failed()) return t.Finish();
  Teardown(t, sides, al);
  return t.Finish();
}

// RDMA WRITE and SENDs both ways over the speed path, with exact completions.
void RunDataPath(Transcript& t, Side& a, Side& b) {
  if (!t.Expect(a.endpoint.MapRings(), "A MapCqRing + MapQpRings") ||
      !t.Expect(b.endpoint.MapRings(), "B MapCqRing + MapQpRings")) {
    return;
  }
  // RDMA WRITE: A's source half into B's sink half.
  Fill(a.buffer, 0x11);
  abi::SendWorkRequest write = SendWr(1, abi::WrType::RDMA_WRITE, a.buffer.data(), 4096, a.lkey);
  write.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data() + 4096);
  write.rkey = b.rkey;
  t.Expect(a.endpoint.PostSend(write), "A PostSend RDMA_WRITE 4096");
  abi::WorkCompletion wc{};
  if (t.Expect(a.endpoint.PollOne(&wc, kPollLimit), "A PollCq")) {
    t.Check(wc.wr_id == 1 && wc.opcode == abi::WcOpcode::RDMA_WRITE &&
                wc.status == abi::WcStatus::SUCCESS,
            "A completion " + Describe(wc));
  }
  t.Check(std::memcmp(a.buffer.data(), b.buffer.data() + 4096, 4096) == 0,
          "B sink holds A's 4096 bytes");

  // SEND with immediate: B receives into its first half.
  t.Expect(b.endpoint.PostRecv(RecvWr(20, b.buffer.data(), 4096, b.lkey)), "B PostRecv 4096");
  std::memcpy(a.buffer.data(), "hello from A over RC", 21);
  abi::SendWorkRequest send = SendWr(2, abi::WrType::SEND, a.buffer.data(), 21, a.lkey);
  send.send_flags = send.send_flags | abi::SendFlags::IMMEDIATE;
  send.immediate_data = HostToNet32(0xC0FFEE01);
  t.Expect(a.endpoint.PostSend(send), "A PostSend SEND 21 with immediate");
  if (t.Expect(a.endpoint.PollOne(&wc, kPollLimit), "A PollCq")) {
    t.Check(
        wc.wr_id == 2 && wc.opcode == abi::WcOpcode::SEND && wc.status == abi::WcStatus::SUCCESS,
        "A completion " + Describe(wc));
  }
  if (t.Expect(b.endpoint.PollOne(&wc, kPollLimit), "B PollCq")) {
    t.Check(wc.wr_id == 20 && wc.opcode == abi::WcOpcode::RECV &&
                wc.status == abi::WcStatus::SUCCESS && wc.length == 21 &&
                wc.immediate_data == HostToNet32(0xC0FFEE01),
            "B completion " + Describe(wc));
  }
  t.Check(std::memcmp(b.buffer.data(), "hello from A over RC", 21) == 0,
          "B received \"hello from A over RC\"");

  // SEND back: B to A.
  t.Expect(a.endpoint.PostRecv(RecvWr(30, a.buffer.data() + 4096, 4096, a.lkey)),
           "A PostRecv 4096");
  Fill(b.buffer, 0x5a);
  t.Expect(b.endpoint.PostSend(SendWr(3, abi::WrType::SEND, b.buffer.data(), 1000, b.lkey)),
           "B PostSend SEND 1000");
  if (t.Expect(b.endpoint.PollOne(&wc, kPollLimit), "B PollCq")) {
    t.Check(
        wc.wr_id == 3 && wc.opcode == abi::WcOpcode::SEND && wc.status == abi::WcStatus::SUCCESS,
        "B completion " + Describe(wc));
  }
  if (t.Expect(a.endpoint.PollOne(&wc, kPollLimit), "A PollCq")) {
    t.Check(wc.wr_id == 30 && wc.opcode == abi::WcOpcode::RECV &&
                wc.status == abi::WcStatus::SUCCESS && wc.length == 1000,
            "A completion " + Describe(wc));
  }
  t.Check(std::memcmp(a.buffer.data() + 4096, b.buffer.data(), 1000) == 0,
          "A received B's 1000 bytes");
  t.Check(a.endpoint.PollOne(&wc, std::chrono::milliseconds(0)) == user::Status::TIMEOUT &&
              b.endpoint.PollOne(&wc, std::chrono::milliseconds(0)) == user::Status::TIMEOUT,
          "no further completions");
}

// Children first; then nothing of this process is left on either CA file.
void Teardown(Transcript& t, Side (&sides)[2], user::AlFile& al) {
  for (int i = 0; i < 2; ++i) {
    Side& s = sides[i];
    const std::string name = i == 0 ? "A" : "B";
    t.Expect(s.endpoint.Destroy(), name + " DestroyQp + DestroyCq");
    abi::DeregMrIn dereg{};
    dereg.mr = s.mr;
    t.Expect(user::proxy::DeregMr(s.ca.device, dereg), name + " DeregMr");
    abi::DeallocPdIn dealloc{};
    dealloc.pd = s.pd;
    t.Expect(user::proxy::DeallocPd(s.ca.device, dealloc), name + " DeallocPd");
    abi::QueryObjectCountsIn counts_in{};
    counts_in.al = s.ca.al;
    counts_in.scope = abi::CountScope::FILE;
    abi::QueryObjectCountsOut counts{};
    t.Expect(user::proxy::QueryObjectCounts(s.ca.device, counts_in, counts),
             name + " QueryObjectCounts FILE");
    const auto& c = counts.counts;
    t.Check(c.pd == 0 && c.cq == 0 && c.qp == 0 && c.mr == 0,
            name + " file counts pd=" + std::to_string(c.pd) + " cq=" + std::to_string(c.cq) +
                " qp=" + std::to_string(c.qp) + " mr=" + std::to_string(c.mr));
    t.Expect(user::CloseCaFile(&s.ca), name + " CloseCa + close file");
  }
  t.Expect(user::CloseAl(&al), "close AL");
}

int RunHog(const char* run_dir, int count, bool with_peer) {
  auto fail = [](const char* what, user::Status status) {
    std::fprintf(stderr, "hog: %s: %s\n", what, ToString(status));
    return 1;
  };
  user::AlFile al;
  user::Status status = user::OpenAl(run_dir, &al);
  if (status != user::Status::SUCCESS) return fail("open AL", status);
  abi::GetCaGuidsIn guids_in{};
  guids_in.al = al.al;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  status = user::proxy::GetCaGuids(al.device, guids_in, guids_out, guids);
  if (status != user::Status::SUCCESS) return fail("GetCaGuids", status);
  user::CaFile ca;
  status = user::OpenCaByGuid(al, guids[0], 0, &ca);
  if (status != user::Status::SUCCESS) return fail("open CA", status);

  std::vector<uint8_t> memory(static_cast<size_t>(count) * 256);
  std::vector<std::unique_ptr<RcEndpoint>> endpoints;
  for (int i = 0; i < count; ++i) {
    abi::Handle<abi::ObjectType::Pd> pd{};
    status = AllocPd(ca, &pd);
    if (status != user::Status::SUCCESS) return fail("AllocPd", status);
    abi::Handle<abi::ObjectType::Mr> mr{};
    uint32_t lkey = 0, rkey = 0;
    status = RegisterBuffer(ca, pd, memory.data() + i * 256, 256, abi::AccessFlags::LOCAL_WRITE,
                            &mr, &lkey, &rkey);
    if (status != user::Status::SUCCESS) return fail("RegMem", status);
    auto endpoint = std::make_unique<RcEndpoint>();
    status = endpoint->Create(ca, pd, 4);
    if (status != user::Status::SUCCESS) return fail("CreateCq/CreateQp", status);
    status = endpoint->Init();
    if (status != user::Status::SUCCESS) return fail("ModifyQp INIT", status);
    if (with_peer) {  // work in the queue when the process dies
      status = endpoint->MapRings();
      if (status != user::Status::SUCCESS) return fail("MapRings", status);
      status = endpoint->PostRecv(RecvWr(i, memory.data() + i * 256, 256, lkey));
      if (status != user::Status::SUCCESS) return fail("PostRecv", status);
    }
    endpoints.push_back(std::move(endpoint));
  }
  // Requests in the kernel when the process dies: a completion-event wait on every CQ
  // (the inverted call), which only the process's death ends.
  std::vector<abi::GetCompletionEventOut> event_outs(endpoints.size());
  std::vector<user::Overlapped> waits(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) {
    abi::GetCompletionEventIn in{};
    in.cq = endpoints[i]->cq();
    waits[i] = user::Overlapped{};
    status = user::proxy::GetCompletionEventAsync(ca.device, in, event_outs[i], &waits[i]);
    if (status != user::Status::PENDING) return fail("GetCompletionEvent", status);
  }

  if (!with_peer) {
    std::printf("holding\n");
    std::fflush(stdout);
    for (;;) pause();
  }

  // The QP the test's peer talks to.
  abi::Handle<abi::ObjectType::Pd> pd{};
  status = AllocPd(ca, &pd);
  if (status != user::Status::SUCCESS) return fail("AllocPd", status);
  std::vector<uint8_t> buffer(4096);
  abi::Handle<abi::ObjectType::Mr> mr{};
  uint32_t lkey = 0, rkey = 0;
  status = RegisterBuffer(ca, pd, buffer.data(), buffer.size(),
                          abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE, &mr,
                          &lkey, &rkey);
  if (status != user::Status::SUCCESS) return fail("RegMem", status);
  RcEndpoint victim;
  status = victim.Create(ca, pd, 16);
  if (status == user::Status::SUCCESS) status = victim.MapRings();
  if (status != user::Status::SUCCESS) return fail("victim QP", status);
  uint16_t lid = 0;
  uint8_t link_state = 0;
  status = PortLid(ca, &lid, &link_state);
  if (status != user::Status::SUCCESS) return fail("QueryCa", status);
  std::printf("victim %u %u\n", lid, victim.qpn());
  std::fflush(stdout);

  std::string word;
  unsigned peer_lid = 0, peer_qpn = 0;
  if (!(std::cin >> word >> peer_lid >> peer_qpn) || word != "peer") {
    std::fprintf(stderr, "hog: expected \"peer <lid> <qpn>\"\n");
    return 1;
  }
  status = victim.Connect(static_cast<uint16_t>(peer_lid), peer_qpn);
  if (status != user::Status::SUCCESS) return fail("victim Connect", status);
  for (int i = 0; i < 4; ++i) {
    status = victim.PostRecv(RecvWr(100 + i, buffer.data(), 1024, lkey));
    if (status != user::Status::SUCCESS) return fail("victim PostRecv", status);
  }
  std::memcpy(buffer.data() + 2048, "from the victim", 16);
  status = victim.PostSend(SendWr(7, abi::WrType::SEND, buffer.data() + 2048, 16, lkey));
  if (status != user::Status::SUCCESS) return fail("victim PostSend", status);
  std::printf("holding\n");
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace
}  // namespace softib::integration

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[2] : "";
  if (argc == 3 && (mode == "verbs" || mode == "control")) {
    return softib::integration::RunVerbs(argv[1], mode == "verbs");
  }
  if (argc == 4 && (mode == "hog" || mode == "hog-peer") && std::atoi(argv[3]) > 0) {
    return softib::integration::RunHog(argv[1], std::atoi(argv[3]), mode == "hog-peer");
  }
  std::fprintf(stderr,
               "usage: softib_verbs_client <run dir> verbs|control | hog|hog-peer <count>\n");
  return 2;
}
