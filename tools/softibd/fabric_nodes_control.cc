// FabricNodes' control socket (run_dir/fabric.ctl): each request is carried out on the
// fabric's thread (FabricHost::Post), the only thread that touches the fabric's faults and
// the tunnel, while the socket's own thread waits for the answer.
#include <chrono>
#include <fstream>
#include <future>

#include "fabric_nodes.h"

namespace softib::softibd {

bool FabricNodes::StartControl(const std::string& run_dir, std::string* error) {
  if (tunnels_.active()) {
    const std::string path = run_dir + "/tunnel.port";
    std::ofstream file(path, std::ios::trunc);
    file << tunnels_.port() << "\n";
    if (!file.flush()) {
      *error = path + ": cannot write";
      return false;
    }
  }
  fabric::FabricHost* host = host_.get();
  FabricCommands* commands = commands_.get();
  return control_.Start(
      run_dir + "/" + kControlName,
      [host, commands](const std::vector<std::string>& args) -> std::string {
        auto answer = std::make_shared<std::promise<std::string>>();
        std::future<std::string> future = answer->get_future();
        host->Post([commands, args, answer] { answer->set_value(commands->Execute(args)); });
        if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
          return "error: the fabric's thread did not answer\n";
        return future.get();
      },
      error);
}

}  // namespace softib::softibd
