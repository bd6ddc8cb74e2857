"""Objects backend: the kernel direct-call API over public object structures (the seeds'
`IbCreateCq(IB_CA*, IB_CQ_CREATE*, IRP*)`).

Program-wide, kernel/verbs_objects.h: one public structure IB_<OBJECT> per object with a
`public` clause (the client instance, the handle, the parent, the public fields) and one
IB_<OBJECT>_CREATE per object (what a client fills to create it: the creating verb's
inputs minus the parent, with objects for handles). Per module, kernel/<module>_ib.{h,cc}:
one function per control verb on such an object, built over the handle-based direct call
of kernel/<module>_direct.h (ObjectCall, runtime/kernel/include/softib/kernel/object_call.h):
  - the creating verb:  Status Ib<Verb>(IB_<Parent>*, const IB_<X>_CREATE*, Irp*), the IRP
    completing with Information = the new IB_<X>*;
  - the destroying verb: Status Ib<Verb>(IB_<X>*, Irp*), freeing the structure on success;
  - every other verb whose first input is the object's handle:
    Status Ib<Verb>(IB_<X>*, [const abi::<Verb>In&,] [in span,] [abi::<Verb>Out*,] [out span,] Irp*)
    (the In structure's own handle is taken from the object; public fields that the verb
    reports are refreshed on success).
"""

from __future__ import annotations

from typing import Optional

from .. import lints
from .. import model as m
from . import abi as a

KDIR = "kernel"
OBJECTS_H = f"{KDIR}/verbs_objects.h"


def struct_name(o: m.Object) -> str:
    return "IB_" + a.snake_upper(o.name)


def member(name: str) -> str:
    return a.ident(lints.a_lower(name))


def public_objects(program: m.Program) -> list[m.Object]:
    return [o for o in program.objects.values() if o.public is not None and o.creator is not None]


def _parent_type(o: m.Object) -> str:
    p = o.parent_obj
    if p is None or p.public is None:
        return "IbAl"
    return struct_name(p)


def _parent_param(o: m.Object) -> Optional[m.Param]:
    """The creating verb's handle of the parent."""
    if o.parent is None:
        return None
    return next((q for q in o.creator.params if q.direction == "in" and q.type.handle_of == o.parent), None)


def _field_decl(f: m.Field, name: str) -> str:
    t = a.qualified(f.type)
    return f"{t} {name}[{f.array}];" if f.array is not None else f"{t} {name};"


def _count_fields(s: Optional[m.Struct]) -> set[str]:
    if s is None:
        return set()
    return {f.count_field for f in s.fields if f.variable and f.count_field}


def _copy(dst: str, src: str, f: m.Field) -> str:
    if f.array is not None:
        return f"std::memcpy({dst}, {src}, sizeof({dst}));"
    return f"{dst} = {src};"


def create_fields(o: m.Object) -> list[dict]:
    """IB_<X>_CREATE: the creating verb's inputs minus the parent, reserved and pad fields
    and the counts of variable arrays (a span carries its count)."""
    v = o.creator
    parent = _parent_param(o)
    counts = _count_fields(v.in_struct)
    out = []
    for f in (v.in_struct.fields if v.in_struct else []):
        if f.reserved or f.pad or f.name in counts or (parent is not None and f.name == parent.name):
            continue
        name = a.ident(f.name)
        q = a.param_of(v, f, "in") or a.param_of(v, f, "inout")
        doc = a.cdoc(q.doc) if q is not None and q.doc else ""
        if f.variable:
            out.append({"decl": f"std::span<const {a.qualified(f.type)}> {name};", "doc": doc,
                        "name": name, "field": f, "kind": "span"})
        elif f.type.is_handle and f.type.handle_object is not None and f.type.handle_object.public is not None:
            out.append({"decl": f"{struct_name(f.type.handle_object)}* {name} = nullptr;", "doc": doc,
                        "name": name, "field": f, "kind": "object"})
        else:
            out.append({"decl": _field_decl(f, name)[:-1] + "{};",
                        "doc": doc, "name": name, "field": f, "kind": "value"})
    return out


def object_view(program: m.Program, o: m.Object) -> dict:
    fields = []
    for pf in o.public:
        name = a.ident(pf.name)
        if pf.handle_object is not None:
            fields.append(f"{struct_name(pf.handle_object)}* {name};")
        else:
            fields.append(_field_decl(pf.leaf, name))
    return {
        "name": o.name, "struct": struct_name(o), "doc": a.cdoc(o.doc),
        "parent_type": _parent_type(o), "parent": member(o.parent) if _parent_type(o) != "IbAl" else None,
        "fields": fields, "create": create_fields(o), "creator": o.creator.name,
    }


