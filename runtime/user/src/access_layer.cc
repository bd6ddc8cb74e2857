// OpenAl / OpenCaByGuid: the simple-name open and the CA redirect (see the header).
#include "softib/user/access_layer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_ca_proxy.h"

namespace softib::user {

std::string DefaultRunDir() {
  if (const char* dir = std::getenv("SOFTIB_RUN_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/softib";
  }
  return "/tmp/softib-" + std::to_string(getuid());
}

uint64_t DmaAddressOffset() {
  if constexpr (sizeof(void*) != 4) return 0;
  const char* base = std::getenv("QEMU_GUEST_BASE");
  if (base == nullptr || *base == '\0') return 0;
  // qemu's own reading of it (strtol, base 0, trailing text ignored), so both agree.
  return static_cast<uint64_t>(std::strtoll(base, nullptr, 0));
}

Status QueryFileAl(DeviceHandle device, abi::Handle<abi::ObjectType::Al>* al) {
  abi::GetFileAlIn in{};
  in.dma_address_offset = DmaAddressOffset();
  abi::GetFileAlOut out{};
  const Status status = proxy::GetFileAl(device, in, out);
  if (status == Status::SUCCESS) *al = out.al;
  return status;
}

Status OpenAl(const char* run_dir, AlFile* al) {
  AlFile opened;
  opened.run_dir =
      (run_dir != nullptr && *run_dir != '\0') ? std::string(run_dir) : DefaultRunDir();
  const std::string path = opened.run_dir + "/" + kAlDeviceName;
  Status status = OpenDevice(path.c_str(), &opened.device);
  if (status != Status::SUCCESS) return status;
  status = QueryFileAl(opened.device, &opened.al);
  if (status != Status::SUCCESS) {
    CloseDevice(opened.device);
    return status;
  }
  *al = std::move(opened);
  return Status::SUCCESS;
}

Status CloseAl(AlFile* al) {
  if (al->device == nullptr) return Status::INVALID_PARAMETER;
  const Status status = CloseDevice(al->device);
  al->device = nullptr;
  al->al = {};
  return status;
}

namespace {

// The device path ResolveCaDevice names, made absolute: a relative one is under the node's
// run directory.
bool DevicePathOf(const abi::ResolveCaDeviceOut& out, const std::string& run_dir,
                  std::string* path) {
  const size_t limit = sizeof(out.device_path);
  const auto* bytes = reinterpret_cast<const char*>(out.device_path);
  const size_t length = out.path_length != 0 ? out.path_length : strnlen(bytes, limit);
  if (length == 0 || length > limit) return false;
  std::string name(bytes, length);
  if (name.find('\0') != std::string::npos) return false;
  *path = name.front() == '/' ? name : run_dir + "/" + name;
  return true;
}

}  // namespace

Status OpenCaByGuid(const AlFile& al, uint64_t ca_guid, uint64_t context, CaFile* ca) {
  abi::ResolveCaDeviceIn resolve_in{};
  resolve_in.al = al.al;
  resolve_in.ca_guid = ca_guid;
  abi::ResolveCaDeviceOut resolve_out{};
  Status status = proxy::ResolveCaDevice(al.device, resolve_in, resolve_out);
  if (status != Status::SUCCESS) return status;
  std::string path;
  if (!DevicePathOf(resolve_out, al.run_dir, &path)) return Status::ERROR;

  CaFile opened;
  opened.ca_guid = ca_guid;
  status = OpenDevice(path.c_str(), &opened.device);
  if (status != Status::SUCCESS) return status == Status::NOT_FOUND ? Status::CA_REMOVED : status;
  status = QueryFileAl(opened.device, &opened.al);
  if (status == Status::SUCCESS) {
    abi::OpenCaIn open_in{};
    open_in.al = opened.al;
    open_in.ca_guid = ca_guid;
    open_in.context = context;
    abi::OpenCaOut open_out{};
    status = proxy::OpenCa(opened.device, open_in, open_out);
    opened.ca = open_out.ca;
  }
  if (status != Status::SUCCESS) {
    CloseDevice(opened.device);
    return status;
  }
  *ca = opened;
  return Status::SUCCESS;
}

Status CloseCaFile(CaFile* ca) {
  if (ca->device == nullptr) return Status::INVALID_PARAMETER;
  abi::CloseCaIn in{};
  in.ca = ca->ca;
  const Status status = proxy::CloseCa(ca->device, in);
  if (status != Status::SUCCESS) return status;
  CloseDevice(ca->device);
  *ca = CaFile{};
  return Status::SUCCESS;
}

}  // namespace softib::user
