"""The typed model of an IDL program.

The parser builds these objects; the layout stage fills the computed fields
(offsets, sizes, bit offsets); lints read them; templates read them and never
compute anything that the layout stage already computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


@dataclass(frozen=True)
class Loc:
    """A source location, for error messages."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# ---------------------------------------------------------------- types

PRIMITIVES = {
    # name: (size, align64, align32, signed)
    "u8": (1, 1, 1, False),
    "i8": (1, 1, 1, True),
    "bool8": (1, 1, 1, False),
    "u16": (2, 2, 2, False),
    "i16": (2, 2, 2, True),
    "u32": (4, 4, 4, False),
    "i32": (4, 4, 4, True),
    "u64": (8, 8, 4, False),
    "i64": (8, 8, 4, True),
    "uptr": (8, 8, 4, False),
}

POINTER_SIZED = {
    "long", "ulong", "int", "unsigned", "size_t", "ssize_t", "intptr_t",
    "uintptr_t", "ptrdiff_t", "void", "ptr",
}


@dataclass
class TypeRef:
    """A use of a type in a struct field or verb parameter."""

    name: str  # primitive name, "handle", or a declared enum/flags/struct name
    loc: Loc
    handle_of: Optional[str] = None  # object name for handle<Object>
    # Resolved by the parser after all files are read:
    decl: Optional[Union["Enum", "Flags", "Struct"]] = None
    handle_object: Optional["Object"] = None

    @property
    def is_handle(self) -> bool:
        return self.name == "handle"

    @property
    def is_primitive(self) -> bool:
        return self.name in PRIMITIVES


@dataclass
class Const:
    name: str
    type: str
    value: int
    loc: Loc
    doc: str = ""
    module: str = ""


@dataclass
class EnumMember:
    name: str
    value: int
    loc: Loc
    doc: str = ""
    # Only for opcode tables: extension headers after the BTH and payload presence.
    headers: list[str] = field(default_factory=list)
    payload: bool = False


@dataclass
class Enum:
    """enum, statuses and opcodes declarations all become an Enum."""

    name: str
    underlying: str  # u8/u16/u32...
    members: list[EnumMember]
    loc: Loc
    doc: str = ""
    module: str = ""
    kind: str = "enum"  # "enum" | "statuses" | "opcodes"

    def member(self, name: str) -> Optional[EnumMember]:
        return next((m for m in self.members if m.name == name), None)


@dataclass
class Flags:
    name: str
    underlying: str
    members: list[EnumMember]
    loc: Loc
    doc: str = ""
    module: str = ""

    @property
    def mask(self) -> int:
        m = 0
        for member in self.members:
            m |= member.value
        return m

    def member(self, name: str) -> Optional[EnumMember]:
        return next((m for m in self.members if m.name == name), None)


@dataclass
class Field:
    """A field of a struct, or a verb parameter placed in a verb's In/Out struct."""

    name: str
    type: TypeRef
    loc: Loc
    doc: str = ""
    array: Optional[int] = None  # fixed element count
    array_const: Optional[str] = None  # constant name the count came from, if any
    variable: bool = False  # trailing `name[]` array
    count_field: Optional[str] = None  # count(field) for variable arrays
    max_count: Optional[int] = None  # max(N) for variable arrays
    reserved: bool = False
    pad: bool = False
    # Filled by layout:
    offset: Optional[int] = None
    size: Optional[int] = None  # total size of the field (all elements); elem size for variable
    elem_size: Optional[int] = None
    align64: Optional[int] = None
    align32: Optional[int] = None


@dataclass
class Struct:
    name: str
    fields: list[Field]
    loc: Loc
    doc: str = ""
    module: str = ""
    # Set for the In/Out structures that the parser synthesises from verb parameters.
    verb: Optional["Verb"] = None
    # Filled by layout:
    size: Optional[int] = None  # fixed part; variable trailing array not included
    align64: Optional[int] = None
    align32: Optional[int] = None

    @property
    def variable_field(self) -> Optional[Field]:
        return next((f for f in self.fields if f.variable), None)


