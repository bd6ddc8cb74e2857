"""Codec backend: C++ value structs, views and descriptor tables for every MAD
format/attribute and wire header, their round-trip conformance tests, and the
MAD reference.

Outputs (relative to generated/):
  include/softib/mad/<module>.h, include/softib/wire/<module>.h
                                                               structs, views, enums (the
                                                               WIRE_MODULES in softib::wire)
  codec/<module>.cc                                            pack/unpack, descriptors
  codec/registry.cc                                            AllFormats/...; enum, class
                                                               and opcode descriptors
  conformance/mad/<module>_roundtrip.cc                        GoogleTest round trips
  docs/mad_reference.md                                        field tables

This module turns the model into plain view objects (everything a template
needs, precomputed); the templates only format them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field as dc_field
from typing import Optional

from .. import model as m
from ..errors import ErrorCollector, IdlErrors

WIRE_MODULE = "wire"
# Modules whose layouts are wire formats rather than MADs: namespace softib::wire, header
# softib/wire/<module>.h (the IBA headers; the IPoIB encapsulation, ARP and ND formats).
WIRE_MODULES = {WIRE_MODULE, "ipoib"}

_CPP_KEYWORDS = set(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)
# Macros from the C/C++ headers a generated file includes.
_MACROS = {"NULL", "EOF", "assert", "errno", "stdin", "stdout", "stderr", "BUFSIZ", "TRUE",
           "FALSE", "DOMAIN", "OVERFLOW", "UNDERFLOW", "unix", "linux", "i386"}
# Names the generated struct/view/function bodies use; a field may not take them.
_STRUCT_NAMES = {"kSize", "kName", "kAttributeId", "Desc", "Unpack", "Pack", "Validate",
                 "Print", "bytes", "bytes_", "mutable_bytes_", "out", "problems", "os", "i",
                 "v", "codec", "std", "softib", "mad", "wire", "uint8_t", "uint16_t",
                 "uint32_t", "uint64_t", "size_t"}

_DESC_KIND = {"uint": "kUInt", "enum": "kEnum", "bool": "kBool", "gid": "kGid",
              "bytes": "kBytes", "string": "kString"}
_LAYOUT_KIND = {"format": "kFormat", "header": "kHeader", "attribute": "kAttribute"}
_BYTE_KINDS = {"gid", "bytes", "string"}


def _ctype(width: int) -> str:
    for bits in (8, 16, 32, 64):
        if width <= bits:
            return f"uint{bits}_t"
    raise ValueError(width)


def _ctype_bits(width: int) -> int:
    return int(_ctype(width)[4:-2])


def _cstr(text: str) -> str:
    """A C++ string literal."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _doc_lines(doc: str) -> list[str]:
    return [line.rstrip() for line in doc.strip().splitlines()] if doc and doc.strip() else []


@dataclass
class FieldView:
    name: str
    width: int
    bit_offset: int
    byte: int
    bit: int
    repeat: int
    stride: int
    kind: str
    reserved: bool
    component: Optional[int]
    doc_lines: list[str]
    enum: Optional[m.Enum]
    first_value: int  # index of element 0 in DecodeFields() output

    @property
    def is_bytes(self) -> bool:
        return self.kind in _BYTE_KINDS

    @property
    def repeated(self) -> bool:
        return self.repeat > 1

    @property
    def nbytes(self) -> int:
        return self.width // 8

    @property
    def byte_offset(self) -> int:
        return self.bit_offset // 8

    @property
    def byte_stride(self) -> int:
        return self.stride // 8

    @property
    def elem_type(self) -> str:
        """Type of one element (member storage and accessor value)."""
        if self.is_bytes:
            return f"std::array<uint8_t, {self.nbytes}>"
        return _ctype(self.width)

    @property
    def scalar_type(self) -> str:
        return _ctype(self.width)

    @property
    def member_type(self) -> str:
        if self.repeated:
            return f"std::array<{self.elem_type}, {self.repeat}>"
        return self.elem_type

    @property
    def needs_fit_check(self) -> bool:
        return not self.is_bytes and self.width < _ctype_bits(self.width)

    @property
    def mask(self) -> str:
        return f"0x{(1 << self.width) - 1:x}" if not self.is_bytes else ""

    @property
    def desc_kind(self) -> str:
        return _DESC_KIND[self.kind]

    @property
    def enum_ref(self) -> str:
        return f"&k{self.enum.name}Enum" if self.enum is not None else "nullptr"

    @property
    def component_value(self) -> int:
        return self.component if self.component is not None else -1

    @property
    def position(self) -> str:
        """byte[bit] in the specification's notation."""
        return f"{self.byte}[{self.bit}]"

    @property
    def valid_enum_value(self) -> Optional[str]:
        if self.enum is None or not self.enum.members:
            return None
        return f"0x{self.enum.members[0].value:x}"

    @property
    def bad_enum_value(self) -> Optional[str]:
        """A value that fits the field but is not a member, if one exists."""
        if self.enum is None:
            return None
        values = {mem.value for mem in self.enum.members}
        limit = 1 << self.width
        candidate = 0
        while candidate in values:
            candidate += 1
        return f"0x{candidate:x}" if candidate < limit else None

    @property
    def overflow_value(self) -> Optional[str]:
        return f"0x{1 << self.width:x}" if self.needs_fit_check else None

    def element_name(self, i: int) -> str:
        return f"{self.name}[{i}]" if self.repeated else self.name


