"""Layout: every offset, size and alignment, computed once (docs/idl.md, "Layout rules").

Structures are laid out for the 64-bit and the i386 ABI the way the C compiler would;
any difference, and any padding the compiler would insert, is an error. Bit layouts
(formats, headers, attributes) are checked for overlaps, size and field widths.
"""

from __future__ import annotations

from typing import Optional

from . import model as m
from .errors import ErrorCollector

HANDLE_LAYOUT = (8, 8, 4)  # size, align64, align32


def _align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


class _StructLayout:
    def __init__(self, program: m.Program, errors: ErrorCollector):
        self.program = program
        self.errors = errors
        self.state: dict[str, str] = {}  # struct name -> "busy" | "done" | "failed"

    def elem_layout(self, ref: m.TypeRef, user: m.Field) -> Optional[tuple[int, int, int]]:
        """(size, align64, align32) of one element of `ref`, or None after an error."""
        if ref.is_handle:
            return HANDLE_LAYOUT
        if ref.is_primitive:
            size, a64, a32, _ = m.PRIMITIVES[ref.name]
            return size, a64, a32
        decl = ref.decl
        if isinstance(decl, (m.Enum, m.Flags)):
            size, a64, a32, _ = m.PRIMITIVES[decl.underlying]
            return size, a64, a32
        if isinstance(decl, m.Struct):
            if not self.compute(decl, user):
                return None
            if decl.variable_field is not None:
                self.errors.add(user.loc, f"field '{user.name}': struct '{decl.name}' ends with a variable array and cannot be nested")
                return None
            return decl.size, decl.align64, decl.align32
        return None  # unresolved: the parser already reported it

    def compute(self, s: m.Struct, user: Optional[m.Field] = None) -> bool:
        state = self.state.get(s.name)
        if state == "done":
            return True
        if state == "failed":
            return False
        if state == "busy":
            self.errors.add(user.loc if user else s.loc, f"struct '{s.name}' contains itself")
            return False
        self.state[s.name] = "busy"
        ok = self._compute(s)
        self.state[s.name] = "done" if ok else "failed"
        return ok

    def _compute(self, s: m.Struct) -> bool:
        what = f"struct '{s.name}'" if s.verb is None else f"'{s.name}' (verb '{s.verb.name}')"
        end64 = end32 = 0
        align64 = align32 = 1
        ok = True
        reported = False  # one 32/64 or padding error per structure: the rest follow from it
        for i, f in enumerate(s.fields):
            elem = self.elem_layout(f.type, f)
            if elem is None:
                ok = False
                continue
            esize, a64, a32 = elem
            if f.variable and i != len(s.fields) - 1:
                self.errors.add(f.loc, f"variable array '{f.name}' must be the last field of {what}")
                ok = False
            off64, off32 = _align_up(end64, a64), _align_up(end32, a32)
            if not reported and off64 != off32:
                self.errors.add(f.loc, f"field '{f.name}' is at offset {off32} in a 32-bit build and {off64} in a 64-bit build")
                reported = True
                ok = False
            elif not reported and off64 != end64:
                self.errors.add(f.loc, f"implicit padding of {off64 - end64} bytes before field '{f.name}'; declare it with pad")
                reported = True
                ok = False
            count = 0 if f.variable else (f.array if f.array is not None else 1)
            f.offset = off64
            f.elem_size = esize
            f.size = esize if f.variable else esize * count
            f.align64, f.align32 = a64, a32
            end64, end32 = off64 + esize * count, off32 + esize * count
            align64, align32 = max(align64, a64), max(align32, a32)
        if not s.fields:
            self.errors.add(s.loc, f"{what} has no fields")
            ok = False
        size64, size32 = _align_up(end64, align64), _align_up(end32, align32)
        if ok and size64 != size32:
            self.errors.add(s.loc, f"{what} is {size32} bytes in a 32-bit build and {size64} in a 64-bit build; end it with explicit pad")
            ok = False
        elif ok and size64 != end64:
            self.errors.add(s.loc, f"implicit padding of {size64 - end64} bytes at the end of {what}; declare it with pad")
            ok = False
        s.size, s.align64, s.align32 = size64, align64, align32
        return ok


