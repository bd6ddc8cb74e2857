// Child processes that die with the test that started them: however the test ends (a
// failed assertion, a crash, ASan aborting it, SIGKILL from a timeout), each child gets
// SIGKILL from the kernel (PR_SET_PDEATHSIG), so no softibd, ibsim or client outlives it.
//
// The parent-death signal fires when the *thread* that forked exits, not only the process:
// fork from a thread that outlives the child (a test's main thread, or a harness thread
// that joins the child before it ends). It survives execve (the programs here are not
// set-uid), so it also covers whatever an exec'd wrapper (stdbuf, env, qemu-i386,
// ibsim-run) execs in turn.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace softib::test_support {

// In a child right after fork(): SIGKILL once `parent` (getpid() taken before the fork) is
// gone; exits at once when it is already gone (it died between the fork and the prctl).
// Async-signal-safe.
inline void DieWithParent(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
}

// fork + exec of argv[0] (a path; searched on $PATH when `search_path`) with the parent's
// environment, tied to the calling thread by DieWithParent. `dups` are dup2(from, to) in
// the child, in order (for its stdin/stdout/stderr or an extra descriptor); every other
// descriptor keeps its close-on-exec flag. Returns the pid, or -1 with errno set when the
// fork or the exec failed (as posix_spawn reports it).
inline pid_t SpawnTied(const std::vector<std::string>& args,
                       const std::vector<std::pair<int, int>>& dups = {},
                       bool search_path = false) {
  if (args.empty()) {
    errno = EINVAL;
    return -1;
  }
  // Everything the child needs is built before the fork: after it, only async-signal-safe
  // calls.
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  int report[2];  // the exec's errno, or EOF once the exec succeeded (close-on-exec)
  if (pipe2(report, O_CLOEXEC) != 0) return -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    errno = error;
    return -1;
  }
  if (pid == 0) {
    close(report[0]);
    DieWithParent(parent);
    for (const auto& [from, to] : dups) {
      if (from == to) {
        const int flags = fcntl(from, F_GETFD);
        if (flags < 0 || fcntl(from, F_SETFD, flags & ~FD_CLOEXEC) != 0) _exit(127);
      } else if (dup2(from, to) < 0) {
        _exit(127);
      }
    }
    if (search_path) {
      execvp(argv[0], argv.data());
    } else {
      execve(argv[0], argv.data(), environ);
    }
    const int error = errno;
    ssize_t ignored = write(report[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  int error = 0;
  ssize_t n;
  do {
    n = read(report[0], &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    errno = error;
    return -1;
  }
  return pid;
}

}  // namespace softib::test_support
