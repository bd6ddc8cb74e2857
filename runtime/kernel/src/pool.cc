#include "softib/kernel/pool.h"

#include <cstdlib>

#include "softib/kernel/irql.h"

namespace softib::kernel {

void* ExAllocatePaged(std::size_t size) {
  VerifyBlockingAllowed("ExAllocatePaged");
  return std::calloc(1, size == 0 ? 1 : size);  // glibc: 16-byte aligned on 64-bit
}

void* ExAllocateNonPaged(std::size_t size) { return std::calloc(1, size == 0 ? 1 : size); }

void ExFreePool(void* block) { std::free(block); }

}  // namespace softib::kernel
