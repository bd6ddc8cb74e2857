// The client side of a softibd control socket (tools/softibd/control_socket.h): one request
// per connection, arguments each ended by a NUL byte, an answer whose first line is "ok" or
// "error: ...". Used by `softib fabric` (fabric.ctl) and `softib ipoib` (ipoib.ctl).
#pragma once

#include <string>
#include <vector>

namespace softib::tool {

// 0: the daemon answered ok (its text after the first line on stdout); 1: no daemon
// answered at `path` (`who` says what should be listening there); 2: the request was refused
// (the daemon's reason on stderr). Waits up to `timeout_ms` for the answer.
int ControlRequest(const std::string& path, const std::vector<std::string>& request,
                   const std::string& who, int timeout_ms);

}  // namespace softib::tool
