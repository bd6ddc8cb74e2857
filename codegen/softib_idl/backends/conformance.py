"""Conformance backend: the per-verb conformance suite sources (GoogleTest).

conformance/verbs/<module>_abi_conformance.cc       ABI layout + marshal round trip (runs now)
conformance/verbs/<module>_dispatch_conformance.cc  dispatch rejections, paths, DISPATCH level,
                                                    busy destroy (against ConformanceHarness)
conformance/verbs/conformance_support.h, dispatch_support.h   shared runners.
conformance/verbs/<module>_hca_conformance.cc       a `target hca` module: every rejection of
                                                    the HCA driver's dispatch (requestor,
                                                    lengths, reserved, enums, flags), against
                                                    HcaConformanceHarness
conformance/verbs/hca_dispatch_support.h            its runners (when such a module exists).
conformance/verbs/<module>_device_conformance.cc    a `target device` module: the same rejections
                                                    of the driver's device dispatch, plus every
                                                    valid request reaching the handler (kernel
                                                    and user requestors, and at DISPATCH for
                                                    verbs callable there), against
                                                    DeviceConformanceHarness
conformance/verbs/device_dispatch_support.h         its runners (when such a module exists).

Offsets and sizes are written as literal numbers from the layout stage, so the tests
compare the compiler's layout with the IDL's, in 32- and 64-bit builds.
"""

from __future__ import annotations

from .. import model as m
from . import abi as a

CDIR = "conformance/verbs"

# Output fields (last path component) that the node assigns afresh to each new object.
ASSIGNED_IDS = {"qp_num", "qpn", "lkey", "rkey"}


def test_suite_name(module: str, kind: str) -> str:
    return a.camel(module) + kind


# ---------------------------------------------------------------- ABI part


def reachable_structs(program: m.Program, roots: list[m.Struct]) -> list[m.Struct]:
    """Every struct used by `roots` (roots included), each after the structs it contains."""
    done: set[str] = set()
    out: list[m.Struct] = []

    def visit(s: m.Struct) -> None:
        if s.name in done:
            return
        done.add(s.name)
        for f in s.fields:
            if isinstance(f.type.decl, m.Struct):
                visit(f.type.decl)
        out.append(s)

    for s in roots:
        visit(s)
    return out


def _fill_expr(f: m.Field, target: str) -> str:
    t = f.type
    d = t.decl
    if t.is_handle:
        return f"{target}.value = r.Int<uint64_t>();"
    if isinstance(d, m.Enum):
        return f"{target} = r.Pick(abi::EnumTraits<abi::{d.name}>::kValues);"
    if isinstance(d, m.Flags):
        u = a.underlying_cpp(d.underlying)
        return f"{target} = static_cast<abi::{d.name}>(r.Int<{u}>() & {a.hexs(d.mask)}u);"
    if isinstance(d, m.Struct):
        return f"Fill({target}, r);"
    if t.name == "bool8":
        return f"{target} = r.Int<uint8_t>() & 1;"
    return f"{target} = r.Int<{a.SCALARS[t.name]}>();"


def struct_fill(s: m.Struct) -> list[str]:
    lines = []
    for f in s.fields:
        if f.variable or f.reserved or f.pad:
            continue
        name = "v." + a.ident(f.name)
        if f.array is not None:
            lines.append(f"for (auto& e : {name}) {{ {_fill_expr(f, 'e')} }}")
        else:
            lines.append(_fill_expr(f, name))
    return lines


def struct_check(s: m.Struct) -> list[str]:
    lines = []
    for f in s.fields:
        if f.variable:
            continue
        name = a.ident(f.name)
        nested = isinstance(f.type.decl, m.Struct)
        if f.array is not None:
            idx = "[i]"
            off = f"base + {f.offset} + i * {f.elem_size}"
            call = (f"Check(buf, {off}, v.{name}{idx}, w.{name}{idx})" if nested else
                    f"ExpectField(buf, {off}, v.{name}{idx}, w.{name}{idx}, \"{s.name}.{f.name}[]\")")
            lines.append(f"for (std::size_t i = 0; i < {f.array}; ++i) n += {call};")
        else:
            off = f"base + {f.offset}"
            call = (f"Check(buf, {off}, v.{name}, w.{name})" if nested else
                    f"ExpectField(buf, {off}, v.{name}, w.{name}, \"{s.name}.{f.name}\")")
            lines.append(f"n += {call};")
    return lines


