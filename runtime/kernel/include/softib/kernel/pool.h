// Pool allocation. "Paged" memory may fault, so allocating it is a blocking operation
// (IRQL below DISPATCH, verifier); nonpaged allocation works at any IRQL. Both are
// zeroed and 16-byte aligned.
#pragma once

#include <cstddef>

namespace softib::kernel {

void* ExAllocatePaged(std::size_t size);
void* ExAllocateNonPaged(std::size_t size);
void ExFreePool(void* block);

}  // namespace softib::kernel
