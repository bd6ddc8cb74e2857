"""Docs backend: docs/verbs_reference.md, the reference of every verb, IOCTL, object and
the QP state table."""

from __future__ import annotations

from .. import model as m
from . import abi as a


def type_text(p) -> str:
    t = p.type
    base = f"handle<{t.handle_of}>" if t.is_handle else t.name
    if p.variable:
        return f"{base}[{p.count_field}] (max {p.max_count})"
    if p.array is not None:
        return f"{base}[{p.array_const or p.array}]"
    return base


def md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def param_rows(program: m.Program, v: m.Verb) -> list[dict]:
    offsets = {}
    for side, s in (("in", v.in_struct), ("out", v.out_struct)):
        if s is not None:
            for f in s.fields:
                offsets[(side, f.name)] = f.offset
    rows = []
    for p in v.params:
        where = []
        if p.direction in ("in", "inout"):
            where.append(f"In+{offsets.get(('in', p.name))}")
        if p.direction in ("out", "inout"):
            where.append(f"Out+{offsets.get(('out', p.name))}")
        notes = []
        if p.type.is_handle:
            notes.append(p.access or "read")
        if p.optional:
            notes.append("optional")
        if p.reserved:
            notes.append("reserved, must be zero")
        if p.pad:
            notes.append("pad, must be zero")
        if p.length_field:
            notes.append(f"length({p.length_field})")
        if p.doc:
            notes.append(md(p.doc))
        rows.append({"dir": p.direction, "name": p.name, "type": type_text(p),
                     "offset": ", ".join(where), "notes": "; ".join(notes)})
    return rows


def implicit_returns(program: m.Program, v: m.Verb) -> list[str]:
    extra = ["INVALID_PARAMETER"] if a.status_names(program) else []
    for p in v.params:
        if p.type.is_handle and p.direction in ("in", "inout") and p.access != "new":
            try:
                extra.append(a.invalid_handle_status(program, p.type.handle_of))
            except a.BackendError:
                pass
    return [s for i, s in enumerate(extra) if s not in v.returns and s not in extra[:i]]


def verb_doc(program: m.Program, v: m.Verb) -> dict:
    return {
        "name": v.name, "doc": md(v.doc), "ordinal": a.hexs(v.ordinal, 4),
        "ioctl": a.hexs(v.ioctl_code, 8) if v.ioctl_code is not None else "none (speed path)",
        "function": a.hexs(v.ioctl_function, 3) if v.ioctl_function is not None else "",
        "access": v.ioctl_access, "irql": v.irql.upper(), "mode": v.mode,
        "paths": ", ".join(v.paths), "module": v.module,
        "in_size": v.in_struct.size if v.in_struct else 0,
        "out_size": v.out_struct.size if v.out_struct else 0,
        "params": param_rows(program, v), "returns": v.returns,
        "implicit": implicit_returns(program, v),
    }


def qp_doc(program: m.Program) -> list[dict]:
    info = a.qp_rules(program)
    if info is None:
        return []
    rows = []
    for s_from in info["state_names"]:
        for s_to in info["state_names"]:
            groups: dict[tuple, list[str]] = {}
            for t in info["type_names"]:
                r = info["rules"][(s_from, s_to, t)]
                if r.legal:
                    groups.setdefault((tuple(r.required_names), tuple(r.optional_names)), []).append(t)
            for (req, opt), types in groups.items():
                rows.append({"from": s_from, "to": s_to, "types": ", ".join(types),
                             "required": ", ".join(req) or "—", "optional": ", ".join(opt) or "—"})
    return rows


def emit(program: m.Program, render) -> dict[str, str]:
    verbs = sorted(program.verbs.values(), key=lambda v: v.ordinal)
    modules = []
    for name in a.module_names(program):
        mv = [verb_doc(program, v) for v in verbs if v.module == name]
        if mv:
            modules.append({"name": name, "source": a.source_of(program, name), "verbs": mv})
    ioctls = sorted((verb_doc(program, v) for v in verbs if v.ioctl_code is not None),
                    key=lambda d: d["ioctl"])
    objects = []
    for o in program.objects.values():
        status = ""
        if program.statuses is not None:
            try:
                status = a.invalid_handle_status(program, o.name)
            except a.BackendError:
                status = ""
        objects.append({
            "name": o.name, "doc": md(o.doc), "parent": o.parent or "—",
            "children": ", ".join(c.name for c in o.children) or "—",
            "uses": ", ".join(o.uses) or "—", "users": ", ".join(u.name for u in o.users) or "—",
            "creator": o.creator.name if o.creator else ("runtime (implicit)" if o.implicit else "—"),
            "destroyer": o.destroyer.name if o.destroyer else ("runtime (implicit)" if o.implicit else "—"),
            "status": status})
    sm = program.qp_state_machine
    text = render("docs_verbs_reference.md.j2", comment=a.all_sources(program), modules=modules,
                  ioctls=ioctls, objects=objects, qp=qp_doc(program),
                  qp_names=(sm.state_enum, sm.type_enum, sm.mask_flags) if sm else None,
                  verb_count=len(verbs))
    return {"docs/verbs_reference.md": text}