def struct_abi_view(s: m.Struct) -> dict:
    var = s.variable_field
    return {
        "name": s.name, "size": s.size,
        "owner": s.verb.name if s.verb else "struct " + s.name,
        "offsets": [(f.name, a.ident(f.name), f.offset) for f in s.fields if not f.variable],
        "fill": struct_fill(s), "check": struct_check(s),
        "variable": {"name": var.name, "offset": var.offset, "elem_size": var.elem_size,
                     "type": a.qualified(var.type)} if var else None,
    }


def verb_abi_view(v: m.Verb) -> dict:
    access = {"any": 0, "read": 1, "write": 2, "readwrite": 3}[v.ioctl_access]
    return {"name": v.name, "ordinal": a.hexs(v.ordinal, 4), "ioctl": v.ioctl_code is not None,
            "code": a.hexs(v.ioctl_code or 0, 8), "function": a.hexs(v.ioctl_function or 0, 3),
            "access": access}


# ---------------------------------------------------------------- dispatch part


def invalid_enum_values(e: m.Enum) -> list[int]:
    """A few values that are not members: gaps, one past the largest, all ones."""
    bits = m.PRIMITIVES[e.underlying][0] * 8
    signed = m.PRIMITIVES[e.underlying][3]
    members = {mem.value for mem in e.members}
    lo = min(members) if members else 0
    hi = max(members) if members else 0
    limit = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    candidates = [x for x in range(lo, hi) if x not in members][:4]
    candidates += [hi + 1, limit] if hi + 1 <= limit else [limit]
    if signed:
        candidates.append(-1)
    out = []
    for x in candidates:
        if x not in members and x not in out and -(1 << (bits - 1)) <= x <= limit:
            out.append(x)
    return out


def _ranges(leaves: list[a.Leaf]) -> list[tuple[int, int]]:
    """Contiguous byte ranges covered by `leaves` (sorted, merged)."""
    spans = sorted((lf.offset, lf.offset + lf.size) for lf in leaves)
    out: list[list[int]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi - lo) for lo, hi in out]


