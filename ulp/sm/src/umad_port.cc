// MadPort over libibumad. Under ibsim-run, libumad2sim.so intercepts the device files
// libibumad opens and turns every umad_send into a 288-byte record for ibsim.
#include "softib/sm/umad_port.h"

#include <fcntl.h>
#include <infiniband/umad.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "softib/sm/sa.h"
#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

class UmadPort final : public MadPort {
 public:
  ~UmadPort() override {
    if (fd_ >= 0) umad_close_port(fd_);
    if (issm_fd_ >= 0) ::close(issm_fd_);
  }

  bool Open(const UmadPortOptions& options, std::string* error) {
    if (umad_init() < 0) return Fail("umad_init failed", error);
    char* ca = options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str());
    fd_ = umad_open_port(ca, options.port);
    if (fd_ < 0) return Fail("umad_open_port: " + std::string(std::strerror(-fd_)), error);
    umad_port_t info{};
    if (umad_get_port(ca, options.port, &info) == 0) {
      description_ = std::string("umad ") + info.ca_name + " port " + std::to_string(info.portnum);
      if (options.issm) {
        char path[256];
        if (umad_get_issm_path(info.ca_name, info.portnum, path, sizeof path) == 0)
          issm_path_ = path;
      }
      umad_release_port(&info);
    } else {
      description_ = "umad port";
    }
    // Get/Set/Trap requests from other nodes (SMInfo, traps) come to these agents.
    long methods[16 / sizeof(long)] = {};
    for (int m : {kMethodGet, kMethodSet, kMethodTrap})
      methods[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
    if (options.sm_agents) {
      agent_dr_ = umad_register(fd_, kClassSubnDr, 1, 0, methods);
      agent_lid_ = umad_register(fd_, kClassSubnLid, 1, 0, methods);
      if (agent_dr_ < 0 || agent_lid_ < 0) return Fail("umad_register failed", error);
    }
    if (options.sa_agent) {
      // No kernel RMPP (rmpp_version 0): the SA answers in single MADs; see sa.h.
      long sa_methods[16 / sizeof(long)] = {};
      if (options.sa_server)
        for (int m :
             {kSaMethodGet, kSaMethodSet, kSaMethodGetTable, kSaMethodDelete, kSaMethodGetMulti})
          sa_methods[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
      agent_sa_ = umad_register(fd_, kClassSubnAdm, kSaClassVersion, 0, sa_methods);
      if (agent_sa_ < 0) return Fail("umad_register (SubnAdm) failed", error);
    }
    buffer_.assign(umad_size() + kMadBytes, 0);
    // IsSM only now that the agents exist: once it is set, other SMs send us SMInfo (and
    // umad2sim's receiver thread crashes on a MAD for a class nobody registered).
    if (!issm_path_.empty()) issm_fd_ = ::open(issm_path_.c_str(), O_RDWR | O_CLOEXEC);
    return true;
  }

  PortStatus Send(const MadBytes& mad, const MadAddress& to, int timeout_ms) override {
    std::memset(buffer_.data(), 0, umad_size());
    std::memcpy(umad_get_mad(buffer_.data()), mad.data(), kMadBytes);
    umad_set_addr(buffer_.data(), to.lid, static_cast<int>(to.qpn), to.sl,
                  static_cast<int>(to.qkey));
    const int agent = mad[1] == kClassSubnDr    ? agent_dr_
                      : mad[1] == kClassSubnAdm ? agent_sa_
                                                : agent_lid_;
    if (agent < 0) {
      error_ = "no agent for management class " + std::to_string(mad[1]);
      return PortStatus::kError;
    }
    // No kernel retries: Transactions retries, with the same TID.
    const int length = to.length && to.length < kMadBytes ? to.length : static_cast<int>(kMadBytes);
    const int r = umad_send(fd_, agent, buffer_.data(), length, timeout_ms, 0);
    if (r < 0) {
      error_ = std::string("umad_send: ") + std::strerror(errno ? errno : -r);
      return PortStatus::kError;
    }
    return PortStatus::kOk;
  }

  PortStatus Receive(ReceivedMad& out, int timeout_ms) override {
    int length = static_cast<int>(kMadBytes);
    const int r = umad_recv(fd_, buffer_.data(), &length, timeout_ms);
    if (r < 0) {
      if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR) return PortStatus::kTimeout;
      error_ = std::string("umad_recv: ") + std::strerror(-r);
      return PortStatus::kError;
    }
    std::memcpy(out.mad.data(), umad_get_mad(buffer_.data()), kMadBytes);
    const auto* hdr = static_cast<const ib_user_mad_t*>(static_cast<void*>(buffer_.data()));
    out.from.lid = ntohs(hdr->addr.lid);
    out.from.qpn = ntohl(hdr->addr.qpn);
    out.from.sl = hdr->addr.sl;
    out.send_failed = umad_status(buffer_.data()) != 0;
    return PortStatus::kOk;
  }

  std::string Describe() const override { return description_; }
  std::string LastError() const override { return error_; }

 private:
  bool Fail(const std::string& message, std::string* error) {
    if (error) *error = message;
    return false;
  }

  int fd_ = -1;
  int issm_fd_ = -1;
  std::string issm_path_;
  int agent_dr_ = -1;
  int agent_lid_ = -1;
  int agent_sa_ = -1;
  std::vector<uint8_t> buffer_;
  std::string description_;
  std::string error_;
};

}  // namespace

uint16_t UmadSmLid(const UmadPortOptions& options) {
  if (umad_init() < 0) return 0;
  char* ca = options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str());
  umad_port_t info{};
  if (umad_get_port(ca, options.port, &info) != 0) return 0;
  const uint16_t lid = static_cast<uint16_t>(info.sm_lid);
  umad_release_port(&info);
  return lid;
}

std::unique_ptr<MadPort> OpenUmadPort(const UmadPortOptions& options, std::string* error) {
  auto port = std::make_unique<UmadPort>();
  if (!port->Open(options, error)) return nullptr;
  return port;
}

}  // namespace softib::sm