def compute_structs(program: m.Program, errors: ErrorCollector) -> None:
    layout = _StructLayout(program, errors)
    for s in program.structs.values():
        layout.compute(s)


# ---------------------------------------------------------------- bit layouts


def _pos(bit_offset: int) -> str:
    return f"byte {bit_offset // 8} bit {7 - bit_offset % 8}"


def check_bit_layout(lay: m.Layout, errors: ErrorCollector) -> None:
    elements: list[tuple[int, int, int, m.BitField, int]] = []  # start, end, decl index, field, element
    for index, f in enumerate(lay.fields):
        if f.width <= 0 or not 0 <= f.bit <= 7 or f.repeat <= 0 or (f.stride is not None and f.stride <= 0):
            continue  # already reported by the parser
        if not _check_width(f, errors):
            continue
        if f.repeat > 1 and f.elem_stride < f.width:
            errors.add(f.loc, f"field '{f.name}' has stride {f.elem_stride}, smaller than its width {f.width}")
            continue
        if f.end_bit > lay.size * 8:
            last = f.end_bit - 1
            errors.add(f.loc, f"field '{f.name}' runs past the end of {lay.kind} '{lay.name}': "
                              f"it ends in byte {last // 8}, but the size is {lay.size} bytes")
            continue
        for i in range(f.repeat):
            start = f.element_bit_offset(i)
            elements.append((start, start + f.width, index, f, i))
    elements.sort(key=lambda e: (e[0], e[2]))
    reported: set[tuple[str, str]] = set()
    # The element reaching furthest so far: any later element starting before its end overlaps it.
    reach: Optional[tuple[int, int, int, m.BitField, int]] = None
    for e in elements:
        if reach is not None and e[0] < reach[1]:
            first, second = (reach, e) if reach[2] <= e[2] else (e, reach)
            if first[3] is second[3]:
                continue  # a field with stride < width, already reported
            key = (first[3].name, second[3].name)
            if key not in reported:
                reported.add(key)
                errors.add(second[3].loc, f"field '{_elem_name(second)}' overlaps field "
                                          f"'{_elem_name(first)}' at {_pos(e[0])}")
        if reach is None or e[1] > reach[1]:
            reach = e


def _elem_name(e: tuple) -> str:
    f, i = e[3], e[4]
    return f"{f.name}[{i}]" if f.repeat > 1 else f.name


def _check_width(f: m.BitField, errors: ErrorCollector) -> bool:
    if f.kind in ("uint", "enum", "bool") and f.width > 64:
        if f.kind == "uint":
            errors.add(f.loc, f"field '{f.name}' is {f.width} bits wide; a field wider than 64 bits "
                              "needs 'as bytes', 'as string' or 'as gid'")
        else:
            errors.add(f.loc, f"field '{f.name}' is {f.width} bits wide; 'as {f.enum_name or f.kind}' allows at most 64")
        return False
    if f.kind == "gid" and f.width != 128:
        errors.add(f.loc, f"field '{f.name}' is 'as gid' and must be 128 bits wide, not {f.width}")
        return False
    if f.kind in ("bytes", "string", "gid"):
        if f.width % 8 != 0:
            errors.add(f.loc, f"field '{f.name}' is 'as {f.kind}' and its width {f.width} is not a multiple of 8")
            return False
        if f.bit != 7 or (f.repeat > 1 and f.elem_stride % 8 != 0):
            errors.add(f.loc, f"field '{f.name}' is 'as {f.kind}' and must start on a byte boundary")
            return False
    if f.kind == "enum" and f.enum is not None:
        for mem in f.enum.members:
            if mem.value < 0 or mem.value >= 1 << f.width:
                errors.add(f.loc, f"field '{f.name}' is {f.width} bits wide but '{f.enum.name}.{mem.name}' is {mem.value:#x}")
                return False
    return True


def compute(program: m.Program) -> None:
    """Fill every layout of `program`; raise IdlErrors on any error."""
    errors = ErrorCollector()
    compute_structs(program, errors)
    for lay in program.layouts.values():
        check_bit_layout(lay, errors)
    errors.raise_if_any()
