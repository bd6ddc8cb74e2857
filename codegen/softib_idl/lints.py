"""Lints: rules over the whole program that the grammar cannot express."""

from __future__ import annotations

import os
from typing import Optional

from . import model as m
from .errors import ErrorCollector, IdlError
from .model import Loc

LOCK_HEADER = (
    "# Verb ordinals: one `Name 0xORDINAL` per line. Written by codegen/softib_gen.py.\n"
    "# An ordinal never changes and is never reused; the generator fails if one does.\n"
)


# ---------------------------------------------------------------- ordinals.lock


def read_lock(path: str, display: Optional[str] = None) -> tuple[dict[str, int], dict[str, Loc]]:
    """name -> ordinal, and where each line is (for messages); empty when the file is absent."""
    ordinals: dict[str, int] = {}
    locs: dict[str, Loc] = {}
    if not os.path.exists(path):
        return ordinals, locs
    display = display or path
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            loc = Loc(display, number, 1)
            try:
                if len(parts) != 2:
                    raise ValueError
                name, value = parts[0], int(parts[1], 0)
            except ValueError:
                raise IdlError(loc, f"malformed ordinals.lock line '{text}' (expected 'Name 0xORDINAL')")
            if name in ordinals:
                raise IdlError(loc, f"verb '{name}' is listed twice in ordinals.lock")
            ordinals[name] = value
            locs[name] = loc
    return ordinals, locs


def format_lock(ordinals: dict[str, int]) -> str:
    lines = [f"{name} 0x{value:04X}" for name, value in sorted(ordinals.items(), key=lambda kv: (kv[1], kv[0]))]
    return LOCK_HEADER + "".join(line + "\n" for line in lines)


def check_lock(program: m.Program, lock: dict[str, int], errors: ErrorCollector) -> None:
    by_ordinal = {value: name for name, value in lock.items()}
    for v in program.verbs.values():
        loc = v.ref_locs.get("ordinal", v.loc)
        if v.name in lock:
            if lock[v.name] != v.ordinal:
                errors.add(loc, f"verb '{v.name}' had ordinal 0x{lock[v.name]:04X} in ordinals.lock and now has "
                                f"0x{v.ordinal:04X}; ordinals are stable (run with --update-lock only for a verb never released)")
        elif v.ordinal in by_ordinal and by_ordinal[v.ordinal] not in program.verbs:
            errors.add(loc, f"ordinal 0x{v.ordinal:04X} of verb '{v.name}' belonged to verb '{by_ordinal[v.ordinal]}' "
                            "in ordinals.lock; use a new ordinal (or --update-lock for a rename)")


# ---------------------------------------------------------------- verbs and objects


def check_verbs(program: m.Program, errors: ErrorCollector) -> None:
    ordinals: dict[int, m.Verb] = {}
    functions: dict[int, m.Verb] = {}
    statuses = program.statuses
    for v in program.verbs.values():
        oloc = v.ref_locs.get("ordinal", v.loc)
        if v.ordinal in ordinals:
            errors.add(oloc, f"verb '{v.name}' has ordinal 0x{v.ordinal:04X}, already used by verb '{ordinals[v.ordinal].name}'")
        ordinals.setdefault(v.ordinal, v)
        if v.ioctl_function is not None:
            floc = v.ref_locs.get("ioctl", v.loc)
            if not 0 <= v.ioctl_function <= 0xFFF:
                errors.add(floc, f"ioctl function code 0x{v.ioctl_function:X} of verb '{v.name}' does not fit in 12 bits")
            elif v.ioctl_function in functions:
                errors.add(floc, f"ioctl function code 0x{v.ioctl_function:X} of verb '{v.name}' is already used by verb "
                                 f"'{functions[v.ioctl_function].name}'")
            functions.setdefault(v.ioctl_function, v)
        if not v.paths:
            errors.add(v.loc, f"verb '{v.name}' has no 'paths' clause")
        if "proxy" in v.paths and v.ioctl_function is None:
            errors.add(v.ref_locs.get("paths", v.loc), f"verb '{v.name}' has the proxy path but no 'ioctl' clause")
        if v.is_speed and v.ioctl_function is not None:
            errors.add(v.ref_locs.get("ioctl", v.loc), f"speed-path verb '{v.name}' never crosses the IOCTL channel; remove its 'ioctl' clause")
        if v.is_speed and len(v.paths) > 1:
            errors.add(v.ref_locs.get("paths", v.loc), f"verb '{v.name}': 'speed' cannot be combined with other paths")
        for s in v.returns:
            if statuses is None:
                errors.add(v.ref_locs.get(s, v.loc), f"verb '{v.name}' returns '{s}' but there is no statuses declaration")
            elif statuses.member(s) is None:
                errors.add(v.ref_locs.get(s, v.loc), f"verb '{v.name}' returns unknown status '{s}' (not in statuses '{statuses.name}')")
        check_params(v, errors)
        if program.module_target(v.module) == "hca":
            check_hca_verb(v, errors)
        elif program.module_target(v.module) == "device":
            check_device_verb(v, errors)