def verb_dispatch_view(program: m.Program, v: m.Verb, busy: str) -> dict:
    st = "Status"  # the alias softib/abi/abi_status.h gives the IDL's statuses
    ins, outs = v.in_struct, v.out_struct
    in_leaves = a.leaves(ins) if ins else []
    in_var = ins.variable_field if ins else None
    elem_leaves: list[a.Leaf] = []
    if in_var is not None and isinstance(in_var.type.decl, m.Struct):
        elem_leaves = a.leaves(in_var.type.decl)
    elif in_var is not None and isinstance(in_var.type.decl, (m.Enum, m.Flags)):
        kind = "enum" if isinstance(in_var.type.decl, m.Enum) else "flags"
        elem_leaves = [a.Leaf(in_var.name, 0, in_var.elem_size, kind, in_var.type.decl)]

    def leaf_rows(lvs: list[a.Leaf], elem: bool) -> tuple[list[str], list[str], list[str], set]:
        enums, flags, reserved, used = [], [], [], set()
        el = "true" if elem else "false"
        for lf in lvs:
            if lf.kind == "enum":
                used.add(lf.decl.name)
                enums.append(f"{{{lf.offset}, {lf.size}, kInvalid{lf.decl.name}, \"{lf.path}\", {el}}}")
            elif lf.kind == "flags":
                flags.append(f"{{{lf.offset}, {lf.size}, {a.hexs(lf.decl.mask)}u, \"{lf.path}\", {el}}}")
        for off, size in _ranges([lf for lf in lvs if lf.kind == "reserved"]):
            reserved.append(f"{{{off}, {size}, {el}}}")
        return enums, flags, reserved, used

    enums, flags, reserved, used = leaf_rows(in_leaves, False)
    e2, f2, r2, u2 = leaf_rows(elem_leaves, True)
    enums += e2
    flags += f2
    reserved += r2
    used |= u2

    handles = []
    for lf in in_leaves:
        if lf.kind != "handle" or lf.top is None or not lf.top.type.is_handle:
            continue
        p = a.param_of(v, lf.top, "in")
        if p is None or p.access == "new":
            continue
        status = a.invalid_handle_status(program, lf.decl.name)
        handles.append(f"{{{lf.offset}, abi::ObjectType::{lf.decl.name}, {'true' if p.optional else 'false'}, "
                       f"abi::{st}::{status}, \"{lf.path[:-len('.value')]}\"}}")

    # Output values that differ between two valid calls on two callers: handles (per-file
    # tables) and the identifiers the node assigns to each new object (QPN, keys).
    masks = []
    if outs is not None:
        for lf in a.leaves(outs):
            if lf.kind == "handle" or lf.path.split(".")[-1] in ASSIGNED_IDS:
                masks.append(f"{{{lf.offset}, {lf.size}}}")

    count_off = count_size = 0
    if in_var is not None:
        cf = next(f for f in ins.fields if f.name == in_var.count_field)
        count_off, count_size = cf.offset, cf.elem_size
    busy_children = []
    destroyed = v.destroys
    if destroyed is not None and destroyed.type.handle_object is not None and busy:
        obj = destroyed.type.handle_object
        busy_children = [f"abi::ObjectType::{c.name}" for c in obj.children + obj.users]
    paths = [p for p in ("proxy", "direct", "irp") if p in v.paths]
    return {
        "name": v.name, "ordinal": a.hexs(v.ordinal, 4),
        # The rejection cases go through a user file: only for verbs with the proxy path.
        "ioctl": f"abi::kIoctl{v.name}" if v.ioctl_code is not None and "proxy" in v.paths else "0",
        # A kernel-only verb's IOCTL, which the dispatch must refuse from a user file.
        "refused_ioctl": f"abi::kIoctl{v.name}" if v.ioctl_code is not None and "proxy" not in v.paths else "",
        "paths": a.paths_expr(v, "abi::"),
        "dispatch_level": "true" if v.irql == "dispatch" else "false",
        "in_size": ins.size if ins else 0, "out_size": outs.size if outs else 0,
        "in_elem_size": in_var.elem_size if in_var else 0,
        "in_max": in_var.max_count if in_var else 0,
        "count_offset": count_off, "count_size": count_size,
        "enums": enums, "flags": flags, "reserved": reserved, "handles": handles,
        "masks": masks, "busy": busy_children, "used_enums": used,
        "has_ioctl": v.ioctl_code is not None, "path_count": len(paths),
        "cancellable": "true" if "CANCELED" in v.returns else "false",
    }


def verb_hca_view(program: m.Program, v: m.Verb) -> dict:
    """The rejection tables of a `target hca` verb: as verb_dispatch_view, plus each enum
    field's valid value (the base request sets it, so that one defect at a time is tested)."""
    base = verb_dispatch_view(program, v, "")
    ins = v.in_struct
    in_leaves = a.leaves(ins) if ins else []
    enums = []
    for lf in in_leaves:
        if lf.kind == "enum":
            valid = min(mem.value for mem in lf.decl.members)
            enums.append(f"{{{lf.offset}, {lf.size}, kInvalid{lf.decl.name}, {valid}u, \"{lf.path}\"}}")
    base["hca_enums"] = enums
    base["ioctl"] = f"abi::kIoctl{v.name}"
    # Element checks of a trailing array need a non-empty base request; the base request of
    # the HCA suite has none, and the IDL's CI arrays have no enum, flag or reserved bytes.
    if any(", true}" in r for r in base["enums"] + base["flags"] + base["reserved"]):
        raise a.BackendError(f"{v.loc}: verb '{v.name}': the HCA suite cannot check fields of "
                             f"a trailing array's elements")
    return base


