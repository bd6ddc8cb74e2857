// FabricNodes' control socket (run_dir/fabric.ctl): each request is carried out on the
// fabric's thread (FabricHost::Post), the only thread that touches the fabric's faults and
// the tunnel, while the socket's own thread waits for the answer — except a host's
// removal and return (fabric_nodes_hotplug.cc), run on the socket's thread.
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
  return control_.Start(
      run_dir + "/" + kControlName,
      [this](const std::vector<std::string>& args) -> std::string {
        // A host's removal waits for its node's drivers (PASSIVE work that may need the
        // fabric's thread to run meanwhile): it runs here and posts its cable changes.
        if (!args.empty() && (args[0] == "remove" || args[0] == "add")) {
          if (args.size() != 2) return "error: " + args[0] + " takes 1 argument: HOST\n";
          return args[0] == "remove" ? RemoveHost(args[1]) : AddHost(args[1]);
        }
        FabricCommands* commands = commands_.get();
        return OnFabricThread([commands, args] { return commands->Execute(args); });
      },
      error);
}

std::string FabricNodes::OnFabricThread(std::function<std::string()> request) {
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> future = answer->get_future();
  host_->Post([request = std::move(request), answer] { answer->set_value(request()); });
  if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
    return "error: the fabric's thread did not answer\n";
  return future.get();
}

}  // namespace softib::softibd
