// Running the real ibsim and the real tools under ibsim-run from tests and benches: child
// processes with their own environment and working directory (umad2sim writes its fake
// sysfs tree into the working directory), stdout captured, stopped only by their PID.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tied_child.h"

namespace softib::sm::testing {

inline bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// ibsim binds "<name>:ctl" (abstract, the address length counts a trailing NUL, which
// /proc/net/unix shows as a second '@') only once it is ready for clients.
inline bool SocketBound(const std::string& name) {
  std::ifstream unix_sockets("/proc/net/unix");
  const std::string want = "@" + name + ":ctl@";
  for (std::string line; std::getline(unix_sockets, line);)
    if (line.size() >= want.size() &&
        line.compare(line.size() - want.size(), want.size(), want) == 0)
      return true;
  return false;
}

class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& cwd,
        const std::map<std::string, std::string>& env, const std::string& stderr_file = "") {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      test_support::DieWithParent(parent);  // no ibsim or tool outlives the test
      ::dup2(fds[1], 1);
      if (stderr_file.empty()) {
        ::dup2(fds[1], 2);
      } else {
        const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (err < 0) ::_exit(125);
        ::dup2(err, 2);
      }
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_fd_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    Stop();
    if (out_fd_ >= 0) ::close(out_fd_);
  }
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Reads output until it holds `marker`, the pipe closes, or a generous safety deadline
  // (not a timing check) passes.
  bool WaitFor(const std::string& marker, int limit_ms = 120000) {
    for (int waited_ms = 0; waited_ms < limit_ms;) {
      if (output_.find(marker) != std::string::npos) return true;
      pollfd p{out_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) == 0) {
        waited_ms += 100;
        continue;
      }
      if (!ReadSome()) return output_.find(marker) != std::string::npos;
    }
    return false;
  }

  // Waits for the process to exit; its exit status, or -1.
  int Wait() {
    while (ReadSome()) {
    }
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // SIGTERM to this child by PID, then reap it.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_fd_ >= 0) {
      ::fcntl(out_fd_, F_SETFL, ::fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
      while (ReadSome()) {
      }
    }
  }

  const std::string& output() const { return output_; }
  int signal() const { return signal_; }  // the signal that ended it, after Wait()

 private:
  bool ReadSome() {
    char buf[65536];
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int signal_ = 0;
  int out_fd_ = -1;
  std::string output_;
};

// One ibsim on `topology_file` with its own socket name, started with -n (no console).
class Ibsim {
 public:
  Ibsim(const std::string& topology_file, const std::string& dir, const std::string& sockname,
        std::vector<std::string> extra_args = {})
      : env_{{"IBSIM_SOCKNAME", sockname}}, dir_(dir) {
    std::vector<std::string> argv = {"stdbuf", "-oL", "ibsim", "-s", "-n"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    argv.push_back(topology_file);
    sim_ = std::make_unique<Child>(argv, dir, env_);
    ready_ = sim_->started() && sim_->WaitFor("Network simulator ready");
    for (int i = 0; ready_ && i < 6000 && !SocketBound(sockname); ++i) ::usleep(10000);
    ready_ = ready_ && SocketBound(sockname);
  }
  bool ready() const { return ready_; }
  const std::string& log() const { return sim_->output(); }
  void Stop() { sim_->Stop(); }

  struct Run {
    int status = -1;
    std::string out;  // stdout only; stderr (umad2sim's "attached as client" line) is in err
    std::string err;
  };
  // `argv` under ibsim-run, in the test directory, to completion.
  Run Tool(std::vector<std::string> argv,
           const std::map<std::string, std::string>& extra_env = {}) const {
    argv.insert(argv.begin(), "ibsim-run");
    const std::string err_file = dir_ + "/tool.err";
    std::map<std::string, std::string> env = env_;
    env.insert(extra_env.begin(), extra_env.end());
    Child c(argv, dir_, env, err_file);
    Run r;
    r.status = c.Wait();
    r.out = c.output();
    std::ifstream in(err_file);
    std::stringstream s;
    s << in.rdbuf();
    r.err = s.str();
    return r;
  }
  // `argv` under ibsim-run, left running; `extra_env` such as SIM_HOST (the node to attach
  // to), `subdir` a working directory of its own under the test's (umad2sim's sysfs tree).
  std::unique_ptr<Child> Start(std::vector<std::string> argv,
                               const std::map<std::string, std::string>& extra_env = {},
                               const std::string& subdir = "") const {
    argv.insert(argv.begin(), "ibsim-run");
    std::map<std::string, std::string> env = env_;
    env.insert(extra_env.begin(), extra_env.end());
    std::string cwd = dir_;
    if (!subdir.empty()) {
      cwd += "/" + subdir;
      ::mkdir(cwd.c_str(), 0700);
    }
    return std::make_unique<Child>(argv, cwd, env, cwd + "/started.err");
  }

 private:
  std::map<std::string, std::string> env_;
  std::string dir_;
  std::unique_ptr<Child> sim_;
  bool ready_ = false;
};

}  // namespace softib::sm::testing
