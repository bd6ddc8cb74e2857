// The run directory of one softibd: created if missing (mode 0700), locked for the
// daemon's lifetime so that a second softibd cannot take over its sockets, and the
// optional pid file.
#pragma once

#include <string>

namespace softib::softibd {

class RunDir {
 public:
  RunDir() = default;
  ~RunDir();  // releases the lock and removes the pid file
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // Creates (with parents) and locks `path`; false with `error` set when it cannot, or
  // when another softibd holds it.
  bool Acquire(const std::string& path, std::string* error);
  // Writes this process's pid to `path` (removed again at destruction).
  bool WritePidFile(const std::string& path, std::string* error);

  const std::string& path() const { return path_; }
  static constexpr const char* kLockName = "softibd.lock";

 private:
  std::string path_;
  std::string lock_path_;
  std::string pidfile_;
  int lock_fd_ = -1;
};

}  // namespace softib::softibd
