"""Kernel backend: per module, the verb handler interface and the IOCTL dispatch
(kernel/<module>_dispatch.{h,cc}), the direct-call API and IRP builders
(kernel/<module>_direct.{h,cc}), the object API over public structures
(kernel/<module>_ib.{h,cc}, kernel/verbs_objects.h: backends/objects.py); program-wide, the handler set and the IOCTL switch
(kernel/verb_handlers.{h,cc}).

A module with `target hca` is the HCA driver's command interface instead: its handler
interface, its internal-IOCTL dispatch (kernel/hca/<module>_dispatch.{h,cc}) and the IRP
builders its callers use (kernel/hca/<module>_irp.{h,cc}); it is no part of the Access
Layer's handler set. A module with `target device` is a driver's own named device, opened by
user processes and kernel clients: the same handler interface and checks over
IRP_MJ_DEVICE_CONTROL (kernel/device/<module>_dispatch.{h,cc}) and IRP builders
(kernel/device/<module>_irp.{h,cc}); its user proxies come from backends/user.py.

Written against the runtime interfaces in runtime/kernel/include/softib/kernel/.
"""

from __future__ import annotations

from .. import model as m
from . import abi as a
from . import objects

KDIR = "kernel"
HCA_DIR = "kernel/hca"
DEVICE_DIR = "kernel/device"


def _elem_type(f: m.Field) -> str:
    return a.qualified(f.type)


def _handle_params(program: m.Program, v: m.Verb) -> list[dict]:
    """Handle parameters of the input structure, with what their lookup needs."""
    out = []
    if v.in_struct is None:
        return out
    for f in v.in_struct.fields:
        if not f.type.is_handle or f.reserved or f.pad:
            continue
        p = a.param_of(v, f, "in")
        access = (p.access if p else None) or "read"
        if access == "new":
            continue
        out.append({
            "name": a.ident(f.name),
            "span": a.local_ident(f.name),
            "object": f.type.handle_of,
            "access": {"read": "kRead", "write": "kWrite", "destroy": "kDestroy"}[access],
            "optional": "true" if p is not None and p.optional else "false",
            "status": a.invalid_handle_status(program, f.type.handle_of),
            "array": f.array,
            "variable": f.variable,
        })
    return out


