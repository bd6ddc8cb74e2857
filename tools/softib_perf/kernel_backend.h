// The kernel-client backend: a node booted in this process (runtime/stack: kernel, HCA
// driver with two CAs cabled back to back, Access Layer) and, per side of a test, a driver
// of its own that opens the AL (IbOpenAl) and calls the verbs directly. The HCA moves the
// data with memcpy: the path kernel ULPs (IPoIB, SRP, SDP) take.
#pragma once

#include <memory>
#include <string>

#include "backend.h"

namespace softib::stack {
class NodeStack;
}

namespace softib::perf {

class InProcessNode {
 public:
  // Boots the default node (two CAs, port 1 of each cabled to the other); nullptr and
  // `error` on failure.
  static std::unique_ptr<InProcessNode> Boot(const std::string& name, std::string* error);
  ~InProcessNode();

  // A kernel client of this node's AL, with a driver and device named after `client_name`
  // (unique per node). The backend must be destroyed before the node.
  std::unique_ptr<Backend> MakeClient(const std::string& client_name, bool busy_poll,
                                      std::string* error);

 private:
  InProcessNode() = default;
  std::unique_ptr<stack::NodeStack> stack_;
};

struct Options;
struct RunReport;

// Both sides of `options` (client options; the server takes the node's other CA) between
// two kernel clients of `node`, the server on a thread of its own. False and `error`
// (naming the side that failed) unless both succeeded; `client_report` holds the rows.
bool RunInProcess(InProcessNode& node, const Options& options, RunReport* client_report,
                  RunReport* server_report, std::string* error);

}  // namespace softib::perf
