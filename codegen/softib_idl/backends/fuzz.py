"""Fuzz backend: the IDL as data for structure-aware fuzzing and for the conformance harness.

fuzz/verb_model.{h,cc}   every verb that reaches the dispatch: its input leaves (offset, size,
                         kind, valid enum values, flag masks, handle object and access), its
                         lengths, the statuses it may return, the object it creates, and raw
                         byte invokers of its direct call and IRP builder.
fuzz/proxy_model.{h,cc}  raw byte calls of the user proxies (overlapped), by ordinal.
fuzz/<module>_fuzz.cc    one libFuzzer target per verb module (LLVMFuzzerTestOneInput), which
                         hands the input to the runtime's fuzz driver with the module's verbs.
"""

from __future__ import annotations

from .. import model as m
from . import abi as a
from . import kernel as k

FDIR = "fuzz"

ACCESS = {"read": "kRead", "write": "kWrite", "destroy": "kDestroy", None: "kRead"}


def model_verbs(program: m.Program) -> list[m.Verb]:
    """Verbs with a dispatch or a direct call, in ordinal order. The Access Layer's only:
    a `target hca` module's verbs reach the HCA driver, which its own conformance suite
    drives."""
    out = [v for v in program.verbs.values()
           if not v.is_speed and (a.is_dispatched(v) or "direct" in v.paths)
           and program.module_target(v.module) == "al"]
    return sorted(out, key=lambda v: v.ordinal)


def _enum_values(e: m.Enum) -> str:
    vals = sorted({mem.value for mem in e.members})
    return ", ".join(f"static_cast<uint64_t>({x})" if x < 0 else f"{x}u" for x in vals)


def _field_rows(program: m.Program, v: m.Verb, leaves: list[a.Leaf], elem: bool,
                enums: dict[str, str]) -> list[str]:
    """One row per leaf, written with the short constructors of fuzz_verb_model.cc.j2;
    adjacent reserved bytes and adjacent plain integers of one array merge into one row."""
    el = ", true" if elem else ""
    count_name = None
    ins = v.in_struct
    if not elem and ins is not None and ins.variable_field is not None:
        count_name = ins.variable_field.count_field
    merged: list[list] = []  # [kind, offset, size, leaf]
    for lf in leaves:
        kind = lf.kind
        if kind == "int" and lf.top is not None and lf.top.name == count_name:
            kind = "count"
        last = merged[-1] if merged else None
        if (last is not None and kind in ("reserved", "int") and last[0] == kind
                and last[1] + last[2] == lf.offset
                and (kind == "reserved" or (lf.index is not None and last[3].top is lf.top))):
            last[2] += lf.size
            continue
        merged.append([kind, lf.offset, lf.size, lf])
    rows = []
    for kind, off, size, lf in merged:
        name = lf.path.split("[")[0] if kind == "int" and size != lf.size else lf.path
        if kind == "reserved":
            rows.append(f"R({off}, {size}{el})")
        elif kind == "int":
            rows.append(f"I({off}, {size}, \"{name}\"{el})")
        elif kind == "count":
            rows.append(f"C({off}, {size}, \"{name}\")")
        elif kind == "enum":
            enums[lf.decl.name] = _enum_values(lf.decl)
            rows.append(f"EN({off}, {size}, kValues{lf.decl.name}, \"{name}\"{el})")
        elif kind == "flags":
            rows.append(f"FL({off}, {size}, {a.hexs(lf.decl.mask)}u, \"{name}\"{el})")
        else:  # handle
            p = a.param_of(v, lf.top, "in") if not elem and lf.top is not None else None
            access = ACCESS[p.access if p is not None else None]
            optional = "true" if p is not None and p.optional else "false"
            rows.append(f"H({off}, abi::ObjectType::{lf.decl.name}, FieldAccess::{access}, "
                        f"{optional}, \"{name[:-len('.value')]}\"{el})")
    return rows


