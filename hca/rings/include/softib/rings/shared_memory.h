// A shared memory object for speed-path rings: a memfd the HCA creates and seals (so the
// process it is shared with can neither shrink it under the HCA, which would turn the
// HCA's next access into SIGBUS, nor grow it), mapped MAP_SHARED on both sides. The fd
// travels to the process by SCM_RIGHTS; the process maps it with Map().
#pragma once

#include <cstddef>
#include <string>

namespace softib::rings {

class SharedMemory {
 public:
  SharedMemory() = default;
  ~SharedMemory();
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  // Creates a zero-filled, size-sealed memfd of `size` bytes and maps it.
  static bool Create(const char* name, std::size_t size, SharedMemory* out, std::string* error);
  // Maps an fd received from the HCA (takes ownership of `fd`, also on failure). The size is
  // the object's; a process cannot make it lie because the HCA sealed it.
  static bool Map(int fd, SharedMemory* out, std::string* error);

  void* base() const { return base_; }
  std::size_t size() const { return size_; }
  // The memfd (to send by SCM_RIGHTS); owned by this object.
  int fd() const { return fd_; }
  bool valid() const { return base_ != nullptr; }
  void Reset();

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace softib::rings