@dataclass
class PublicField:
    """One attribute of an object that a kernel client may read in its public structure
    (`public name = source;`). `source` is a parameter of the creating verb, or a field
    path into one (`params.qp_type`); without `= source` it is the field's own name."""

    name: str
    source: list[str]
    loc: Loc
    # Resolved by the lints:
    origin: str = ""  # "in" | "out": a parameter of the creating verb; "query": of Query<Object>
    verb: Optional["Verb"] = None  # the verb the value comes from
    leaf: Optional["Field"] = None  # the In/Out field (or nested field) the value is read from
    handle_object: Optional["Object"] = None  # a handle source: the public struct it points to

    @property
    def path(self) -> str:
        return ".".join(self.source)


@dataclass
class Object:
    name: str
    loc: Loc
    parent: Optional[str] = None
    uses: list[str] = field(default_factory=list)
    implicit: bool = False
    # Several creating verbs are allowed only when all are named here (MRs come from
    # RegMem, RegPhys and RegShared); otherwise exactly one verb may create the object.
    created_by: list[str] = field(default_factory=list)
    # `public ...;`: the object has a public structure for kernel clients (IB_<NAME>).
    public: Optional[list[PublicField]] = None
    doc: str = ""
    module: str = ""
    # Resolved:
    parent_obj: Optional["Object"] = None
    children: list["Object"] = field(default_factory=list)  # objects naming it as parent
    users: list["Object"] = field(default_factory=list)  # objects naming it in uses
    creator: Optional["Verb"] = None  # the first (or only) creating verb
    creators: list["Verb"] = field(default_factory=list)  # every creating verb
    destroyer: Optional["Verb"] = None
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Param:
    name: str
    direction: str  # "in" | "out" | "inout"
    type: TypeRef
    loc: Loc
    doc: str = ""
    optional: bool = False
    access: Optional[str] = None  # handles: "read" | "write" | "new" | "destroy"
    array: Optional[int] = None
    array_const: Optional[str] = None
    variable: bool = False
    count_field: Optional[str] = None
    max_count: Optional[int] = None
    length_field: Optional[str] = None  # length(field) on a uptr
    reserved: bool = False
    pad: bool = False
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Verb:
    name: str
    ordinal: int
    loc: Loc
    doc: str = ""
    module: str = ""
    irql: str = "passive"  # "passive" | "dispatch"
    mode: str = "sync"  # "sync" | "async"
    paths: list[str] = field(default_factory=list)  # direct, irp, proxy, speed
    ioctl_function: Optional[int] = None
    ioctl_access: str = "any"  # any | read | write | readwrite
    returns: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    # Built by the parser from params (None when the verb has no in/out params):
    in_struct: Optional[Struct] = None
    out_struct: Optional[Struct] = None
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_speed(self) -> bool:
        return "speed" in self.paths

    @property
    def ioctl_code(self) -> Optional[int]:
        if self.ioctl_function is None:
            return None
        access = {"any": 0, "read": 1, "write": 2, "readwrite": 3}[self.ioctl_access]
        return (0x3B << 16) | (access << 14) | (self.ioctl_function << 2) | 0  # METHOD_BUFFERED

    @property
    def creates(self) -> Optional[Param]:
        return next((p for p in self.params if p.access == "new"), None)

    @property
    def destroys(self) -> Optional[Param]:
        return next((p for p in self.params if p.access == "destroy"), None)


@dataclass
class Transition:
    from_state: Optional[str]  # None means "*"
    to_state: str
    qp_types: Optional[list[str]]  # None means "*"
    required: list[str]
    optional: list[str]
    loc: Loc
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class QpStateMachine:
    state_enum: str
    type_enum: str
    mask_flags: str
    transitions: list[Transition]
    loc: Loc
    module: str = ""
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)


