"""User backend: per module, the user-mode proxies of every verb with the proxy path,
synchronous and overlapped, over DeviceIoControl (runtime/user/include/softib/user/device_io.h):
user/<module>_proxy.{h,cc}.
"""

from __future__ import annotations

from .. import model as m
from . import abi as a

UDIR = "user"


def proxy_view(v: m.Verb) -> dict:
    ins, outs = v.in_struct, v.out_struct
    in_var = ins.variable_field if ins else None
    out_var = outs.variable_field if outs else None
    sync, asyn = ["DeviceHandle device"], ["DeviceHandle device"]
    if ins:
        sync.append(f"const abi::{ins.name}& in")
        asyn.append(f"const abi::{ins.name}& in")
    view = {"name": v.name, "doc": a.cdoc(v.doc), "ioctl": f"abi::kIoctl{v.name}",
            "in": ins.name if ins else None, "out": outs.name if outs else None,
            "in_var": None, "out_var": None}
    if in_var:
        t = a.qualified(in_var.type)
        name = a.local_ident(in_var.name)
        sync.append(f"std::span<const {t}> {name}")
        asyn.append(f"std::span<const {t}> {name}")
        view["in_var"] = {"name": name, "type": t, "count": a.ident(in_var.count_field)}
    if outs:
        sync.append(f"abi::{outs.name}& out")
    if out_var:
        t = a.qualified(out_var.type)
        name = a.local_ident(out_var.name)
        sync.append(f"std::span<{t}> {name}")
        asyn += ["void* output", "uint32_t output_length"]
        view["out_var"] = {"name": name, "type": t, "count": a.ident(out_var.count_field),
                           "max": out_var.max_count}
    elif outs:
        asyn.append(f"abi::{outs.name}& out")
    asyn.append("Overlapped* overlapped")
    view["sync_params"] = ", ".join(sync)
    view["async_params"] = ", ".join(asyn)
    return view


def emit(program: m.Program, render) -> dict[str, str]:
    files: dict[str, str] = {}
    st = "Status"  # the alias softib/abi/abi_status.h gives the IDL's statuses
    for module in a.module_names(program):
        verbs = [v for v in a.module_verbs(program, module) if "proxy" in v.paths]
        if not verbs:
            continue
        for v in verbs:
            if v.ioctl_code is None:
                raise a.BackendError(f"{v.loc}: verb '{v.name}' has the proxy path but no ioctl clause")
        ctx = {"comment": a.header_comment([a.source_of(program, module)]), "module": module,
               "abi_header": f"softib/abi/{module}.h", "verbs": [proxy_view(v) for v in verbs],
               "status": st}
        files[f"{UDIR}/{module}_proxy.h"] = render("user_proxy.h.j2", **ctx)
        files[f"{UDIR}/{module}_proxy.cc"] = render("user_proxy.cc.j2", **ctx)
    return files
