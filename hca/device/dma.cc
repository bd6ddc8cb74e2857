#include "hca/device/dma.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace softib::hca {

bool MemcpyDma::Read(uint64_t addr, std::span<uint8_t> data) {
  if (!data.empty()) std::memcpy(data.data(), reinterpret_cast<const void*>(addr), data.size());
  return true;
}

bool MemcpyDma::Write(uint64_t addr, std::span<const uint8_t> data) {
  if (!data.empty()) std::memcpy(reinterpret_cast<void*>(addr), data.data(), data.size());
  return true;
}

template <typename Copy>
bool PhysRangesDma::Walk(uint64_t addr, uint64_t length, Copy copy) const {
  uint64_t done = 0;
  uint64_t start = 0;  // the first region offset of the current range
  for (const Range& range : ranges_) {
    if (done == length) break;
    const uint64_t at = addr + done;
    if (at < start + range.size) {
      const uint64_t offset = at - start;
      const uint64_t n = std::min(range.size - offset, length - done);
      copy(range.base + offset, done, n);
      done += n;
    }
    start += range.size;
  }
  return done == length;
}

bool PhysRangesDma::Read(uint64_t addr, std::span<uint8_t> data) {
  return Walk(addr, data.size(), [&](uint64_t pointer, uint64_t offset, uint64_t n) {
    std::memcpy(data.data() + offset, reinterpret_cast<const void*>(pointer), n);
  });
}

bool PhysRangesDma::Write(uint64_t addr, std::span<const uint8_t> data) {
  return Walk(addr, data.size(), [&](uint64_t pointer, uint64_t offset, uint64_t n) {
    std::memcpy(reinterpret_cast<void*>(pointer), data.data() + offset, n);
  });
}

namespace {

// process_vm_* may transfer less than asked (it stops at the first unmapped page of the
// remote range); loop until done or no progress.
template <typename Call>
bool TransferAll(uint64_t addr, uint8_t* local, std::size_t size, Call&& call) {
  std::size_t done = 0;
  while (done < size) {
    iovec mine{local + done, size - done};
    iovec theirs{reinterpret_cast<void*>(addr + done), size - done};
    const ssize_t n = call(&mine, &theirs);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool ProcessVmDma::Read(uint64_t addr, std::span<uint8_t> data) {
  return TransferAll(addr, data.data(), data.size(), [&](iovec* mine, iovec* theirs) {
    return process_vm_readv(pid_, mine, 1, theirs, 1, 0);
  });
}

bool ProcessVmDma::Write(uint64_t addr, std::span<const uint8_t> data) {
  // process_vm_writev only reads the local iovec; the cast does not write through it.
  return TransferAll(
      addr, const_cast<uint8_t*>(data.data()), data.size(),
      [&](iovec* mine, iovec* theirs) { return process_vm_writev(pid_, mine, 1, theirs, 1, 0); });
}

}  // namespace softib::hca
