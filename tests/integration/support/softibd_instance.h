// A softibd started as a real process on a fresh mkdtemp run directory, ready once it
// said so on its --ready-fd, stopped by pid (SIGTERM) with a bounded wait.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "process.h"

namespace softib::integration {

class SoftibdInstance {
 public:
  SoftibdInstance();   // creates the run directory
  ~SoftibdInstance();  // stops the daemon if running, removes the run directory

  // Starts `binary` with --run-dir, --ready-fd and `extra_args`; true once ready.
  bool Start(const std::string& binary, const std::vector<std::string>& extra_args = {});
  // SIGTERM (or `signal_number`) and the exit code (-1: it did not exit in time).
  int Stop(int signal_number = 15);

  const std::string& run_dir() const { return run_dir_; }
  // With --fabric: host-000N's node directory (N 1..9, as the default fabric names them).
  std::string host_dir(int n) const { return run_dir_ + "/host-000" + std::to_string(n); }
  Process& process() { return process_; }
  // What the daemon printed (available after Stop).
  const std::string& output() const { return output_; }

  static constexpr std::chrono::seconds kStartLimit{15};
  static constexpr std::chrono::seconds kStopLimit{15};

 private:
  std::string base_dir_;  // the mkdtemp directory
  std::string run_dir_;   // a child of it, so that softibd creates it
  Process process_;
  bool running_ = false;
  std::string output_;
};

}  // namespace softib::integration