def check_hca_verb(v: m.Verb, errors: ErrorCollector) -> None:
    """A verb of a `target hca` module is an internal IOCTL of the CA's device: the IRP path
    only (its callers are kernel code: the AL, tests), an ioctl code, no handles (objects are
    CA-local numbers the HCA checks), and `async` (the HCA may pend any of them)."""
    where = f"verb '{v.name}' of a 'target hca' module"
    if v.paths and v.paths != ["irp"]:
        errors.add(v.ref_locs.get("paths", v.loc), f"{where} has only the irp path (paths irp;)")
    if v.ioctl_function is None:
        errors.add(v.loc, f"{where} needs an 'ioctl' clause (its IRP carries the code)")
    if v.mode != "async":
        errors.add(v.loc, f"{where} must be async: the HCA driver may pend any of them")
    for q in v.params:
        if q.type.is_handle:
            errors.add(q.loc, f"{where}: parameter '{q.name}' is a handle; objects of the HCA "
                              f"are CA-local numbers (u32)")


def check_device_verb(v: m.Verb, errors: ErrorCollector) -> None:
    """A verb of a `target device` module is an IOCTL of a driver's own named device, sent by
    user processes (proxies) and kernel clients (IRP builders): `paths irp, proxy;`, an ioctl
    code, and no handles (the device has no per-file object table; what it names, it names by
    value)."""
    where = f"verb '{v.name}' of a 'target device' module"
    if v.paths and sorted(v.paths) != ["irp", "proxy"]:
        errors.add(v.ref_locs.get("paths", v.loc), f"{where} has the irp and proxy paths (paths irp, proxy;)")
    if v.ioctl_function is None and not v.is_speed:
        errors.add(v.loc, f"{where} needs an 'ioctl' clause")
    if v.mode == "sync" and "PENDING" in v.returns:
        errors.add(v.ref_locs.get("PENDING", v.loc),
                   f"{where} is sync: its IRP is completed with what the handler returns, and never "
                   f"with PENDING; return another status for 'not yet' (NOT_DONE)")
    for q in v.params:
        if q.type.is_handle:
            errors.add(q.loc, f"{where}: parameter '{q.name}' is a handle; a driver's device "
                              f"resolves no per-file handles")


def check_params(v: m.Verb, errors: ErrorCollector) -> None:
    seen: dict[str, m.Param] = {}
    for q in v.params:
        loc = q.ref_locs.get("access", q.loc)
        if q.access == "new" and q.direction != "out":
            errors.add(loc, f"'new' is only for out handles; parameter '{q.name}' of verb '{v.name}' is {q.direction}")
        if q.access == "destroy" and q.direction != "in":
            errors.add(loc, f"'destroy' is only for in handles; parameter '{q.name}' of verb '{v.name}' is {q.direction}")
        if q.access in ("new", "destroy"):
            if q.access in seen:
                errors.add(loc, f"verb '{v.name}' has two '{q.access}' parameters: '{seen[q.access].name}' and '{q.name}'")
            seen.setdefault(q.access, q)
        if (q.reserved or q.pad) and q.type.is_handle:
            errors.add(q.loc, f"{'reserved' if q.reserved else 'pad'} parameter '{q.name}' cannot be a handle")
        if (q.reserved or q.pad) and q.optional:
            errors.add(q.loc, f"{'reserved' if q.reserved else 'pad'} parameter '{q.name}' cannot be optional")


def check_objects(program: m.Program, errors: ErrorCollector) -> None:
    creators: dict[str, list[tuple[m.Verb, m.Param]]] = {}
    destroyers: dict[str, list[tuple[m.Verb, m.Param]]] = {}
    for v in program.verbs.values():
        for q in v.params:
            if q.type.handle_object is None:
                continue
            table = {"new": creators, "destroy": destroyers}.get(q.access)
            if table is not None:
                entries = table.setdefault(q.type.handle_object.name, [])
                if all(other is not v for other, _ in entries):  # check_params reports a verb's second one
                    entries.append((v, q))
    for o in program.objects.values():
        for table, word, attr in ((creators, "creating", "creator"), (destroyers, "destroying", "destroyer")):
            verbs = table.get(o.name, [])
            access = "new" if attr == "creator" else "destroy"
            if not verbs and not o.implicit:
                errors.add(o.loc, f"object '{o.name}' has no {word} verb (a handle<{o.name}> parameter with access "
                                  f"'{access}'); mark it implicit if the runtime manages it")
            if attr == "creator" and o.created_by:
                check_declared_creators(o, verbs, errors)
            else:
                for v, q in verbs[1:]:
                    errors.add(q.ref_locs.get("access", q.loc),
                               f"object '{o.name}' has two {word} verbs: '{verbs[0][0].name}' and '{v.name}'")
            if verbs:
                setattr(o, attr, verbs[0][0])
            if attr == "creator":
                o.creators = [v for v, _ in verbs]


