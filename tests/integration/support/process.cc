#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>
#include <utility>

#include "tied_child.h"

namespace softib::integration {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Reads what is available into `buffered`; false at EOF, error or timeout.
bool Fill(int fd, std::string* buffered, Clock::time_point deadline) {
  pollfd p{fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, RemainingMs(deadline));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return false;
  char chunk[4096];
  ssize_t n;
  do {
    n = read(fd, chunk, sizeof chunk);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  buffered->append(chunk, static_cast<size_t>(n));
  return true;
}

}  // namespace

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {stdin_fd_, stdout_.fd, stderr_.fd, extra_.fd}) {
    if (fd >= 0) close(fd);
  }
}

bool Process::Start(const std::vector<std::string>& argv, int extra_fd_target) {
  int in[2], out[2], err[2], extra[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return false;
  }
  if (extra_fd_target >= 0 && pipe2(extra, O_CLOEXEC) != 0) return false;
  std::vector<std::pair<int, int>> dups = {{in[0], 0}, {out[1], 1}, {err[1], 2}};
  if (extra_fd_target >= 0) dups.emplace_back(extra[1], extra_fd_target);
  // Tied to this thread: the child gets SIGKILL when the test dies, however it dies.
  pid_ = test_support::SpawnTied(argv, dups);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (extra[1] >= 0) close(extra[1]);
  stdin_fd_ = in[1];
  stdout_.fd = out[0];
  stderr_.fd = err[0];
  extra_.fd = extra[0];
  return pid_ > 0;
}

bool Process::ReadLineFrom(Stream& stream, std::string* line, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const size_t newline = stream.buffered.find('\n');
    if (newline != std::string::npos) {
      *line = stream.buffered.substr(0, newline);
      stream.buffered.erase(0, newline + 1);
      return true;
    }
    if (stream.fd < 0 || !Fill(stream.fd, &stream.buffered, deadline)) return false;
  }
}

std::string Process::ReadAll(Stream& stream, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (stream.fd >= 0 && Fill(stream.fd, &stream.buffered, deadline)) {
  }
  std::string all;
  all.swap(stream.buffered);
  return all;
}

bool Process::ReadLine(std::string* line, std::chrono::milliseconds limit) {
  return ReadLineFrom(stdout_, line, limit);
}
bool Process::ReadExtraLine(std::string* line, std::chrono::milliseconds limit) {
  return ReadLineFrom(extra_, line, limit);
}
bool Process::ReadUntil(const std::string& what, std::string* transcript,
                        std::chrono::milliseconds per_line) {
  std::string line;
  while (ReadLine(&line, per_line)) {
    *transcript += line + "\n";
    if (line.find(what) != std::string::npos) return true;
  }
  return false;
}

std::string Process::ReadAllStdout(std::chrono::milliseconds limit) {
  return ReadAll(stdout_, limit);
}
std::string Process::ReadAllStderr(std::chrono::milliseconds limit) {
  return ReadAll(stderr_, limit);
}

bool Process::WriteStdin(const std::string& text) {
  return write(stdin_fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

int Process::Wait(std::chrono::milliseconds limit) {
  if (reaped_) return exit_code_;
  if (pid_ <= 0) return -1;
  const auto deadline = Clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool Process::Signal(int signal_number) {
  return pid_ > 0 && !reaped_ && kill(pid_, signal_number) == 0;
}

namespace {

// Whether the kernel execs `binary` itself (IA32 emulation): softib_verbs_client without
// arguments prints its usage and exits 2.
bool KernelRuns(const std::string& binary) {
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) return false;
  const pid_t pid = test_support::SpawnTied({binary}, {{null, 1}, {null, 2}});
  close(null);
  if (pid <= 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 2;
}

}  // namespace

std::vector<std::string> M32Command(const std::string& binary) {
  // Natively whenever the kernel can (fastest). Under qemu-i386 the guest's addresses are
  // host addresses minus qemu's guest base: the HCA reaches the process's memory
  // (process_vm_readv/writev) only when it knows that base, so qemu gets a fixed one by the
  // environment, which it also hands on to the guest (runtime/user: DmaAddressOffset).
  const char* emulator = std::getenv("SOFTIB_M32_EMULATOR");
  if (emulator == nullptr) {
    emulator =
        !KernelRuns(binary) && access("/usr/bin/qemu-i386", X_OK) == 0 ? "/usr/bin/qemu-i386" : "";
  }
  std::vector<std::string> command;
  if (*emulator != '\0') {
    command = {"/usr/bin/env", std::string("QEMU_GUEST_BASE=") + kM32GuestBase, emulator};
  }
  command.push_back(binary);
  return command;
}

}  // namespace softib::integration