def verb_kernel_view(program: m.Program, v: m.Verb) -> dict:
    st = "Status"  # the alias softib/abi/abi_status.h gives the IDL's statuses
    ins, outs = v.in_struct, v.out_struct
    in_var = ins.variable_field if ins else None
    out_var = outs.variable_field if outs else None
    handles = _handle_params(program, v)
    nested = [lf.path for lf in (a.leaves(ins) if ins else [])
              if lf.kind == "handle" and not lf.top.type.is_handle]
    if nested:
        raise a.BackendError(f"{v.loc}: verb '{v.name}': the dispatch resolves handle parameters "
                             f"only; {', '.join(nested)} is a handle inside a structure")
    refs = []
    for h in handles:
        if h.get("variable"):
            refs.append(f"std::vector<ObjectRef> {h['name']};")
        elif h["array"] is not None:
            refs.append(f"ObjectRef {h['name']}[{h['array']}];")
        else:
            refs.append(f"ObjectRef {h['name']};")

    # Handler parameters, in order.
    hparams = ["const CallContext& ctx"]
    hargs = ["ctx"]
    if ins:
        hparams.append(f"const abi::{ins.name}& in")
        hargs.append("in")
    if in_var:
        hparams.append(f"std::span<const {_elem_type(in_var)}> {a.local_ident(in_var.name)}")
        hargs.append(a.local_ident(in_var.name))
    if refs:
        hparams.append(f"{v.name}Refs& refs")
        hargs.append("refs")
    if outs:
        hparams.append(f"abi::{outs.name}& out")
        hargs.append("out")
    if out_var:
        hparams.append(f"std::span<{_elem_type(out_var)}> {a.local_ident(out_var.name)}")
        hargs.append(a.local_ident(out_var.name))
    hparams.append("Irp* irp")
    hargs.append("irp")

    # Validate(): the checks after the lengths, shared by dispatch and direct calls.
    vparams = ["[[maybe_unused]] const CallContext& ctx"]
    vargs = ["ctx"]
    if ins:
        vparams.append(f"const abi::{ins.name}& in")
        vargs.append("in")
    if in_var:
        vparams.append(f"[[maybe_unused]] std::span<const {_elem_type(in_var)}> {a.local_ident(in_var.name)}")
        vargs.append(a.local_ident(in_var.name))
    if refs:
        vparams.append(f"{v.name}Refs& refs")
        vargs.append("refs")
    checks = []
    if ins:
        checks.append(f"if (!abi::IsValid(in)) return {st}::INVALID_PARAMETER;")
    if in_var is not None and a.elem_needs_check(in_var.type):
        checks.append(f"for (const auto& e : {a.local_ident(in_var.name)}) {{ if (!abi::IsValid(e)) return {st}::INVALID_PARAMETER; }}")
    resolves = []
    for h in handles:
        common = (f"abi::ObjectType::{h['object']}, HandleAccess::{h['access']}, {h['optional']}, "
                  f"{st}::{h['status']}")
        if h["variable"]:
            src = h["span"]
            resolves.append({"loop": f"refs.{h['name']}.resize({src}.size());\n"
                                     f"for (std::size_t i = 0; i < {src}.size(); ++i)",
                             "call": f"ResolveHandle(ctx, {src}[i].value, {common}, &refs.{h['name']}[i])"})
        elif h["array"] is not None:
            resolves.append({"loop": f"for (std::size_t i = 0; i < {h['array']}; ++i)",
                             "call": f"ResolveHandle(ctx, in.{h['name']}[i].value, {common}, &refs.{h['name']}[i])"})
        else:
            resolves.append({"loop": "",
                             "call": f"ResolveHandle(ctx, in.{h['name']}.value, {common}, &refs.{h['name']})"})

    view = {
        "name": v.name, "doc": a.cdoc(v.doc), "status": st, "ordinal": a.hexs(v.ordinal, 4),
        "irql": "kDispatch" if v.irql == "dispatch" else "kPassive",
        "async": v.mode == "async",
        "in": ins.name if ins else None, "out": outs.name if outs else None,
        "in_var": None, "out_var": None,
        "refs": refs, "has_refs": bool(refs),
        "handler_params": ", ".join(hparams), "handler_args": ", ".join(hargs),
        "validate_params": ", ".join(vparams), "validate_args": ", ".join(vargs),
        "checks": checks, "resolves": resolves,
        "ioctl": a.is_dispatched(v), "ioctl_name": f"abi::kIoctl{v.name}",
        "direct": "direct" in v.paths, "irp": "irp" in v.paths, "proxy": "proxy" in v.paths,
    }
    if in_var:
        view["in_var"] = {"name": a.local_ident(in_var.name), "type": _elem_type(in_var),
                          "count": a.ident(in_var.count_field), "max": in_var.max_count}
    if out_var:
        view["out_var"] = {"name": a.local_ident(out_var.name), "type": _elem_type(out_var),
                           "count": a.ident(out_var.count_field), "max": out_var.max_count}
    if view["irp"] and not view["ioctl"]:
        raise a.BackendError(f"{v.loc}: verb '{v.name}' has the irp path but no ioctl clause")
    view.update(_direct_signatures(v, view))
    return view


def _direct_signatures(v: m.Verb, view: dict) -> dict:
    """Parameter lists of Ib<Verb>() and of the IRP builders."""
    dparams, bparams, bargs = ["IbAl* al"], ["DeviceObject* target", "FileObject* file"], ["target", "file"]
    if view["in"]:
        dparams.append(f"const abi::{view['in']}& in")
        bparams.append(f"const abi::{view['in']}& in")
        bargs.append("in")
    if view["in_var"]:
        iv = view["in_var"]
        dparams.append(f"std::span<const {iv['type']}> {iv['name']}")
        bparams.append(f"std::span<const {iv['type']}> {iv['name']}")
        bargs.append(iv["name"])
    if view["out"]:
        dparams.append(f"abi::{view['out']}& out")
    if view["out_var"]:
        ov = view["out_var"]
        dparams.append(f"std::span<{ov['type']}> {ov['name']}")
        bparams.append("void* output")
        bparams.append("uint32_t output_length")
        bargs += ["output", "output_length"]
    elif view["out"]:
        bparams.append(f"abi::{view['out']}* out")
        bargs.append("out")
    return {
        "direct_params": ", ".join(dparams + ["Irp* irp = nullptr"]),
        "direct_params_def": ", ".join(dparams + ["Irp* irp"]),
        "build_params": ", ".join(bparams), "build_args": ", ".join(bargs),
    }