def check_declared_creators(o: m.Object, verbs: list[tuple[m.Verb, m.Param]], errors: ErrorCollector) -> None:
    """With `created_by`, the creating verbs must be exactly the ones the object names."""
    actual = {v.name: q for v, q in verbs}
    for name in o.created_by:
        if name not in actual:
            errors.add(o.ref_locs.get("created_by:" + name, o.loc),
                       f"object '{o.name}' names '{name}' in created_by, but that verb has no "
                       f"handle<{o.name}> parameter with access 'new'")
    for v, q in verbs:
        if v.name not in o.created_by:
            errors.add(q.ref_locs.get("access", q.loc),
                       f"verb '{v.name}' creates '{o.name}' but is not in the object's created_by list")


RESERVED_PUBLIC_NAMES = {"al", "handle"}


def _param_named(v: m.Verb, name: str, directions: tuple[str, ...]) -> Optional[m.Param]:
    return next((q for q in v.params if q.name == name and q.direction in directions), None)


def _struct_field(struct: Optional[m.Struct], name: str) -> Optional[m.Field]:
    if struct is None:
        return None
    return next((f for f in struct.fields if f.name == name), None)


def query_verb(program: m.Program, o: m.Object) -> Optional[m.Verb]:
    """Query<Object>, when it exists and takes the object's handle."""
    v = program.verbs.get(f"Query{o.name}")
    if v is None or not v.params or v.params[0].type.handle_of != o.name:
        return None
    return v


def check_public(program: m.Program, errors: ErrorCollector) -> None:
    """`public` fields: each names a parameter (or a field path into one) of the object's
    creating verb — its outputs first, then its inputs — or else an output of Query<Object>;
    never a reserved, pad or variable field; a handle only as an input of the creating verb,
    to an object that has a public structure too (the field then points at that structure)."""
    for o in program.objects.values():
        if o.public is None:
            continue
        loc = o.ref_locs.get("public", o.loc)
        if o.creator is None:
            errors.add(loc, f"object '{o.name}' has public fields but no creating verb")
            continue
        if o.parent_obj is not None and o.parent_obj.public is None and not o.parent_obj.implicit:
            errors.add(loc, f"object '{o.name}' has public fields but its parent '{o.parent_obj.name}' has none")
        names: set[str] = set()
        parent_name = a_lower(o.parent) if o.parent else None
        for pf in o.public:
            if pf.name in names:
                errors.add(pf.loc, f"object '{o.name}' names public field '{pf.name}' twice")
            names.add(pf.name)
            if pf.name in RESERVED_PUBLIC_NAMES or pf.name == parent_name:
                errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}' is a name the generator "
                                   f"uses itself ({', '.join(sorted((RESERVED_PUBLIC_NAMES | {parent_name or ''}) - {''}))})")
                continue
            resolve_public_field(program, o, pf, errors)


def a_lower(name: str) -> str:
    """The C++ member name of an object pointer: CamelCase -> snake_case."""
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i:
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def resolve_public_field(program: m.Program, o: m.Object, pf: m.PublicField, errors: ErrorCollector) -> None:
    v = o.creator
    head = pf.source[0]
    q = _param_named(v, head, ("out", "inout"))
    origin, struct = "out", v.out_struct
    if q is None:
        q = _param_named(v, head, ("in",))
        origin, struct = "in", v.in_struct
    if q is None:
        qv = query_verb(program, o)
        q = _param_named(qv, head, ("out", "inout")) if qv is not None else None
        origin, struct, v = "query", (qv.out_struct if qv else None), qv
    if q is None or v is None:
        errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': '{head}' is no parameter of "
                           f"'{o.creator.name}' nor an output of 'Query{o.name}'")
        return
    leaf = _struct_field(struct, head)
    for part in pf.source[1:]:
        decl = leaf.type.decl if leaf is not None else None
        if not isinstance(decl, m.Struct):
            errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': '{pf.path}' goes into "
                               f"something that is not a struct")
            return
        leaf = _struct_field(decl, part)
        if leaf is None:
            errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': struct '{decl.name}' has no "
                               f"field '{part}'")
            return
    if leaf is None or leaf.reserved or leaf.pad or leaf.variable:
        errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': '{pf.path}' is a reserved, pad or "
                           f"variable-length field")
        return
    if leaf.type.is_handle:
        target = leaf.type.handle_object
        if origin != "in" or len(pf.source) != 1 or leaf.array is not None:
            errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': a handle is public only as an "
                               f"input of the creating verb (the client passes the object)")
            return
        if target is None or target.public is None:
            errors.add(pf.loc, f"public field '{pf.name}' of object '{o.name}': handle<{leaf.type.handle_of}> "
                               f"names an object without public fields")
            return
        pf.handle_object = target
    pf.origin, pf.verb, pf.leaf = origin, v, leaf


