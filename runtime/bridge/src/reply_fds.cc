// The IRPs the bridge sent and the descriptors their drivers attached. One table for the
// process, keyed by IRP: an IRP belongs to one node, and nodes never share IRPs.
#include "softib/bridge/reply_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <mutex>
#include <unordered_map>

namespace softib::bridge {
namespace {

struct Attached {
  std::array<int, kMaxReplyFds> fds{};
  std::size_t count = 0;
};

struct Table {
  std::mutex mutex;
  std::unordered_map<const kernel::Irp*, Attached> irps;
};

Table& table() {
  static Table* const instance = new Table;  // never destroyed: IRPs may outlive statics
  return *instance;
}

}  // namespace

void RegisterReplyIrp(const kernel::Irp* irp) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.irps.emplace(irp, Attached{});
}

bool AttachReplyFds(kernel::Irp* irp, std::span<const int> fds) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.irps.find(irp);
  if (it == t.irps.end() || it->second.count + fds.size() > kMaxReplyFds) return false;
  std::array<int, kMaxReplyFds> copies{};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    copies[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
    if (copies[i] < 0) {
      for (std::size_t j = 0; j < i; ++j) close(copies[j]);
      return false;
    }
  }
  for (std::size_t i = 0; i < fds.size(); ++i) it->second.fds[it->second.count++] = copies[i];
  return true;
}

void TakeReplyFds(const kernel::Irp* irp, int* fds, std::size_t* count) {
  *count = 0;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.irps.find(irp);
  if (it == t.irps.end()) return;
  for (std::size_t i = 0; i < it->second.count; ++i) fds[i] = it->second.fds[i];
  *count = it->second.count;
  t.irps.erase(it);
}

}  // namespace softib::bridge
