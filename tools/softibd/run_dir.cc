#include "run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace softib::softibd {

RunDir::~RunDir() {
  if (!pidfile_.empty()) unlink(pidfile_.c_str());
  // The lock file stays: unlinking it would let a starting daemon lock a stale inode.
  if (lock_fd_ >= 0) close(lock_fd_);
}

bool RunDir::Acquire(const std::string& path, std::string* error) {
  std::error_code ec;
  // Only its owner may reach the node's sockets (an existing directory keeps its mode).
  if (std::filesystem::create_directories(path, ec)) chmod(path.c_str(), 0700);
  if (ec) {
    *error = "cannot create run directory " + path + ": " + ec.message();
    return false;
  }
  if (!std::filesystem::is_directory(path, ec)) {
    *error = "run directory " + path + " is not a directory";
    return false;
  }
  const std::string lock_path = path + "/" + kLockName;
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot open " + lock_path + ": " + std::strerror(errno);
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *error = "another softibd serves " + path;
    close(fd);
    return false;
  }
  path_ = path;
  lock_path_ = lock_path;
  lock_fd_ = fd;
  return true;
}

bool RunDir::WritePidFile(const std::string& path, std::string* error) {
  std::ofstream out(path, std::ios::trunc);
  out << getpid() << "\n";
  out.close();
  if (!out) {
    *error = "cannot write pid file " + path;
    return false;
  }
  pidfile_ = path;
  return true;
}

}  // namespace softib::softibd
