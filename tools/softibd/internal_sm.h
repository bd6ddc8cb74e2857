// softibd --sm internal: softib's subnet manager (ulp/sm, the code softib-sm runs) on its own
// thread inside softibd, at port 1 of one light host (the SM host). Its MadPort hands MADs
// to and from that port's QP0/QP1 in memory (fabric/net LightHost::SendFromAbove/SetAbove):
// no sockets, no ibsim protocol, and the SM's window of SMPs crosses to the fabric's thread
// in one wake-up; the SA's tables go by RMPP (light_host_rmpp.h). It sweeps once, then
// stays MASTER (light sweeps, SMInfo, traps, SA) until Stop. Each sweep's summary line goes
// to stdout and to <run_dir>/sm.summary.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "softib/fabric/light_host.h"
#include "softib/sm/mad_port.h"
#include "softib/sm/partitions.h"

namespace softib::softibd {

// The MadPort over one light host's port (exposed for tests).
std::unique_ptr<sm::MadPort> MakeLightHostMadPort(fabric::LightHost* host, uint8_t port);

class InternalSm {
 public:
  struct Options {
    bool verify_lfts = false;  // read every LFT back before checking the routes
    std::string summary_path;  // where each sweep's summary line is written ("": nowhere)
    sm::PartitionConfig partitions = sm::DefaultPartitionConfig();  // --sm-partitions
  };
  InternalSm(fabric::LightHost* host, Options options);
  ~InternalSm() { Stop(); }
  InternalSm(const InternalSm&) = delete;
  InternalSm& operator=(const InternalSm&) = delete;

  void Start();
  void Stop();

 private:
  void Run();

  fabric::LightHost* host_;
  Options options_;
  std::unique_ptr<sm::MadPort> port_;
  std::atomic<bool> stop_{false};  // what SubnetManager::Run polls between its waits
  std::thread thread_;
};

}  // namespace softib::softibd