def _hca_build_signature(view: dict) -> dict:
    """Parameter lists of an HCA module's IRP builders: the requestor travels with the IRP."""
    bparams = ["DeviceObject* target", "FileObject* file", "ProcessorMode mode"]
    bargs = ["target", "file", "mode"]
    if view["in"]:
        bparams.append(f"const abi::{view['in']}& in")
        bargs.append("in")
    if view["in_var"]:
        iv = view["in_var"]
        bparams.append(f"std::span<const {iv['type']}> {iv['name']}")
        bargs.append(iv["name"])
    if view["out_var"]:
        bparams += ["void* output", "uint32_t output_length"]
        bargs += ["output", "output_length"]
    elif view["out"]:
        bparams.append(f"abi::{view['out']}* out")
        bargs.append("out")
    result = {"build_params": ", ".join(bparams), "build_args": ", ".join(bargs), "place_params": ""}
    if view["in"] and not view["in_var"]:
        # Build<Verb>IrpInPlace: the same parameters but the input, which the caller writes
        # straight into the IRP's system buffer (`in` comes back pointing there).
        pparams = [p for p in bparams if p != f"const abi::{view['in']}& in"]
        result["place_params"] = ", ".join(pparams + [f"abi::{view['in']}** in"])
    return result


def emit_hca_module(program: m.Program, module: str, render, st: str) -> dict[str, str]:
    """A `target hca` or `target device` module: the driver's handler interface and dispatch,
    and the IRP builders of its kernel callers. The two differ in the IRP's major function
    (internal device control for the CA's command interface, device control for a driver's
    own device, which user processes open too) and in their directory."""
    target = program.module_target(module)
    a.require_status(program, "INVALID_PERMISSION", f"module '{module}' (target {target}: the requestor check)")
    verbs = module_kernel_verbs(program, module)
    views = []
    for v in verbs:
        view = verb_kernel_view(program, v)
        view.update(_hca_build_signature(view))
        views.append(view)
    device = target == "device"
    ctx = {
        "comment": a.header_comment([a.source_of(program, module)]),
        "module": module, "handlers": a.handler_class(module), "verbs": views, "status": st,
        "abi_header": f"softib/abi/{module}.h", "prefix": a.camel(module), "device": device,
    }
    d = DEVICE_DIR if device else HCA_DIR
    return {
        f"{d}/{module}_dispatch.h": render("kernel_hca_dispatch.h.j2", **ctx),
        f"{d}/{module}_dispatch.cc": render("kernel_hca_dispatch.cc.j2", **ctx),
        f"{d}/{module}_irp.h": render("kernel_hca_irp.h.j2", **ctx),
        f"{d}/{module}_irp.cc": render("kernel_hca_irp.cc.j2", **ctx),
    }


def module_kernel_verbs(program: m.Program, module: str) -> list[m.Verb]:
    return [v for v in a.module_verbs(program, module) if not v.is_speed and v.paths]


def emit(program: m.Program, render) -> dict[str, str]:
    files: dict[str, str] = {}
    st = "Status"  # the alias softib/abi/abi_status.h gives the IDL's statuses
    if program.statuses is not None:
        for need in ("SUCCESS", "INVALID_PARAMETER", "PENDING", "INSUFFICIENT_RESOURCES"):
            a.require_status(program, need, "the kernel dispatch")
    unsupported = "UNSUPPORTED" if "UNSUPPORTED" in a.status_names(program) else "INVALID_PARAMETER"
    modules = []
    for module in a.module_names(program):
        verbs = module_kernel_verbs(program, module)
        if not verbs:
            continue
        if program.module_target(module) in ("hca", "device"):
            files.update(emit_hca_module(program, module, render, st))
            continue
        views = [verb_kernel_view(program, v) for v in verbs]
        ctx = {
            "comment": a.header_comment([a.source_of(program, module)]),
            "module": module, "member": a.module_member(module), "handlers": a.handler_class(module),
            "verbs": views, "status": st,
            "abi_header": f"softib/abi/{module}.h", "unsupported": unsupported,
        }
        files[f"{KDIR}/{module}_dispatch.h"] = render("kernel_dispatch.h.j2", **ctx)
        files[f"{KDIR}/{module}_dispatch.cc"] = render("kernel_dispatch.cc.j2", **ctx)
        if any(v["direct"] or v["irp"] for v in views):
            files[f"{KDIR}/{module}_direct.h"] = render("kernel_direct.h.j2", **ctx)
            files[f"{KDIR}/{module}_direct.cc"] = render("kernel_direct.cc.j2", **ctx)
        modules.append({"name": module, "member": a.module_member(module),
                        "handlers": a.handler_class(module), "verbs": views})
    ctx = {"comment": a.header_comment(a.all_sources(program)), "modules": modules, "status": st,
           "unsupported": unsupported}
    files[f"{KDIR}/verb_handlers.h"] = render("kernel_verb_handlers.h.j2", **ctx)
    files[f"{KDIR}/verb_handlers.cc"] = render("kernel_verb_handlers.cc.j2", **ctx)
    # The object API over public structures (kernel/verbs_objects.h, kernel/<module>_ib.*).
    files.update(objects.emit(program, render))
    return files
