#include "user_backend.h"

namespace softib::perf {

std::unique_ptr<Backend> MakeUserBackend(const std::string& run_dir, bool busy_poll) {
  return std::make_unique<UserBackend>(run_dir, busy_poll);
}

}  // namespace softib::perf
