// CA verbs: GetCaGuids, OpenCa, QueryCa, the GID and P_Key tables, CloseCa.
#include <endian.h>

#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

// The CA of an open, or null once the AL has announced its removal: its clients may ask
// at once, while the HCA below is still finishing its own removal and would answer.
AlCa* LiveCa(kernel::ObjectRef& ca_ref) {
  AlCa* ca = As<CaObj>(ca_ref)->ca.get();
  return ca->removed.load() ? nullptr : ca;
}

class CaVerbs final : public kernel::CaVerbHandlers {
 public:
  Status GetCaGuids(const kernel::CallContext& ctx, const abi::GetCaGuidsIn&,
                    kernel::GetCaGuidsRefs&, abi::GetCaGuidsOut& out, std::span<uint64_t> ca_guids,
                    Irp*) override {
    const auto cas = InstanceOf(ctx)->al->Cas();
    out.num_cas = static_cast<uint32_t>(cas.size());
    for (std::size_t i = 0; i < cas.size() && i < ca_guids.size(); ++i) {
      ca_guids[i] = htobe64(cas[i]->guid);
    }
    return cas.size() <= ca_guids.size() ? Status::SUCCESS : Status::INSUFFICIENT_MEMORY;
  }

  Status OpenCa(const kernel::CallContext& ctx, const abi::OpenCaIn& in, kernel::OpenCaRefs& refs,
                abi::OpenCaOut& out, Irp*) override {
    Instance* instance = InstanceOf(ctx);
    const uint64_t guid = be64toh(in.ca_guid);
    std::shared_ptr<AlCa> ca;
    if (instance->bound_ca != nullptr) {
      // A CA file opens its own CA only.
      if (instance->bound_ca->guid != guid) return Status::INVALID_GUID;
      if (instance->bound_ca->removed.load()) return Status::CA_REMOVED;
      ca = instance->bound_ca;
    } else {
      ca = instance->al->FindCa(guid);
      if (ca == nullptr) return Status::INVALID_GUID;
    }
    auto* object = new CaObj(instance, ca, in.context);
    if (!Adopt(object, refs.al.get())) {
      kernel::DereferenceObject(object);
      return Status::INVALID_AL_HANDLE;
    }
    object->al_obj = As<AlObj>(refs.al);
    {
      kernel::SpinLockGuard guard(ca->lock);
      ca->opens.insert(object);
    }
    return Publish(instance, object, &out.ca.value);
  }

  Status QueryCa(const kernel::CallContext&, const abi::QueryCaIn&, kernel::QueryCaRefs& refs,
                 abi::QueryCaOut& out, std::span<abi::PortAttributes> ports, Irp*) override {
    AlCa* ca = LiveCa(refs.ca);
    if (ca == nullptr) return Status::CA_REMOVED;
    const Status status = ca->ci->QueryCa(&out.attributes, ports);
    if (status != Status::SUCCESS) return status;
    out.num_ports = ca->ci->num_ports();
    return out.num_ports <= ports.size() ? Status::SUCCESS : Status::INSUFFICIENT_MEMORY;
  }

  Status QueryGidTable(const kernel::CallContext&, const abi::QueryGidTableIn& in,
                       kernel::QueryGidTableRefs& refs, abi::QueryGidTableOut& out,
                       std::span<abi::Gid> gids, Irp*) override {
    AlCa* ca = LiveCa(refs.ca);
    if (ca == nullptr) return Status::CA_REMOVED;
    return ca->ci->QueryGidTable(in.port_num, in.start_index, gids, &out.num_gids);
  }

  Status QueryPkeyTable(const kernel::CallContext&, const abi::QueryPkeyTableIn& in,
                        kernel::QueryPkeyTableRefs& refs, abi::QueryPkeyTableOut& out,
                        std::span<uint16_t> pkeys, Irp*) override {
    AlCa* ca = LiveCa(refs.ca);
    if (ca == nullptr) return Status::CA_REMOVED;
    return ca->ci->QueryPkeyTable(in.port_num, in.start_index, pkeys, &out.num_pkeys);
  }

  Status ModifyCa(const kernel::CallContext&, const abi::ModifyCaIn& in, kernel::ModifyCaRefs& refs,
                  Irp*) override {
    CaObj* obj = As<CaObj>(refs.ca);
    if (LiveCa(refs.ca) == nullptr) return Status::CA_REMOVED;
    const Status s = obj->ca->ci->ModifyCa(in.port_num, in.flags, in.cap_set, in.cap_clear,
                                           in.init_type, in.system_image_guid);
    // Remembered per open: its close clears the IsSM it set (objects.cc).
    using C = abi::PortCapabilities;
    if (s == Status::SUCCESS && abi::HasAny(in.flags, abi::ModifyCaFlags::PORT_CAPABILITIES) &&
        in.port_num < 32) {
      const uint32_t bit = 1u << in.port_num;
      if (abi::HasAny(in.cap_clear, C::IS_SM))
        obj->is_sm_ports.fetch_and(~bit);
      else if (abi::HasAny(in.cap_set, C::IS_SM))
        obj->is_sm_ports.fetch_or(bit);
    }
    return s;
  }

  Status CloseCa(const kernel::CallContext& ctx, const abi::CloseCaIn& in, kernel::CloseCaRefs&,
                 Irp*) override {
    return DestroyHandle(ctx, in.ca.value, abi::ObjectType::Ca, Status::INVALID_CA_HANDLE);
  }

  Status CiCall(const kernel::CallContext&, const abi::CiCallIn&, std::span<const uint8_t>,
                kernel::CiCallRefs&, abi::CiCallOut&, std::span<uint8_t>, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status LocalMad(const kernel::CallContext&, const abi::LocalMadIn& in, kernel::LocalMadRefs& refs,
                  abi::LocalMadOut& out, Irp*) override {
    // The port's SMA/PMA in the HCA answer it (hca/device sma.cc, pma.cc).
    return As<CaObj>(refs.ca)->ca->ci->LocalMad(in.port_num, in.request, out.response);
  }
};

}  // namespace

kernel::CaVerbHandlers* CaHandlers() {
  static CaVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
