// CA verbs: GetCaGuids, OpenCa, QueryCa, the GID and P_Key tables, CloseCa.
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "runtime/al/src/ci_call.h"
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

  Status QueryCa(const kernel::CallContext& ctx, const abi::QueryCaIn&, kernel::QueryCaRefs& refs,
                 abi::QueryCaOut& out, std::span<abi::PortAttributes> ports, Irp* irp) override {
    return QueryCaTask(InstanceOf(ctx), std::move(refs.ca), &out, ports).Start(irp);
  }

  static kernel::VerbTask QueryCaTask(Instance* instance, kernel::ObjectRef ca_ref,
                                      abi::QueryCaOut* out, std::span<abi::PortAttributes> ports) {
    AlCa* ca = LiveCa(ca_ref);
    if (ca == nullptr) co_return {Status::CA_REMOVED, sizeof(abi::QueryCaOut)};
    const CiRequestor who = RequestorOf(instance);
    const auto length = static_cast<uint32_t>(sizeof(abi::CiQueryCaOut) +
                                              ports.size() * sizeof(abi::PortAttributes));
    CiIrp ci(ca, kernel::BuildCiQueryCaIrp(ca->lower, who.file, who.mode, nullptr, length));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, sizeof(abi::QueryCaOut)};
    const Status status = co_await ci.Send();
    const auto* answer = ci.Output<abi::CiQueryCaOut>();
    if (status != Status::SUCCESS || answer == nullptr) {
      co_return {status == Status::SUCCESS ? Status::ERROR : status, sizeof(abi::QueryCaOut)};
    }
    out->attributes = answer->attributes;
    const std::size_t written = std::min<std::size_t>(answer->num_ports, ports.size());
    std::memcpy(static_cast<void*>(ports.data()),
                static_cast<const uint8_t*>(ci.Buffer()) + sizeof(abi::CiQueryCaOut),
                written * sizeof(abi::PortAttributes));
    out->num_ports = ca->ci->num_ports();
    const uint64_t information =
        sizeof(abi::QueryCaOut) +
        std::min<uint64_t>(out->num_ports, ports.size()) * sizeof(abi::PortAttributes);
    co_return {out->num_ports <= ports.size() ? Status::SUCCESS : Status::INSUFFICIENT_MEMORY,
               information};
  }

  Status QueryGidTable(const kernel::CallContext& ctx, const abi::QueryGidTableIn& in,
                       kernel::QueryGidTableRefs& refs, abi::QueryGidTableOut& out,
                       std::span<abi::Gid> gids, Irp* irp) override {
    return QueryGidsTask(InstanceOf(ctx), std::move(refs.ca), {in.port_num, 0, 0, in.start_index},
                         &out, gids)
        .Start(irp);
  }

  static kernel::VerbTask QueryGidsTask(Instance* instance, kernel::ObjectRef ca_ref,
                                        abi::CiQueryGidTableIn in, abi::QueryGidTableOut* out,
                                        std::span<abi::Gid> gids) {
    AlCa* ca = LiveCa(ca_ref);
    if (ca == nullptr) co_return {Status::CA_REMOVED, sizeof(abi::QueryGidTableOut)};
    const CiRequestor who = RequestorOf(instance);
    const auto length =
        static_cast<uint32_t>(sizeof(abi::CiQueryGidTableOut) + gids.size() * sizeof(abi::Gid));
    CiIrp ci(ca,
             kernel::BuildCiQueryGidTableIrp(ca->lower, who.file, who.mode, in, nullptr, length));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, sizeof(abi::QueryGidTableOut)};
    const Status status = co_await ci.Send();
    std::size_t returned = 0;
    if (const auto* answer = ci.Output<abi::CiQueryGidTableOut>(); answer != nullptr) {
      out->num_gids = answer->num_gids;
      returned = std::min<std::size_t>(answer->num_gids, gids.size());
      returned = std::min<std::size_t>(
          returned, (ci.Information() - sizeof(abi::CiQueryGidTableOut)) / sizeof(abi::Gid));
      std::memcpy(static_cast<void*>(gids.data()),
                  static_cast<const uint8_t*>(ci.Buffer()) + sizeof(abi::CiQueryGidTableOut),
                  returned * sizeof(abi::Gid));
    }
    co_return {status, sizeof(abi::QueryGidTableOut) + returned * sizeof(abi::Gid)};
  }

  Status QueryPkeyTable(const kernel::CallContext& ctx, const abi::QueryPkeyTableIn& in,
                        kernel::QueryPkeyTableRefs& refs, abi::QueryPkeyTableOut& out,
                        std::span<uint16_t> pkeys, Irp* irp) override {
    return QueryPkeysTask(InstanceOf(ctx), std::move(refs.ca), {in.port_num, 0, 0, in.start_index},
                          &out, pkeys)
        .Start(irp);
  }

  static kernel::VerbTask QueryPkeysTask(Instance* instance, kernel::ObjectRef ca_ref,
                                         abi::CiQueryPkeyTableIn in, abi::QueryPkeyTableOut* out,
                                         std::span<uint16_t> pkeys) {
    AlCa* ca = LiveCa(ca_ref);
    if (ca == nullptr) co_return {Status::CA_REMOVED, sizeof(abi::QueryPkeyTableOut)};
    const CiRequestor who = RequestorOf(instance);
    const auto length =
        static_cast<uint32_t>(sizeof(abi::CiQueryPkeyTableOut) + pkeys.size() * sizeof(uint16_t));
    CiIrp ci(ca,
             kernel::BuildCiQueryPkeyTableIrp(ca->lower, who.file, who.mode, in, nullptr, length));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, sizeof(abi::QueryPkeyTableOut)};
    const Status status = co_await ci.Send();
    std::size_t returned = 0;
    if (const auto* answer = ci.Output<abi::CiQueryPkeyTableOut>(); answer != nullptr) {
      out->num_pkeys = answer->num_pkeys;
      returned = std::min<std::size_t>(answer->num_pkeys, pkeys.size());
      returned = std::min<std::size_t>(
          returned, (ci.Information() - sizeof(abi::CiQueryPkeyTableOut)) / sizeof(uint16_t));
      std::memcpy(pkeys.data(),
                  static_cast<const uint8_t*>(ci.Buffer()) + sizeof(abi::CiQueryPkeyTableOut),
                  returned * sizeof(uint16_t));
    }
    co_return {status, sizeof(abi::QueryPkeyTableOut) + returned * sizeof(uint16_t)};
  }

  Status ModifyCa(const kernel::CallContext& ctx, const abi::ModifyCaIn& in,
                  kernel::ModifyCaRefs& refs, Irp* irp) override {
    return ModifyCaTask(InstanceOf(ctx), in, std::move(refs.ca)).Start(irp);
  }

  static kernel::VerbTask ModifyCaTask(Instance* instance, abi::ModifyCaIn in,
                                       kernel::ObjectRef ca_ref) {
    CaObj* obj = As<CaObj>(ca_ref);
    AlCa* ca = LiveCa(ca_ref);
    if (ca == nullptr) co_return {Status::CA_REMOVED, 0};
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiModifyCaIrp(ca->lower, who.file, who.mode,
                                            {in.port_num, in.init_type, 0, in.flags, in.cap_set,
                                             in.cap_clear, in.system_image_guid}));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, 0};
    const Status s = co_await ci.Send();
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
    co_return {s, 0};
  }

  Status CloseCa(const kernel::CallContext& ctx, const abi::CloseCaIn& in, kernel::CloseCaRefs&,
                 Irp* irp) override {
    return DestroyReleasing(ctx, in.ca.value, abi::ObjectType::Ca, Status::INVALID_CA_HANDLE, irp);
  }

  Status CiCall(const kernel::CallContext&, const abi::CiCallIn&, std::span<const uint8_t>,
                kernel::CiCallRefs&, abi::CiCallOut&, std::span<uint8_t>, Irp*) override {
    return Status::UNSUPPORTED;
  }

  Status LocalMad(const kernel::CallContext& ctx, const abi::LocalMadIn& in,
                  kernel::LocalMadRefs& refs, abi::LocalMadOut& out, Irp* irp) override {
    abi::CiLocalMadIn request{};
    request.port = in.port_num;
    std::memcpy(request.request, in.request, sizeof request.request);
    return LocalMadTask(InstanceOf(ctx), request, std::move(refs.ca), &out).Start(irp);
  }

  // The port's SMA/PMA in the HCA answer it (hca/device sma.cc, pma.cc).
  static kernel::VerbTask LocalMadTask(Instance* instance, abi::CiLocalMadIn request,
                                       kernel::ObjectRef ca_ref, abi::LocalMadOut* out) {
    AlCa* ca = As<CaObj>(ca_ref)->ca.get();
    const CiRequestor who = RequestorOf(instance);
    CiIrp ci(ca, kernel::BuildCiLocalMadIrp(ca->lower, who.file, who.mode, request, nullptr));
    if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, sizeof(abi::LocalMadOut)};
    const Status s = co_await ci.Send();
    if (const auto* answer = ci.Output<abi::CiLocalMadOut>(); answer != nullptr) {
      std::memcpy(out->response, answer->response, sizeof out->response);
    }
    co_return {s, sizeof(abi::LocalMadOut)};
  }
};

}  // namespace

kernel::CaVerbHandlers* CaHandlers() {
  static CaVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
