#include "softib/rings/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace softib::rings {
namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

SharedMemory::~SharedMemory() { Reset(); }

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void SharedMemory::Reset() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  base_ = nullptr;
  size_ = 0;
}

bool SharedMemory::Create(const char* name, std::size_t size, SharedMemory* out,
                          std::string* error) {
  out->Reset();
  if (size == 0) {
    *error = "empty shared memory object";
    return false;
  }
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *error = Errno("memfd_create");
    return false;
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *error = Errno("sizing or sealing the memfd");
    close(fd);
    return false;
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = Errno("mmap");
    close(fd);
    return false;
  }
  out->fd_ = fd;
  out->base_ = base;
  out->size_ = size;
  return true;
}

bool SharedMemory::Map(int fd, SharedMemory* out, std::string* error) {
  out->Reset();
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    *error = Errno("fstat of the shared memory object");
    close(fd);
    return false;
  }
  if (static_cast<unsigned long long>(st.st_size) > static_cast<std::size_t>(-1) / 2) {
    *error = "shared memory object too large for this process";
    close(fd);
    return false;
  }
  std::size_t size = static_cast<std::size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = Errno("mmap");
    close(fd);
    return false;
  }
  out->fd_ = fd;
  out->base_ = base;
  out->size_ = size;
  return true;
}

}  // namespace softib::rings
