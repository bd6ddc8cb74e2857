// I/O controllers of the CA's I/O unit (IBAL ib_create_ioc, ib_add_svc_entry, ib_reg_ioc):
// the objects own their entries in the CA's IoUnit (ioc/io_unit.h), which the device
// management agent (ioc/devmgt_agent.cc) reports. While a controller is registered the CA's
// ports advertise IsDeviceManagementSupported, so that I/O unit discovery finds them.
#include <algorithm>
#include <cstring>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/ioc/io_unit.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

// Sets or clears CapabilityMask.IsDeviceManagementSupported on every port of the CA: one
// CiModifyCa IRP after the other, then `done` (inline, or from the last completion).
kernel::IrpTask AdvertiseDeviceManagement(std::shared_ptr<AlCa> ca, bool on,
                                          std::function<void()> done) {
  const auto dm = abi::PortCapabilities::DEVICE_MANAGEMENT;
  for (uint8_t port = 1; port <= ca->ci->num_ports() && !ca->removed.load(); ++port) {
    abi::CiModifyCaIn in{};
    in.port = port;
    in.flags = abi::ModifyCaFlags::PORT_CAPABILITIES;
    in.cap_set = on ? dm : abi::PortCapabilities{};
    in.cap_clear = on ? abi::PortCapabilities{} : dm;
    (void)co_await CiIrp(
        ca->lower,
        kernel::BuildCiModifyCaIrp(ca->lower, nullptr, kernel::ProcessorMode::kKernelMode, in));
  }
  done();
}

class IocObj final : public AlObject {
 public:
  IocObj(Instance* owner, CaObj* ca_obj_in)
      : AlObject(abi::ObjectType::Ioc, owner), ca_obj(ca_obj_in) {}
  CaObj* const ca_obj;  // parent

 private:
  void OnDestroy() override {
    AlCa& ca = *ca_obj->ca;
    const bool was = ca.io_unit.AnyRegistered();
    ca.io_unit.RemoveController(this);
    // Released at once, or, when the last controller went, once the CA's ports stopped
    // advertising (the CA stays busy until then).
    auto ticket = std::make_shared<ReleaseTicket>(this);
    if (!was || ca.io_unit.AnyRegistered()) return;
    AdvertiseDeviceManagement(ca_obj->ca, false, [ticket] {});
  }
};

class IocServiceObj final : public AlObject {
 public:
  IocServiceObj(Instance* owner, IocObj* ioc_in)
      : AlObject(abi::ObjectType::IocService, owner), ioc(ioc_in) {}
  IocObj* const ioc;  // parent

 private:
  void OnDestroy() override { ioc->ca_obj->ca->io_unit.RemoveService(ioc, this); }
};

class IocVerbs final : public kernel::IocVerbHandlers {
 public:
  Status CreateIoc(const kernel::CallContext& ctx, const abi::CreateIocIn& in,
                   kernel::CreateIocRefs& refs, abi::CreateIocOut& out, Irp*) override {
    CaObj* ca = As<CaObj>(refs.ca);
    if (ca->ca->removed.load()) return Status::CA_REMOVED;
    ioc::IoUnit::Profile profile;
    std::memcpy(profile.data(), in.profile, profile.size());
    if (std::all_of(profile.begin(), profile.begin() + 8, [](uint8_t b) { return b == 0; })) {
      return Status::INVALID_SETTING;  // a controller needs its GUID
    }
    auto* object = new IocObj(InstanceOf(ctx), ca);
    if (!Adopt(object, ca)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_CA_HANDLE;
    }
    ca->ca->io_unit.AddController(object, profile);
    return Publish(InstanceOf(ctx), object, &out.ioc.value);
  }

  Status DestroyIoc(const kernel::CallContext& ctx, const abi::DestroyIocIn& in,
                    kernel::DestroyIocRefs&, Irp* irp) override {
    return DestroyReleasing(ctx, in.ioc.value, abi::ObjectType::Ioc, Status::INVALID_IOC_HANDLE,
                            irp);
  }

  Status AddIocService(const kernel::CallContext& ctx, const abi::AddIocServiceIn& in,
                       kernel::AddIocServiceRefs& refs, abi::AddIocServiceOut& out, Irp*) override {
    IocObj* ioc = As<IocObj>(refs.ioc);
    auto* object = new IocServiceObj(InstanceOf(ctx), ioc);
    if (!Adopt(object, ioc)) {
      kernel::DereferenceObject(object);
      return Status::INVALID_IOC_HANDLE;
    }
    ioc::IoUnit::Name name;
    std::memcpy(name.data(), in.name, name.size());
    if (!ioc->ca_obj->ca->io_unit.AddService(ioc, object, be64toh(in.service_id), name)) {
      kernel::DereferenceObject(object);
      return Status::INSUFFICIENT_RESOURCES;
    }
    return Publish(InstanceOf(ctx), object, &out.service.value);
  }

  Status RemoveIocService(const kernel::CallContext& ctx, const abi::RemoveIocServiceIn& in,
                          kernel::RemoveIocServiceRefs&, Irp*) override {
    return DestroyHandle(ctx, in.service.value, abi::ObjectType::IocService,
                         Status::INVALID_IOC_SERVICE_HANDLE);
  }

  Status RegisterIoc(const kernel::CallContext&, const abi::RegisterIocIn&,
                     kernel::RegisterIocRefs& refs, abi::RegisterIocOut& out, Irp* irp) override {
    IocObj* ioc = As<IocObj>(refs.ioc);
    AlCa& ca = *ioc->ca_obj->ca;
    if (ca.removed.load()) return Status::CA_REMOVED;
    const bool was = ca.io_unit.AnyRegistered();
    const int slot = ca.io_unit.Register(ioc);
    if (slot < 0) return Status::INVALID_STATE;
    if (slot == 0) return Status::INSUFFICIENT_RESOURCES;
    out.slot = static_cast<uint8_t>(slot);
    if (was) return Status::SUCCESS;
    // The first controller: the verb completes once the ports advertise it.
    return AdvertiseTask(ioc->ca_obj->ca).Start(irp);
  }

  static kernel::VerbTask AdvertiseTask(std::shared_ptr<AlCa> ca) {
    // A pointer to the frame's copy: what a lambda in a co_await expression captures must be
    // trivially destructible (gcc 12 destroys that temporary twice).
    co_await AwaitDone([held = &ca](std::function<void()> resume) {
      AdvertiseDeviceManagement(*held, true, std::move(resume));
    });
    co_return {Status::SUCCESS, sizeof(abi::RegisterIocOut)};
  }
};

}  // namespace

kernel::IocVerbHandlers* IocHandlers() {
  static IocVerbs verbs;
  return &verbs;
}

}  // namespace softib::al
