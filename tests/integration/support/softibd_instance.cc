#include "softibd_instance.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>

namespace softib::integration {

namespace {
constexpr int kReadyFd = 3;
}

SoftibdInstance::SoftibdInstance() {
  std::string pattern = std::filesystem::temp_directory_path() / "softib-it-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  base_dir_ = pattern;
  run_dir_ = base_dir_ + "/run";
}

SoftibdInstance::~SoftibdInstance() {
  if (running_) Stop(SIGKILL);
  std::error_code ec;
  std::filesystem::remove_all(base_dir_, ec);
}

bool SoftibdInstance::Start(const std::string& binary, const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {binary, "--run-dir", run_dir_, "--ready-fd",
                                   std::to_string(kReadyFd)};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  if (!process_.Start(argv, kReadyFd)) return false;
  running_ = true;
  std::string line;
  return process_.ReadExtraLine(&line, kStartLimit) && line == "ready";
}

int SoftibdInstance::Stop(int signal_number) {
  if (!running_) return -1;
  process_.Signal(signal_number);
  const int code = process_.Wait(kStopLimit);
  if (code < 0) {
    process_.Signal(SIGKILL);
    process_.Wait(kStopLimit);
  }
  running_ = false;
  output_ = process_.ReadAllStdout(std::chrono::seconds(1));
  return code;
}

}  // namespace softib::integration