def verb_model_view(program: m.Program, v: m.Verb, enums: dict[str, str]) -> dict:
    kv = k.verb_kernel_view(program, v)
    ins, outs = v.in_struct, v.out_struct
    in_var = ins.variable_field if ins else None
    out_var = outs.variable_field if outs else None
    fields = _field_rows(program, v, a.leaves(ins) if ins else [], False, enums)
    if in_var is not None:
        d = in_var.type.decl
        if isinstance(d, m.Struct):
            fields += _field_rows(program, v, a.leaves(d), True, enums)
        elif isinstance(d, (m.Enum, m.Flags)):
            kind = "enum" if isinstance(d, m.Enum) else "flags"
            fields += _field_rows(program, v, [a.Leaf(in_var.name, 0, in_var.elem_size, kind, d)],
                                  True, enums)
    statuses = list(dict.fromkeys(v.returns + ["INVALID_PARAMETER"] + [
        a.invalid_handle_status(program, lf.decl.name)
        for lf in (a.leaves(ins) if ins else []) if lf.kind == "handle"]))
    creates = v.creates
    new_offset = 0
    new_object = None
    if creates is not None and outs is not None and creates.type.handle_object is not None:
        new_object = creates.type.handle_object.name
        fld = next(f for f in outs.fields if f.name == creates.name)
        new_offset = fld.offset
    destroys = v.destroys
    count_off = count_size = 0
    if in_var is not None:
        cf = next(f for f in ins.fields if f.name == in_var.count_field)
        count_off, count_size = cf.offset, cf.elem_size
    return {
        "name": v.name, "module": v.module, "ordinal": a.hexs(v.ordinal, 4),
        "ioctl": f"abi::kIoctl{v.name}" if v.ioctl_code is not None else "0",
        "paths": a.paths_expr(v, "abi::"),
        "dispatch_level": "true" if v.irql == "dispatch" else "false",
        "async": "true" if v.mode == "async" else "false",
        "in_size": ins.size if ins else 0, "out_size": outs.size if outs else 0,
        "in_elem_size": in_var.elem_size if in_var else 0,
        "in_max": in_var.max_count if in_var else 0,
        "count_offset": count_off, "count_size": count_size,
        "out_elem_size": out_var.elem_size if out_var else 0,
        "out_max": out_var.max_count if out_var else 0,
        "fields": fields,
        "statuses": [f"abi::Status::{s}" for s in statuses],
        "creates": f"abi::ObjectType::{new_object}" if new_object else "abi::ObjectType{}",
        "has_creates": "true" if new_object else "false", "creates_offset": new_offset,
        "destroys": f"abi::ObjectType::{destroys.type.handle_object.name}"
        if destroys is not None and destroys.type.handle_object is not None else "abi::ObjectType{}",
        "has_destroys": "true" if destroys is not None else "false",
        "k": kv,
    }


def emit(program: m.Program, render) -> dict[str, str]:
    files: dict[str, str] = {}
    verbs = model_verbs(program)
    if not verbs:
        return files
    enums: dict[str, str] = {}
    views = [verb_model_view(program, v, enums) for v in verbs]
    modules = sorted({v.module for v in verbs})
    comment = a.header_comment(a.all_sources(program))
    includes = sorted({f"kernel/{mod}_direct.h" for mod in modules
                       if any(vw["k"]["direct"] or vw["k"]["irp"]
                              for vw in views if vw["module"] == mod)}
                      | {f"softib/abi/{mod}.h" for mod in modules})
    files[f"{FDIR}/verb_model.h"] = render("fuzz_verb_model.h.j2", comment=comment)
    files[f"{FDIR}/verb_model.cc"] = render(
        "fuzz_verb_model.cc.j2", comment=comment, verbs=views, includes=includes,
        enums=[{"name": n, "literals": vals} for n, vals in sorted(enums.items())])
    files.update(emit_proxy_model(program, render, verbs))
    for mod in modules:
        mviews = [vw for vw in views if vw["module"] == mod and vw["ioctl"] != "0"
                  and "kPathProxy" in vw["paths"]]
        if not mviews:
            continue
        files[f"{FDIR}/{mod}_fuzz.cc"] = render(
            "fuzz_module.cc.j2", comment=a.header_comment([a.source_of(program, mod)]),
            module=mod, verbs=mviews)
    return files


def emit_proxy_model(program: m.Program, render, verbs: list[m.Verb]) -> dict[str, str]:
    """fuzz/proxy_model.{h,cc}: raw-byte calls of the overlapped user proxies."""
    from . import user as u
    pverbs = [v for v in verbs if "proxy" in v.paths]
    views = [dict(u.proxy_view(v), ordinal=a.hexs(v.ordinal, 4)) for v in pverbs]
    modules = sorted({v.module for v in pverbs})
    comment = a.header_comment(a.all_sources(program))
    return {
        f"{FDIR}/proxy_model.h": render("fuzz_proxy_model.h.j2", comment=comment),
        f"{FDIR}/proxy_model.cc": render(
            "fuzz_proxy_model.cc.j2", comment=comment, verbs=views,
            includes=[f"user/{mod}_proxy.h" for mod in modules]),
    }