@dataclass
class LayoutView:
    name: str
    kind: str
    size: int
    doc_lines: list[str]
    fields: list[FieldView]
    attr_id: Optional[int]
    class_values: list[int]
    class_names: list[str]
    methods: list[str]
    modifier: str
    doc: str

    @property
    def kind_enum(self) -> str:
        return _LAYOUT_KIND[self.kind]

    @property
    def value_count(self) -> int:
        return sum(f.repeat for f in self.fields)

    @property
    def reserved_field(self) -> Optional[FieldView]:
        return next((f for f in self.fields if f.reserved), None)

    @property
    def bad_enum_field(self) -> Optional[FieldView]:
        return next((f for f in self.fields if f.bad_enum_value is not None), None)

    @property
    def overflow_field(self) -> Optional[FieldView]:
        return next((f for f in self.fields if f.needs_fit_check), None)

    @property
    def enum_fields(self) -> list[FieldView]:
        return [f for f in self.fields if f.enum is not None]


@dataclass
class EnumView:
    name: str
    ctype: str
    doc_lines: list[str]
    members: list[tuple[str, str, str, list[str]]]  # (idl name, C++ name, value, doc)
    kind: str
    module: str
    opcode_rows: list[tuple[str, int, list[str], bool]] = dc_field(default_factory=list)


@dataclass
class ModuleView:
    name: str
    source: str  # "idl/<file>"
    namespace: str
    header: str  # include path
    layouts: list[LayoutView]
    enums: list[EnumView]
    mad_classes: list[m.MadClass]
    extern_enums: list[str]  # enum descriptors the module's fields refer to


class _Builder:
    def __init__(self, program: m.Program):
        self.program = program
        self.errors = ErrorCollector()

    def source_name(self, module: m.Module) -> str:
        return "idl/" + os.path.basename(module.path) if module.path else f"idl/{module.name}.idl"

    def codec_modules(self) -> list[m.Module]:
        used_enums = {f.enum_name for lay in self.program.layouts.values() for f in lay.fields
                      if f.kind == "enum"}
        result = []
        for mod in self.program.modules:
            has = any(isinstance(d, (m.Layout, m.MadClass)) for d in mod.decls) or any(
                isinstance(d, m.Enum) and (d.kind == "opcodes" or d.name in used_enums)
                for d in mod.decls)
            if has:
                result.append(mod)
        return result

    def enum_of(self, f: m.BitField) -> Optional[m.Enum]:
        if f.kind != "enum":
            return None
        return f.enum or self.program.enums.get(f.enum_name or "")

    def check_name(self, loc: m.Loc, name: str, layout: str, what: str) -> None:
        if name in _CPP_KEYWORDS or name in _MACROS or name in _STRUCT_NAMES or name == layout \
                or name.startswith("set_") or name.endswith("_"):
            self.errors.add(loc, f"{what} name '{name}' cannot be used in the generated C++ "
                                 f"codec of '{layout}'; rename it")

    def field_view(self, lay: m.Layout, f: m.BitField, first_value: int) -> FieldView:
        self.check_name(f.loc, f.name, lay.name, "field")
        stride = f.elem_stride
        if f.kind in _BYTE_KINDS:
            if f.width % 8 or f.bit_offset % 8 or (f.repeat > 1 and stride % 8):
                self.errors.add(f.loc, f"field '{f.name}' of kind {f.kind} must be byte-aligned "
                                       "and a whole number of bytes")
        elif f.width > 64 or f.width < 1:
            self.errors.add(f.loc, f"field '{f.name}' is {f.width} bits wide; an integer field "
                                   "has 1 to 64 bits (use 'as bytes' for wider ones)")
        enum = self.enum_of(f)
        if f.kind == "enum" and enum is None:
            self.errors.add(f.loc, f"unknown enum '{f.enum_name}'")
        return FieldView(
            name=f.name, width=f.width, bit_offset=f.bit_offset, byte=f.byte, bit=f.bit,
            repeat=f.repeat, stride=stride, kind=f.kind, reserved=f.reserved,
            component=f.component, doc_lines=_doc_lines(f.doc), enum=enum,
            first_value=first_value)

    def layout_view(self, lay: m.Layout) -> LayoutView:
        fields = []
        count = 0
        seen = set()
        for f in lay.fields:
            if f.name in seen:
                self.errors.add(f.loc, f"duplicate field name '{f.name}' in '{lay.name}'")
            seen.add(f.name)
            fields.append(self.field_view(lay, f, count))
            count += f.repeat
        classes = lay.class_objs or [self.program.mad_classes[c] for c in lay.classes
                                     if c in self.program.mad_classes]
        return LayoutView(
            name=lay.name, kind=lay.kind, size=lay.size, doc_lines=_doc_lines(lay.doc),
            fields=fields, attr_id=lay.attr_id if lay.kind == "attribute" else None,
            class_values=[c.value for c in classes], class_names=[c.name for c in classes],
            methods=list(lay.methods), modifier=lay.modifier, doc=lay.doc.strip())

    def enum_view(self, e: m.Enum) -> EnumView:
        members = []
        for mem in e.members:
            cname = mem.name + "_" if mem.name in _CPP_KEYWORDS or mem.name in _MACROS \
                else mem.name
            members.append((mem.name, cname, f"0x{mem.value:x}", _doc_lines(mem.doc)))
        view = EnumView(name=e.name, ctype=_ctype(_underlying_bits(e.underlying)),
                        doc_lines=_doc_lines(e.doc), members=members, kind=e.kind,
                        module=e.module)
        if e.kind == "opcodes":
            if any(not 0 <= mem.value <= 0xFF for mem in e.members):
                self.errors.add(e.loc, f"opcodes table '{e.name}' must have values 0..255")
            for mem in e.members:
                for h in mem.headers:
                    lay = self.program.layouts.get(h)
                    if lay is None or lay.kind != "header":
                        self.errors.add(mem.loc, f"opcode '{mem.name}' names '{h}', "
                                                 "which is not a header")
            view.opcode_rows = [(mem.name, mem.value, list(mem.headers), mem.payload)
                                for mem in e.members]
        return view

    def module_view(self, mod: m.Module) -> ModuleView:
        layouts = [self.layout_view(d) for d in mod.decls if isinstance(d, m.Layout)]
        enums = [self.enum_view(d) for d in mod.decls
                 if isinstance(d, m.Enum) and d.kind != "statuses"]
        classes = [d for d in mod.decls if isinstance(d, m.MadClass)]
        extern = sorted({f.enum.name for lay in layouts for f in lay.fields
                         if f.enum is not None})
        ns = "wire" if mod.name in WIRE_MODULES else "mad"
        return ModuleView(name=mod.name, source=self.source_name(mod), namespace=ns,
                          header=f"softib/{ns}/{mod.name}.h", layouts=layouts, enums=enums,
                          mad_classes=classes, extern_enums=extern)