def check_field_names(program: m.Program, errors: ErrorCollector) -> None:
    """Field names are unique (reserved and pad fields are named: the grammar requires it)."""
    for s in program.structs.values():
        names: dict[str, m.Field] = {}
        for f in s.fields:
            if f.name in names and s.verb is None:
                errors.add(f.loc, f"duplicate field '{f.name}' in struct '{s.name}'")
            names.setdefault(f.name, f)
    for lay in program.layouts.values():
        names2: dict[str, m.BitField] = {}
        for bf in lay.fields:
            if bf.name in names2:
                errors.add(bf.loc, f"duplicate field '{bf.name}' in {lay.kind} '{lay.name}'")
            names2.setdefault(bf.name, bf)


# ---------------------------------------------------------------- QP state machine


def check_qp_state_machine(program: m.Program, errors: ErrorCollector) -> None:
    sm = program.qp_state_machine
    if sm is None:
        return

    def decl(name: str, table: dict, what: str, key: str):
        d = table.get(name)
        if d is None or (isinstance(d, m.Enum) and d.kind != "enum"):
            errors.add(sm.ref_locs.get(key, sm.loc), f"qp_state_machine: unknown {what} '{name}'")
            return None
        return d

    states = decl(sm.state_enum, program.enums, "state enum", "state")
    types = decl(sm.type_enum, program.enums, "QP type enum", "type")
    mask = decl(sm.mask_flags, program.flags, "attribute mask flags", "mask")
    seen: dict[tuple, m.Transition] = {}
    for t in sm.transitions:
        def need(owner, name: str, what: str, key: Optional[str] = None) -> None:
            if owner is not None and owner.member(name) is None:
                errors.add(t.ref_locs.get(key or name, t.loc), f"qp_state_machine: '{name}' is not {what} of '{owner.name}'")

        if t.from_state is not None:
            need(states, t.from_state, "a state", "from")
        need(states, t.to_state, "a state", "to")
        for q in t.qp_types or []:
            need(types, q, "a QP type")
        for a in t.required + t.optional:
            need(mask, a, "a mask bit")
        both = set(t.required) & set(t.optional)
        for a in sorted(both):
            errors.add(t.ref_locs.get(a, t.loc), f"qp_state_machine: '{a}' is both required and optional")
        for q in t.qp_types or [None]:
            key = (t.from_state, t.to_state, q)
            if key in seen:
                errors.add(t.loc, f"qp_state_machine: transition {t.from_state or '*'} -> {t.to_state} for "
                                  f"{q or '*'} is declared twice")
            seen.setdefault(key, t)


# ---------------------------------------------------------------- MADs


def check_layouts(program: m.Program, errors: ErrorCollector) -> None:
    ids: dict[tuple[str, int], m.Layout] = {}
    for lay in program.layouts.values():
        components: dict[int, m.BitField] = {}
        for f in lay.fields:
            if f.component is None:
                continue
            if lay.kind != "attribute":
                errors.add(f.loc, f"field '{f.name}': 'component' is only for SA attributes")
            elif f.component in components:
                errors.add(f.loc, f"field '{f.name}' has component bit {f.component}, already used by field "
                                  f"'{components[f.component].name}' of attribute '{lay.name}'")
            components.setdefault(f.component, f)
        if lay.kind == "attribute":
            for c in lay.class_objs:
                key = (c.name, lay.attr_id)
                if key in ids:
                    errors.add(lay.loc, f"attribute '{lay.name}' has ID 0x{lay.attr_id:04X}, already used by "
                                        f"'{ids[key].name}' in class '{c.name}'")
                ids.setdefault(key, lay)
    values: dict[int, m.MadClass] = {}
    for c in program.mad_classes.values():
        if c.value in values:
            errors.add(c.loc, f"mad_class '{c.name}' has code 0x{c.value:02X}, already used by '{values[c.value].name}'")
        values.setdefault(c.value, c)


def check(program: m.Program, lock: Optional[dict[str, int]] = None) -> None:
    """Run every lint; `lock` is the ordinals.lock content (None: skip that lint). Raise IdlErrors."""
    errors = ErrorCollector()
    check_verbs(program, errors)
    check_objects(program, errors)
    check_public(program, errors)
    check_field_names(program, errors)
    check_qp_state_machine(program, errors)
    check_layouts(program, errors)
    if lock is not None:
        check_lock(program, lock, errors)
    errors.raise_if_any()