# ---------------------------------------------------------------- MADs and headers


@dataclass
class MadMethod:
    name: str
    value: int
    loc: Loc


@dataclass
class MadClass:
    name: str
    value: int  # management class code
    version: int
    methods: list[MadMethod]
    loc: Loc
    doc: str = ""
    module: str = ""


@dataclass
class BitField:
    """A field in the specification's byte[bit]/width notation."""

    name: str
    width: int  # bits
    byte: int
    bit: int  # MSB position in `byte`, 7 = most significant
    loc: Loc
    doc: str = ""
    reserved: bool = False
    repeat: int = 1
    stride: Optional[int] = None  # bits between elements; defaults to width
    kind: str = "uint"  # uint | enum | gid | bytes | string | bool
    enum_name: Optional[str] = None  # for kind == "enum"
    component: Optional[int] = None
    # Resolved / computed:
    enum: Optional[Enum] = None

    @property
    def bit_offset(self) -> int:
        """Offset of the MSB counted from the MSB of byte 0 (IBTA table 'offset (bits)')."""
        return self.byte * 8 + (7 - self.bit)

    @property
    def elem_stride(self) -> int:
        return self.stride if self.stride is not None else self.width

    def element_bit_offset(self, i: int) -> int:
        return self.bit_offset + i * self.elem_stride

    @property
    def end_bit(self) -> int:
        """One past the last bit used by the last element."""
        return self.element_bit_offset(self.repeat - 1) + self.width


@dataclass
class Layout:
    """format, header and attribute declarations."""

    name: str
    kind: str  # "format" | "header" | "attribute"
    size: int  # bytes
    fields: list[BitField]
    loc: Loc
    doc: str = ""
    module: str = ""
    # attributes only:
    attr_id: Optional[int] = None
    classes: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    modifier: str = ""
    # Resolved:
    class_objs: list[MadClass] = field(default_factory=list)
    # Where each name this declaration refers to was written (for error messages).
    ref_locs: dict[str, Loc] = field(default_factory=dict, repr=False, compare=False)


# ---------------------------------------------------------------- the whole program


@dataclass
class Module:
    name: str
    path: str
    # Who implements the module's verbs (`target <name>;`): "al", the Access Layer (handle
    # resolution, user proxies, direct calls), or "hca", the HCA driver's command interface
    # (CA-local object numbers, IRP_MJ_INTERNAL_DEVICE_CONTROL on the CA's device), or
    # "device", a driver's own named device that user processes open (IRP_MJ_DEVICE_CONTROL:
    # the driver's dispatch, user proxies, kernel IRP builders).
    target: str = "al"
    imports: list[str] = field(default_factory=list)
    decls: list[object] = field(default_factory=list)  # in source order


MODULE_TARGETS = ("al", "hca", "device")


@dataclass
class Program:
    modules: list[Module] = field(default_factory=list)
    consts: dict[str, Const] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)  # includes statuses and opcodes
    flags: dict[str, Flags] = field(default_factory=dict)
    structs: dict[str, Struct] = field(default_factory=dict)  # includes verb In/Out structs
    objects: dict[str, Object] = field(default_factory=dict)
    verbs: dict[str, Verb] = field(default_factory=dict)
    mad_classes: dict[str, MadClass] = field(default_factory=dict)
    layouts: dict[str, Layout] = field(default_factory=dict)  # formats, headers, attributes
    qp_state_machine: Optional[QpStateMachine] = None

    @property
    def statuses(self) -> Optional[Enum]:
        return next((e for e in self.enums.values() if e.kind == "statuses"), None)

    def module_target(self, module: str) -> str:
        return next((m.target for m in self.modules if m.name == module), "al")

    def module_decls(self, module: str, cls: type) -> list:
        for m in self.modules:
            if m.name == module:
                return [d for d in m.decls if isinstance(d, cls)]
        return []