def emit_hca_suite(program: m.Program, module: str, verbs: list[m.Verb], render,
                   comment: str) -> dict[str, str]:
    st = "Status"
    device = program.module_target(module) == "device"
    views = [verb_hca_view(program, v) for v in verbs]
    for v, vw in zip(verbs, views):
        # What a valid request may answer: the verb's statuses and INVALID_PARAMETER (the
        # handler's own checks of values the dispatch cannot judge).
        statuses = sorted(set(v.returns) | {"INVALID_PARAMETER"},
                          key=lambda s: program.statuses.member(s).value)
        vw["valid_statuses"] = ", ".join(f"abi::{st}::{s}" for s in statuses)
    kind = "device" if device else "hca"
    names = {"P": "Device" if device else "Hca", "device": device, "kind": kind}
    used = sorted(set().union(*[vw["used_enums"] for vw in views])) if views else []
    invalid = [{"name": n, "literals": ", ".join(
        (f"{x}u" if x >= 0 else f"static_cast<uint64_t>({x})") for x in invalid_enum_values(program.enums[n]))}
        for n in used]
    return {
        f"{CDIR}/{kind}_dispatch_support.h": render(
            "conf_hca_support.h.j2", comment=a.header_comment(a.all_sources(program)), status=st,
            **names),
        f"{CDIR}/{module}_{kind}_conformance.cc": render(
            "conf_hca_dispatch.cc.j2", comment=comment, module=module,
            suite=test_suite_name(module, names["P"] + "Dispatch"), verbs=views, invalid=invalid,
            status=st, abi_header=f"softib/abi/{module}.h", **names),
    }


def emit(program: m.Program, render) -> dict[str, str]:
    files: dict[str, str] = {}
    st = "Status"  # the alias softib/abi/abi_status.h gives the IDL's statuses
    names = a.status_names(program)
    busy = "RESOURCE_BUSY" if "RESOURCE_BUSY" in names else ""
    comment_all = a.header_comment(a.all_sources(program))
    files[f"{CDIR}/conformance_support.h"] = render("conf_support.h.j2", comment=comment_all)
    files[f"{CDIR}/dispatch_support.h"] = render(
        "conf_dispatch_support.h.j2", comment=comment_all, status=st,
        invalid="INVALID_PARAMETER", busy=busy or "INVALID_PARAMETER")
    for module in a.module_names(program):
        if not a.module_has_abi(program, module):
            continue
        structs = a.module_structs(program, module)
        verbs = a.module_verbs(program, module)
        if not structs and not verbs:
            continue
        comment = a.header_comment([a.source_of(program, module)])
        includes = sorted({f"softib/abi/{s.module}.h" for s in reachable_structs(program, structs)}
                          | {f"softib/abi/{module}.h"})
        files[f"{CDIR}/{module}_abi_conformance.cc"] = render(
            "conf_abi.cc.j2", comment=comment, module=module, includes=includes,
            suite=test_suite_name(module, "Abi"),
            helpers=[struct_abi_view(s) for s in reachable_structs(program, structs)],
            structs=[struct_abi_view(s) for s in structs],
            verbs=[verb_abi_view(v) for v in verbs])
        dverbs = [v for v in verbs if a.is_dispatched(v) or "direct" in v.paths]
        if program.module_target(module) in ("hca", "device"):
            files.update(emit_hca_suite(program, module, dverbs, render, comment))
            continue
        if not dverbs:
            continue
        views = [verb_dispatch_view(program, v, busy) for v in dverbs]
        used = sorted(set().union(*[vw["used_enums"] for vw in views]))
        invalid = [{"name": n, "literals": ", ".join(
            (f"{x}u" if x >= 0 else f"static_cast<uint64_t>({x})") for x in invalid_enum_values(program.enums[n]))}
            for n in used]
        files[f"{CDIR}/{module}_dispatch_conformance.cc"] = render(
            "conf_dispatch.cc.j2", comment=comment, module=module,
            suite=test_suite_name(module, "Dispatch"), verbs=views, invalid=invalid, status=st,
            abi_header=f"softib/abi/{module}.h")
    return files
