// The HCA's DMA engine: the only path by which it touches a consumer's memory. Every
// access is preceded by a memory-region check (mr.h); an accessor itself only moves bytes.
//   MemcpyDma     memory of this process (kernel clients, in-process tests): memcpy
//   ProcessVmDma  memory of another process (user clients): process_vm_readv/writev
//   PhysRangesDma kernel buffers of this process laid end to end (physical registrations)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

namespace softib::hca {

class DmaAccessor {
 public:
  virtual ~DmaAccessor() = default;
  // Copy between the address space behind this accessor and `data`. False when any part
  // of the range could not be transferred (the data may then be partly transferred).
  virtual bool Read(uint64_t addr, std::span<uint8_t> data) = 0;
  virtual bool Write(uint64_t addr, std::span<const uint8_t> data) = 0;
  // True when each transfer has a fixed cost worth amortising (a system call): the
  // responder then combines consecutive writes (write_combiner.h).
  virtual bool CombinesWrites() const { return false; }
  // The bytes at `addr` as memory of this process, when the accessor's address space is
  // this process's own (MemcpyDma): the requester then builds packets straight from them
  // instead of gathering a copy first. nullptr otherwise.
  virtual const uint8_t* Direct(uint64_t /*addr*/) const { return nullptr; }
};

// Addresses are pointers of this process.
class MemcpyDma final : public DmaAccessor {
 public:
  bool Read(uint64_t addr, std::span<uint8_t> data) override;
  bool Write(uint64_t addr, std::span<const uint8_t> data) override;
  const uint8_t* Direct(uint64_t addr) const override {
    return reinterpret_cast<const uint8_t*>(addr);
  }
};

// Addresses are virtual addresses of process `pid` (needs ptrace rights over it: same user
// and Yama ptrace_scope permitting, or CAP_SYS_PTRACE).
class ProcessVmDma final : public DmaAccessor {
 public:
  explicit ProcessVmDma(pid_t pid) : pid_(pid) {}
  bool Read(uint64_t addr, std::span<uint8_t> data) override;
  bool Write(uint64_t addr, std::span<const uint8_t> data) override;
  bool CombinesWrites() const override { return true; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Memory of a physical registration (IBAL ib_reg_phys): a list of kernel buffers of this
// process that form one region. Addresses are offsets into the ranges laid end to end, so
// the region's bytes may be discontiguous; a transfer that crosses a range's end continues
// at the next range's base, and one past the last range fails.
class PhysRangesDma final : public DmaAccessor {
 public:
  struct Range {
    uint64_t base;  // a pointer of this process
    uint64_t size;
  };
  explicit PhysRangesDma(std::vector<Range> ranges) : ranges_(std::move(ranges)) {}
  bool Read(uint64_t addr, std::span<uint8_t> data) override;
  bool Write(uint64_t addr, std::span<const uint8_t> data) override;

 private:
  // Calls copy(pointer, offset in data, bytes) for each piece of [addr, addr + length).
  template <typename Copy>
  bool Walk(uint64_t addr, uint64_t length, Copy copy) const;

  std::vector<Range> ranges_;
};

}  // namespace softib::hca