# ---------------------------------------------------------------- verbs


def object_of(program: m.Program, v: m.Verb) -> Optional[m.Object]:
    """The public object a verb is a control verb of (its creator, destroyer or first handle)."""
    if v.is_speed or "direct" not in v.paths:
        return None
    for o in public_objects(program):
        if o.creator is v:
            return o
    if not v.params:
        return None
    first = v.params[0]
    o = first.type.handle_object
    if first.direction != "in" or o is None or o.public is None or o.creator is None:
        return None
    if v.creates is not None:  # creates another object (AttachMcast, RegShared, ...)
        return None
    if v.destroys is not None and v.destroys.type.handle_object is not o:
        return None
    return o


def _refreshes(o: m.Object, v: m.Verb) -> list[str]:
    """Statements refreshing public fields from a successful verb: an output of the same
    name and type, or an input of a verb whose only input beside the object is that one."""
    stmts = []
    in_fields = [f for f in (v.in_struct.fields if v.in_struct else []) if not (f.reserved or f.pad)]
    for pf in o.public:
        if pf.handle_object is not None:
            continue
        f = next((x for x in (v.out_struct.fields if v.out_struct else []) if x.name == pf.name), None)
        src = "out"
        if f is None and len(in_fields) == 2 and in_fields[1].name == pf.name:
            f, src = in_fields[1], "in"
        if f is None or f.variable or f.type.name != pf.leaf.type.name or f.array != pf.leaf.array:
            continue
        if f.type.is_handle:
            continue
        stmts.append(_copy(f"object->{a.ident(pf.name)}", f"{src}.{a.ident(f.name)}", f))
    return stmts


def _query_fill(program: m.Program, o: m.Object) -> Optional[dict]:
    """A create whose public fields come partly from Query<Object>: the query to run."""
    need = [pf for pf in o.public if pf.origin == "query"]
    if not need:
        return None
    qv = lints.query_verb(program, o)
    ins = [f for f in (qv.in_struct.fields if qv.in_struct else []) if not (f.reserved or f.pad)]
    if len(ins) != 1:
        raise a.BackendError(f"{qv.loc}: verb '{qv.name}' fills public fields of '{o.name}' at creation, "
                             f"so it may take only the object's handle")
    outs = qv.out_struct
    var = outs.variable_field if outs else None
    stmts = [_copy(f"object->{a.ident(pf.name)}", f"qout.{a.ident(pf.leaf.name) if len(pf.source) == 1 else pf.path}",
                   pf.leaf) for pf in need]
    return {
        "verb": qv.name, "in": qv.in_struct.name, "out": outs.name, "handle": a.ident(ins[0].name),
        "var_type": a.qualified(var.type) if var else None, "var_max": var.max_count if var else None,
        "stmts": stmts,
        "close": o.destroyer.name if o.destroyer else None,
        "close_in": o.destroyer.in_struct.name if o.destroyer else None,
        "close_handle": a.ident(o.destroyer.in_struct.fields[0].name) if o.destroyer else None,
    }


