// Child processes for the integration tests: spawned with pipes on stdin/stdout(/stderr),
// lines read with a bounded wait, exits awaited with a bounded wait, stopped by pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace softib::integration {

class Process {
 public:
  Process() = default;
  ~Process();  // SIGKILLs and reaps a child still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Starts argv[0] (a path) with `argv`. `extra_fd_target` >= 0: the write end of a fresh
  // pipe is passed to the child as that descriptor number (ReadExtraLine reads it).
  bool Start(const std::vector<std::string>& argv, int extra_fd_target = -1);

  // One line (without '\n') from the child's stdout / extra pipe; false at EOF or timeout.
  bool ReadLine(std::string* line, std::chrono::milliseconds limit);
  bool ReadExtraLine(std::string* line, std::chrono::milliseconds limit);
  // Lines (each within `per_line`) appended to `transcript` until one contains `what`;
  // false at EOF or a timeout.
  bool ReadUntil(const std::string& what, std::string* transcript,
                 std::chrono::milliseconds per_line = std::chrono::seconds(30));
  // Everything the child writes to stdout/stderr until it closes them (bounded).
  std::string ReadAllStdout(std::chrono::milliseconds limit);
  std::string ReadAllStderr(std::chrono::milliseconds limit);
  bool WriteStdin(const std::string& text);

  // Exit code, or 128 + signal; -1 when it did not end within `limit`.
  int Wait(std::chrono::milliseconds limit);
  bool Signal(int signal_number);
  pid_t pid() const { return pid_; }

 private:
  struct Stream {
    int fd = -1;
    std::string buffered;
  };
  static bool ReadLineFrom(Stream& stream, std::string* line, std::chrono::milliseconds limit);
  static std::string ReadAll(Stream& stream, std::chrono::milliseconds limit);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  int stdin_fd_ = -1;
  Stream stdout_, stderr_, extra_;
};

// This build's m32 emulator rule: a 32-bit binary runs under qemu-i386 only when the kernel
// cannot exec it ($SOFTIB_M32_EMULATOR overrides; empty: exec directly). Under the emulator
// it gets the fixed guest base kM32GuestBase through $QEMU_GUEST_BASE, which the process's
// user library reads and states to the kernel, so the HCA reaches its memory.
std::vector<std::string> M32Command(const std::string& binary);
// Page aligned, with 4 GiB of host address space above it that nothing else maps (x86-64
// processes load far higher). The m32 test preset sets the same (CMakePresets.json).
inline constexpr char kM32GuestBase[] = "0x100000000";

}  // namespace softib::integration
