// Helpers of the tshark interop tests: run a command, and the options that keep tshark's
// heuristic payload dissectors off our arbitrary payload bytes.
#pragma once

#include <cstdio>
#include <string>

namespace softib::hca::testing {

inline std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  pclose(pipe);
  return out;
}

// Our payloads are arbitrary bytes: turn off the protocols tshark tries heuristically on
// InfiniBand payloads (EoIB, SDP, iSER...), whose misfiring would say nothing of our headers.
inline std::string NoPayloadHeuristics(const std::string& home) {
  std::string options, line;
  for (char c : RunCommand("HOME=" + home + " tshark -G heuristic-decodes 2>/dev/null")) {
    if (c != '\n') {
      line += c;
      continue;
    }
    const std::size_t tab = line.find('\t');
    if (line.rfind("infiniband", 0) == 0 && tab != std::string::npos) {
      const std::size_t end = line.find('\t', tab + 1);
      options += " --disable-protocol " + line.substr(tab + 1, end - tab - 1);
    }
    line.clear();
  }
  return options;
}

}  // namespace softib::hca::testing