def _underlying_bits(name: str) -> int:
    size = m.PRIMITIVES.get(name, (8,))[0]
    return size * 8


def _registry_enums(builder: _Builder, modules: list[ModuleView]) -> list[EnumView]:
    """Every enum a field uses with `as`, plus every enum of a codec module."""
    names: list[str] = []
    for mod in modules:
        for name in [e.name for e in mod.enums] + mod.extern_enums:
            if name not in names:
                names.append(name)
    return [builder.enum_view(builder.program.enums[n]) for n in names]


def emit(program: m.Program, render) -> dict[str, str]:
    from ..emit import EmitError  # the driver reports these without a traceback

    builder = _Builder(program)
    modules = [builder.module_view(mod) for mod in builder.codec_modules()]
    enums = _registry_enums(builder, modules)
    if builder.errors:
        raise EmitError("codec backend:\n" + IdlErrors(builder.errors.errors).format())
    if any(mod.name == "registry" for mod in modules):
        raise EmitError("codec backend: an IDL module named 'registry' would clash with "
                        "codec/registry.cc")

    out: dict[str, str] = {}
    for mod in modules:
        common = dict(m=mod, cstr=_cstr)
        out[f"include/{mod.header}"] = render("codec_header.h.j2", **common)
        out[f"codec/{mod.name}.cc"] = render("codec_source.cc.j2", **common)
        if mod.layouts:
            out[f"conformance/mad/{mod.name}_roundtrip.cc"] = render(
                "codec_roundtrip.cc.j2", **common)
    sources = sorted({mod.source for mod in modules})
    all_layouts = [lay for mod in modules for lay in mod.layouts]
    all_classes = [c for mod in modules for c in mod.mad_classes]
    # Each opcodes table is emitted, as a constant expression, in its module's header; the
    # registry refers to those rows (one table) or copies them one after the other.
    module_of = {mod.name: mod for mod in modules}
    opcode_tables = [(e, module_of[e.module]) for e in enums if e.kind == "opcodes"]
    out["codec/registry.cc"] = render(
        "codec_registry.cc.j2", sources=sources, layouts=all_layouts, classes=all_classes,
        enums=enums, opcode_tables=opcode_tables,
        opcode_headers=sorted({mod.header for _, mod in opcode_tables}), cstr=_cstr)
    class_attributes = {
        c.name: [f"{lay.name} (0x{lay.attr_id:04X})"
                 for lay in sorted(all_layouts, key=lambda lay: lay.attr_id or 0)
                 if c.name in lay.class_names]
        for c in all_classes}
    out["docs/mad_reference.md"] = render(
        "codec_reference.md.j2", sources=sources, modules=modules, classes=all_classes,
        class_attributes=class_attributes)
    return out