def verb_view(program: m.Program, v: m.Verb, o: m.Object) -> dict:
    ins, outs = v.in_struct, v.out_struct
    in_var = ins.variable_field if ins else None
    out_var = outs.variable_field if outs else None
    view = {"name": v.name, "doc": a.cdoc(v.doc), "object": o.name, "struct": struct_name(o),
            "obj_param": member(o.name), "irql": "kDispatch" if v.irql == "dispatch" else "kPassive",
            "in": ins.name if ins else None, "out": outs.name if outs else None,
            "invalid": a.invalid_handle_status(program, o.name)}
    # The handle-based call's arguments after `al`.
    call_args = []
    if ins:
        call_args.append("call->in")
    if o.creator is v:
        view["kind"] = "create"
        view["parent_type"] = _parent_type(o)
        view["parent_param"] = member(o.parent) if view["parent_type"] != "IbAl" else "al"
        view["parent_invalid"] = a.invalid_handle_status(program, o.parent) if o.parent else "INVALID_PARAMETER"
        parent = _parent_param(o)
        pre = []
        if parent is not None:
            pre.append(f"call->in.{a.ident(parent.name)}.value = "
                       + ("al_handle" if view["parent_type"] == "IbAl" else f"{view['parent_param']}->handle") + ";")
        for cf in create_fields(o):
            f = cf["field"]
            if cf["kind"] == "span":
                pre.append(f"call->in.{a.ident(f.count_field)} = static_cast<uint32_t>(create->{cf['name']}.size());")
            elif cf["kind"] == "object":
                pre.append(f"call->in.{a.ident(f.name)}.value = create->{cf['name']} != nullptr ? "
                           f"create->{cf['name']}->handle : 0;")
            else:
                pre.append(_copy(f"call->in.{a.ident(f.name)}", f"create->{cf['name']}", f))
        if in_var:
            call_args.append(f"create->{a.ident(in_var.name)}")
        fill = [f"object->al = {'al' if view['parent_type'] == 'IbAl' else view['parent_param'] + '->al'};"]
        if view["parent_type"] != "IbAl":
            fill.append(f"object->{member(o.parent)} = {view['parent_param']};")
        for pf in o.public:
            if pf.handle_object is not None:
                fill.append(f"object->{a.ident(pf.name)} = create->{a.ident(pf.source[0])};")
        done = [f"object->handle = out.{a.ident(v.creates.name)}.value;"]
        for pf in o.public:
            if pf.handle_object is not None or pf.origin == "query":
                continue
            src = "out" if pf.origin == "out" else "in"
            done.append(_copy(f"object->{a.ident(pf.name)}", f"{src}.{pf.path}", pf.leaf))
        view.update({"pre": pre, "fill": fill, "done": done, "query": _query_fill(program, o),
                     "create_struct": struct_name(o) + "_CREATE", "out_var": None})
        if out_var:
            raise a.BackendError(f"{v.loc}: creating verb '{v.name}' of a public object has a variable output")
        call_args.append("call->out")
    else:
        view["kind"] = "destroy" if v.destroys is not None else "op"
        handle_field = ins.fields[0]
        rest = [f for f in ins.fields[1:] if not (f.reserved or f.pad)]
        params = [f"{struct_name(o)}* {view['obj_param']}"]
        view["takes_in"] = bool(rest) and view["kind"] == "op"
        if view["kind"] == "destroy" and rest:
            raise a.BackendError(f"{v.loc}: destroying verb '{v.name}' takes more than the object")
        if view["takes_in"]:
            params.append(f"const abi::{ins.name}& in")
        if in_var:
            params.append(f"std::span<const {a.qualified(in_var.type)}> {a.local_ident(in_var.name)}")
            call_args.append(a.local_ident(in_var.name))
        if outs:
            params.append(f"abi::{outs.name}* out")
            call_args.append("call->out")
        if out_var:
            params.append(f"std::span<{a.qualified(out_var.type)}> {a.local_ident(out_var.name)}")
            call_args.append(a.local_ident(out_var.name))
        view["params"] = ", ".join(params + ["Irp* irp"])
        view["handle_field"] = a.ident(handle_field.name)
        view["refresh"] = _refreshes(o, v) if view["kind"] == "op" else []
    view["call_args"] = ", ".join(call_args)
    return view


def module_object_verbs(program: m.Program, module: str) -> list[tuple[m.Verb, m.Object]]:
    out = []
    for v in a.module_verbs(program, module):
        o = object_of(program, v)
        if o is not None:
            out.append((v, o))
    return out


def emit(program: m.Program, render) -> dict[str, str]:
    files: dict[str, str] = {}
    objects = public_objects(program)
    if not objects:
        return files
    for need in ("SUCCESS", "INVALID_PARAMETER", "PENDING", "INSUFFICIENT_RESOURCES"):
        a.require_status(program, need, "the object API")
    headers = sorted({f"softib/abi/{m_}.h" for o in objects for m_ in [o.creator.module]})
    files[OBJECTS_H] = render("kernel_objects.h.j2", comment=a.header_comment(a.all_sources(program)),
                              objects=[object_view(program, o) for o in objects], abi_headers=headers)
    for module in a.module_names(program):
        pairs = module_object_verbs(program, module)
        if not pairs:
            continue
        ctx = {"comment": a.header_comment([a.source_of(program, module)]), "module": module,
               "verbs": [verb_view(program, v, o) for v, o in pairs]}
        files[f"{KDIR}/{module}_ib.h"] = render("kernel_ib.h.j2", **ctx)
        files[f"{KDIR}/{module}_ib.cc"] = render("kernel_ib.cc.j2", **ctx)
    return files
