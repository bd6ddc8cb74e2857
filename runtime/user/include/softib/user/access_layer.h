// The user Access Layer's entry points: what a program calls before the generated proxies
// (generated/user/*_proxy.h) take over. A node's devices listen in its run directory
// (tools/softibd); the AL is opened by its simple name there, and a CA by GUID, which the
// AL resolves to the CA's own device so that the CA's usage shows in its open files.
#pragma once

#include <cstdint>
#include <string>

#include "softib/abi/abi_objects.h"
#include "softib/user/device_io.h"

namespace softib::user {

// The AL device's simple name (the kernel's al::kAlDeviceName).
inline constexpr char kAlDeviceName[] = "ibal";

// Where the default node listens: $SOFTIB_RUN_DIR, else $XDG_RUNTIME_DIR/softib, else
// /tmp/softib-<uid>. softibd uses the same rule for its --run-dir default.
std::string DefaultRunDir();

// An open file of the AL device and the handle of its implicit Al object.
struct AlFile {
  DeviceHandle device = nullptr;
  abi::Handle<abi::ObjectType::Al> al{};
  std::string run_dir;
};

// An open CA: a file of the CA's own device, its implicit Al, and the CA opened on it.
// PD, CQ, QP, MR... of this CA are created through `device` and live in its handle table.
struct CaFile {
  DeviceHandle device = nullptr;
  abi::Handle<abi::ObjectType::Al> al{};
  abi::Handle<abi::ObjectType::Ca> ca{};
  uint64_t ca_guid = 0;  // network order, as the verbs carry it
};

// Opens the AL of the node in `run_dir` (nullptr or "": DefaultRunDir()). NOT_FOUND when
// no node listens there.
Status OpenAl(const char* run_dir, AlFile* al);
// Closes the AL file (the kernel destroys what it still owns).
Status CloseAl(AlFile* al);

// Opens the CA whose GUID (network order) is `ca_guid`: ResolveCaDevice on the AL file,
// open of the device it names (the redirect), then OpenCa there. `context` comes back in
// the CA's asynchronous events. On failure nothing stays open.
Status OpenCaByGuid(const AlFile& al, uint64_t ca_guid, uint64_t context, CaFile* ca);
// CloseCa, then closes the CA's file. RESOURCE_BUSY (and nothing closed) while objects
// created on the CA still exist.
Status CloseCaFile(CaFile* ca);

// The implicit Al of an open file (GetFileAl), which also tells the kernel
// DmaAddressOffset(): every open of the AL and of a CA comes through here.
Status QueryFileAl(DeviceHandle device, abi::Handle<abi::ObjectType::Al>* al);

// What the HCA adds to this process's addresses to reach its memory. Under qemu-i386 (a
// 32-bit process on a kernel without IA32 emulation) they are guest addresses, at host
// address + qemu's guest base: qemu takes that base from $QEMU_GUEST_BASE and hands its
// environment on to the guest, so the process reads it there (qemu's -B is invisible to it).
// 0 otherwise, and always in a 64-bit build (never a qemu-i386 guest; a variable meant for
// a 32-bit child must not move its transfers).
uint64_t DmaAddressOffset();

}  // namespace softib::user
