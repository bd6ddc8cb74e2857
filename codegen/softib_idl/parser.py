"""Recursive-descent parser for the IDL (docs/idl.md) and name resolution.

parse_files() reads the root files and everything they import (each file once,
cycles allowed), then registers every declaration in one global namespace,
synthesises each verb's <Verb>In / <Verb>Out structure and resolves every name.
"""

from __future__ import annotations

import os
from typing import Optional, Union

from . import model as m
from .errors import ErrorCollector, IdlError
from .lexer import EOF, IDENT, INT, STRING, Token, tokenize
from .model import Loc

INTEGER_TYPES = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"}
IRQLS = ("passive", "dispatch")
PATHS = ("direct", "irp", "proxy", "speed")
IOCTL_ACCESS = ("any", "read", "write", "readwrite")
HANDLE_ACCESS = ("read", "write", "new", "destroy")
BIT_KINDS = ("gid", "bytes", "string", "bool")
VERB_CLAUSES = ("irql", "sync", "async", "paths", "ioctl", "returns")
DIRECTIONS = ("in", "out", "inout")

Decl = Union[m.Const, m.Enum, m.Flags, m.Struct, m.Object, m.Verb, m.QpStateMachine,
             m.MadClass, m.Layout]


def _fits(value: int, type_name: str) -> bool:
    size, _, _, signed = m.PRIMITIVES[type_name]
    bits = size * 8
    if signed:
        return -(1 << (bits - 1)) <= value < (1 << (bits - 1))
    return 0 <= value < (1 << bits)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def describe_decl(decl: object) -> str:
    """'enum', 'struct', ... as the IDL spells the declaration."""
    if isinstance(decl, m.Enum):
        return decl.kind if decl.kind != "statuses" else "statuses declaration"
    if isinstance(decl, m.Layout):
        return decl.kind
    return {
        m.Const: "constant", m.Flags: "flags", m.Struct: "struct", m.Object: "object",
        m.Verb: "verb", m.QpStateMachine: "qp_state_machine", m.MadClass: "mad_class",
    }[type(decl)]


class ParsedFile:
    def __init__(self, path: str, display: str):
        self.path = path
        self.display = display
        self.module: Optional[str] = None
        self.module_loc: Optional[Loc] = None
        self.target: Optional[str] = None  # `target <name>;` (None: the Access Layer)
        self.target_loc: Optional[Loc] = None
        self.imports: list[tuple[str, Loc]] = []
        self.decls: list[Decl] = []
        # (object, attribute, constant name, loc): integers given by a constant name.
        self.const_refs: list[tuple[object, str, str, Loc]] = []


# ---------------------------------------------------------------- one file


class FileParser:
    def __init__(self, tokens: list[Token], parsed: ParsedFile, errors: ErrorCollector):
        self.toks = tokens
        self.pos = 0
        self.out = parsed
        self.errors = errors

    # ------------------------------------------------------------ token helpers

    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        if tok.kind != EOF:
            self.pos += 1
        return tok

    def fail(self, tok: Token, what: str) -> IdlError:
        return IdlError(tok.loc, f"expected {what}, found {tok.describe()}")

    def accept_punct(self, p: str) -> Optional[Token]:
        if self.peek().is_punct(p):
            return self.next()
        return None

    def accept_word(self, w: str) -> Optional[Token]:
        if self.peek().is_word(w):
            return self.next()
        return None

    def expect_punct(self, p: str) -> Token:
        tok = self.peek()
        if not tok.is_punct(p):
            raise self.fail(tok, f"'{p}'")
        return self.next()

    def expect_word(self, w: str) -> Token:
        tok = self.peek()
        if not tok.is_word(w):
            raise self.fail(tok, f"'{w}'")
        return self.next()

    def expect_ident(self, what: str = "a name") -> Token:
        tok = self.peek()
        if tok.kind != IDENT:
            raise self.fail(tok, what)
        return self.next()

    def expect_int(self, what: str = "an integer") -> Token:
        tok = self.peek()
        if tok.kind != INT:
            raise self.fail(tok, what)
        return self.next()

    def expect_one_of(self, words: tuple[str, ...], what: str) -> Token:
        tok = self.peek()
        if tok.kind != IDENT or tok.value not in words:
            raise self.fail(tok, what)
        return self.next()

    def int_or_const(self, obj: object, attr: str, what: str) -> Optional[int]:
        """An integer literal, or a constant name resolved after all files are read."""
        tok = self.peek()
        if tok.kind == INT:
            self.next()
            return tok.value
        if tok.kind == IDENT:
            self.next()
            self.out.const_refs.append((obj, attr, tok.value, tok.loc))
            return None
        raise self.fail(tok, what)

    def end_of_block(self, what: str, open_tok: Token) -> bool:
        """True at the closing '}' (consumed); an error at end of file."""
        tok = self.peek()
        if tok.is_punct("}"):
            self.next()
            return True
        if tok.kind == EOF:
            o = open_tok.loc
            raise IdlError(tok.loc, f"expected '}}' to close {what} opened at {o.line}:{o.col}")
        return False

    def name_list(self, what: str, allow_star: bool = False) -> list[Token]:
        """NAME (, NAME)*  — trailing comma allowed before ';' or '{'."""
        names = [self.star_or_ident(what) if allow_star else self.expect_ident(what)]
        while self.accept_punct(","):
            if self.peek().kind != IDENT:
                break
            names.append(self.expect_ident(what))
        return names

    def star_or_ident(self, what: str) -> Token:
        if self.peek().is_punct("*"):
            return self.next()
        return self.expect_ident(what)

    def end_decl(self) -> None:
        self.accept_punct(";")  # optional after a declaration's closing brace

    # ------------------------------------------------------------ file

    def parse(self) -> None:
        while self.peek().kind != EOF:
            tok = self.peek()
            if tok.kind != IDENT:
                raise self.fail(tok, "a declaration")
            handler = getattr(self, f"p_{tok.value}", None)
            if handler is None or tok.value.startswith("_"):
                raise self.fail(tok, "a declaration")
            if tok.value != "module" and self.out.module is None:
                raise IdlError(tok.loc, "the file must start with 'module <name>;'")
            handler()
        if self.out.module is None:
            raise IdlError(self.peek().loc, "the file must start with 'module <name>;'")

    def add(self, decl: Decl) -> None:
        decl.module = self.out.module
        self.out.decls.append(decl)

    def p_module(self) -> None:
        kw = self.next()
        name = self.expect_ident("a module name")
        self.expect_punct(";")
        if self.out.module is not None:
            raise IdlError(kw.loc, "a second 'module' declaration; a file is one module")
        self.out.module = name.value
        self.out.module_loc = name.loc

    def p_target(self) -> None:
        kw = self.next()
        name = self.expect_ident("a module target (al, hca or device)")
        self.expect_punct(";")
        if self.out.target is not None:
            raise IdlError(kw.loc, "a second 'target' declaration; a module has one target")
        if name.value not in m.MODULE_TARGETS:
            raise IdlError(name.loc, f"unknown module target '{name.value}'; expected one of "
                                     f"{', '.join(m.MODULE_TARGETS)}")
        self.out.target = name.value
        self.out.target_loc = name.loc

    def p_import(self) -> None:
        self.next()
        tok = self.peek()
        if tok.kind != STRING:
            raise self.fail(tok, "a file name string")
        self.next()
        self.expect_punct(";")
        self.out.imports.append((tok.value, tok.loc))

    def p_const(self) -> None:
        kw = self.next()
        type_tok = self.expect_ident("an integer type")
        name = self.expect_ident("a constant name")
        self.expect_punct("=")
        value = self.expect_int()
        self.expect_punct(";")
        if type_tok.value not in INTEGER_TYPES:
            self.errors.add(type_tok.loc, f"a constant must have an integer type, not '{type_tok.value}'")
        elif not _fits(value.value, type_tok.value):
            self.errors.add(value.loc, f"value {value.text} does not fit in {type_tok.value}")
        self.add(m.Const(name.value, type_tok.value, value.value, name.loc, doc=kw.doc))

    # ------------------------------------------------------------ enums

    def enum_head(self) -> tuple[Token, Token, Token]:
        kw = self.next()
        name = self.expect_ident(f"{_article(kw.value)} {kw.value} name")
        self.expect_punct(":")
        under = self.expect_ident("an integer type")
        if under.value not in INTEGER_TYPES:
            self.errors.add(under.loc, f"the underlying type of '{name.value}' must be an integer type, not '{under.value}'")
        return kw, name, under

    def members(self, kw: Token, name: Token, under: Token, opcodes: bool) -> list[m.EnumMember]:
        open_tok = self.expect_punct("{")
        what = f"{kw.value} '{name.value}'"
        members: list[m.EnumMember] = []
        while not self.end_of_block(what, open_tok):
            mname = self.expect_ident("a member name")
            self.expect_punct("=")
            value = self.expect_int("a member value")
            member = m.EnumMember(mname.value, value.value, mname.loc, doc=mname.doc)
            members.append(member)
            if under.value in INTEGER_TYPES and not _fits(value.value, under.value):
                self.errors.add(value.loc, f"value {value.text} of '{mname.value}' does not fit in {under.value}")
            if opcodes:
                if self.accept_punct(":"):
                    for h in self.name_list("a header name or 'payload'"):
                        if h.value == "payload":
                            member.payload = True
                        else:
                            member.headers.append(h.value)
                if not self.peek().is_punct("}"):
                    self.expect_punct(";")
            elif not self.peek().is_punct("}"):
                self.expect_punct(",")
        self.end_decl()
        self.check_members(name.value, members, unique_values=kw.value != "flags")
        return members

    def check_members(self, owner: str, members: list[m.EnumMember], unique_values: bool) -> None:
        names: dict[str, m.EnumMember] = {}
        values: dict[int, m.EnumMember] = {}
        for mem in members:
            if mem.name in names:
                first = names[mem.name].loc
                self.errors.add(mem.loc, f"duplicate member '{mem.name}' in '{owner}'; first declared at {first.line}:{first.col}")
            names.setdefault(mem.name, mem)
            if unique_values and mem.value in values:
                self.errors.add(mem.loc, f"'{mem.name}' has the same value as '{values[mem.value].name}' in '{owner}'")
            values.setdefault(mem.value, mem)

    def p_enum(self) -> None:
        kw, name, under = self.enum_head()
        members = self.members(kw, name, under, opcodes=False)
        self.add(m.Enum(name.value, under.value, members, name.loc, doc=kw.doc, kind="enum"))

    def p_statuses(self) -> None:
        kw, name, under = self.enum_head()
        members = self.members(kw, name, under, opcodes=False)
        self.add(m.Enum(name.value, under.value, members, name.loc, doc=kw.doc, kind="statuses"))

    def p_opcodes(self) -> None:
        kw, name, under = self.enum_head()
        members = self.members(kw, name, under, opcodes=True)
        self.add(m.Enum(name.value, under.value, members, name.loc, doc=kw.doc, kind="opcodes"))

    def p_flags(self) -> None:
        kw, name, under = self.enum_head()
        members = self.members(kw, name, under, opcodes=False)
        self.add(m.Flags(name.value, under.value, members, name.loc, doc=kw.doc))

    # ------------------------------------------------------------ types and fields

    def type_ref(self) -> m.TypeRef:
        tok = self.expect_ident("a type")
        if tok.value == "handle":
            self.expect_punct("<")
            obj = self.expect_ident("an object name")
            self.expect_punct(">")
            ref = m.TypeRef("handle", tok.loc, handle_of=obj.value)
        else:
            spelled = tok.value
            if spelled in m.POINTER_SIZED:
                # `unsigned long`, `long long`...: one type, one error.
                while self.peek().kind == IDENT and self.peek().value in m.POINTER_SIZED:
                    spelled += " " + self.next().value
            ref = m.TypeRef(tok.value, tok.loc)
            stars = 0
            while self.accept_punct("*"):
                stars += 1
            if stars or tok.value in m.POINTER_SIZED:
                spelled += "*" * stars
                self.errors.add(tok.loc, f"pointer-sized type '{spelled}' cannot be expressed; use u64 or uptr")
        return ref

    def field_name(self, reserved_kw: Optional[Token]) -> Token:
        tok = self.peek()
        if tok.kind != IDENT:
            if reserved_kw is not None and (tok.is_punct(";") or tok.is_punct("[") or tok.is_punct(":")):
                raise IdlError(tok.loc, f"a {reserved_kw.value} field needs a name")
            raise self.fail(tok, "a field name")
        return self.next()

    def array_suffix(self, target: Union[m.Field, m.Param]) -> None:
        if not self.accept_punct("["):
            return
        if self.accept_punct("]"):
            target.variable = True
            return
        tok = self.peek()
        if tok.kind == IDENT:
            target.array_const = tok.value
        value = self.int_or_const(target, "array", "an array length")
        if value is not None:
            if value <= 0:
                self.errors.add(tok.loc, f"array length must be positive, not {value}")
            target.array = value
        self.expect_punct("]")

    def length_attrs(self, target: Union[m.Field, m.Param], allow: tuple[str, ...]) -> None:
        """count(f), max(N), length(f) and handle accesses after a field or parameter name."""
        while True:
            tok = self.peek()
            if tok.kind != IDENT:
                return
            word = tok.value
            if word in HANDLE_ACCESS and "access" in allow:
                self.next()
                if target.access is not None:
                    self.errors.add(tok.loc, f"'{target.name}' already has access '{target.access}'")
                target.access = word
                target.ref_locs["access"] = tok.loc
                continue
            if word not in ("count", "max", "length") or not self.peek(1).is_punct("("):
                raise self.fail(tok, "';'")
            if word == "length" and "length" not in allow:
                raise self.fail(tok, "';'")
            self.next()
            self.expect_punct("(")
            if word == "max":
                value = self.int_or_const(target, "max_count", "an integer or constant")
                if value is not None:
                    target.max_count = value
            else:
                ref = self.expect_ident("a field name")
                setattr(target, "count_field" if word == "count" else "length_field", ref.value)
                if isinstance(target, m.Param):
                    target.ref_locs[word] = ref.loc
            self.expect_punct(")")

    def p_struct(self) -> None:
        kw = self.next()
        name = self.expect_ident("a struct name")
        open_tok = self.expect_punct("{")
        fields: list[m.Field] = []
        while not self.end_of_block(f"struct '{name.value}'", open_tok):
            first = self.peek()
            reserved_kw = self.accept_word("reserved") or self.accept_word("pad")
            ftype = self.type_ref()
            fname = self.field_name(reserved_kw)
            f = m.Field(fname.value, ftype, fname.loc, doc=first.doc,
                        reserved=bool(reserved_kw and reserved_kw.value == "reserved"),
                        pad=bool(reserved_kw and reserved_kw.value == "pad"))
            self.array_suffix(f)
            self.length_attrs(f, allow=())
            self.expect_punct(";")
            fields.append(f)
        self.end_decl()
        self.add(m.Struct(name.value, fields, name.loc, doc=kw.doc))

    # ------------------------------------------------------------ objects

    def p_object(self) -> None:
        kw = self.next()
        name = self.expect_ident("an object name")
        obj = m.Object(name.value, name.loc, doc=kw.doc)
        open_tok = self.expect_punct("{")
        while not self.end_of_block(f"object '{name.value}'", open_tok):
            tok = self.expect_one_of(("parent", "uses", "implicit", "created_by", "public"),
                                     "'parent', 'uses', 'created_by', 'public' or 'implicit'")
            if tok.value == "parent":
                parent = self.expect_ident("an object name")
                if obj.parent is not None:
                    self.errors.add(tok.loc, f"object '{name.value}' has two parents")
                obj.parent = parent.value
                obj.ref_locs[parent.value] = parent.loc
            elif tok.value == "uses":
                for u in self.name_list("an object name"):
                    obj.uses.append(u.value)
                    obj.ref_locs.setdefault(u.value, u.loc)
            elif tok.value == "created_by":
                for c in self.name_list("a verb name"):
                    obj.created_by.append(c.value)
                    obj.ref_locs.setdefault("created_by:" + c.value, c.loc)
            elif tok.value == "public":
                if obj.public is not None:
                    self.errors.add(tok.loc, f"object '{name.value}' has a second 'public' clause")
                obj.public = []
                obj.ref_locs["public"] = tok.loc
                while self.peek().kind == IDENT:
                    fname = self.expect_ident("a public field name")
                    source = [fname.value]
                    if self.accept_punct("="):
                        source = [self.expect_ident("a parameter name").value]
                        while self.accept_punct("."):
                            source.append(self.expect_ident("a field name").value)
                    obj.public.append(m.PublicField(fname.value, source, fname.loc))
                    if not self.accept_punct(","):
                        break
            else:
                obj.implicit = True
            self.expect_punct(";")
        self.end_decl()
        self.add(obj)

    # ------------------------------------------------------------ verbs

    def p_verb(self) -> None:
        kw = self.next()
        name = self.expect_ident("a verb name")
        self.expect_punct("=")
        ordinal = self.expect_int("the verb's ordinal")
        verb = m.Verb(name.value, ordinal.value, name.loc, doc=kw.doc)
        verb.ref_locs["ordinal"] = ordinal.loc
        open_tok = self.expect_punct("{")
        seen: dict[str, Token] = {}
        while not self.end_of_block(f"verb '{name.value}'", open_tok):
            tok = self.peek()
            if tok.kind == IDENT and tok.value in VERB_CLAUSES and not self.peek(1).is_punct("<"):
                clause = "mode" if tok.value in ("sync", "async") else tok.value
                if clause in seen:
                    self.errors.add(tok.loc, f"verb '{name.value}' has a second '{tok.value}' clause")
                seen[clause] = tok
                self.verb_clause(verb)
            else:
                verb.params.append(self.param(verb))
        self.end_decl()
        self.add(verb)

    def verb_clause(self, verb: m.Verb) -> None:
        tok = self.next()
        if tok.value == "irql":
            verb.irql = self.expect_one_of(IRQLS, "'passive' or 'dispatch'").value
        elif tok.value in ("sync", "async"):
            verb.mode = tok.value
        elif tok.value == "paths":
            verb.paths = []
            for p in self.name_list("a path (direct, irp, proxy or speed)"):
                if p.value not in PATHS:
                    raise self.fail(p, "a path (direct, irp, proxy or speed)")
                if p.value in verb.paths:
                    self.errors.add(p.loc, f"path '{p.value}' is listed twice")
                else:
                    verb.paths.append(p.value)
            verb.ref_locs["paths"] = tok.loc
        elif tok.value == "ioctl":
            func = self.expect_int("an ioctl function code")
            verb.ioctl_function = func.value
            verb.ref_locs["ioctl"] = func.loc
            if self.accept_word("access"):
                verb.ioctl_access = self.expect_one_of(IOCTL_ACCESS, "any, read, write or readwrite").value
        elif tok.value == "returns":
            for s in self.name_list("a status name"):
                if s.value in verb.returns:
                    self.errors.add(s.loc, f"status '{s.value}' is listed twice")
                    continue
                verb.returns.append(s.value)
                verb.ref_locs[s.value] = s.loc
        self.expect_punct(";")

    def param(self, verb: m.Verb) -> m.Param:
        first = self.peek()
        direction = None
        if first.kind == IDENT and first.value in DIRECTIONS:
            direction = self.next().value
        flags: dict[str, Token] = {}
        while self.peek().kind == IDENT and self.peek().value in ("optional", "reserved", "pad") \
                and self.peek(1).kind == IDENT:
            tok = self.next()
            if tok.value in flags:
                self.errors.add(tok.loc, f"'{tok.value}' given twice")
            flags[tok.value] = tok
        if "reserved" in flags and "pad" in flags:
            self.errors.add(flags["pad"].loc, "a parameter is either reserved or pad, not both")
        ptype = self.type_ref()
        reserved_kw = flags.get("reserved") or flags.get("pad")
        pname = self.field_name(reserved_kw)
        param = m.Param(pname.value, direction or "in", ptype, pname.loc, doc=first.doc,
                        optional="optional" in flags, reserved="reserved" in flags,
                        pad="pad" in flags)
        self.array_suffix(param)
        self.length_attrs(param, allow=("access", "length"))
        self.expect_punct(";")
        if direction is None:
            self.errors.add(first.loc, f"parameter '{pname.value}' of verb '{verb.name}' has no direction (in, out or inout)")
        return param

    # ------------------------------------------------------------ QP state machine

    def p_qp_state_machine(self) -> None:
        self.next()
        state = self.expect_ident("the state enum")
        self.expect_word("by")
        qtype = self.expect_ident("the QP type enum")
        self.expect_word("with")
        mask = self.expect_ident("the attribute mask flags")
        sm = m.QpStateMachine(state.value, qtype.value, mask.value, [], state.loc)
        sm.ref_locs.update({"state": state.loc, "type": qtype.loc, "mask": mask.loc})
        open_tok = self.expect_punct("{")
        while not self.end_of_block("qp_state_machine", open_tok):
            sm.transitions.append(self.transition())
        self.end_decl()
        self.add(sm)

    def transition(self) -> m.Transition:
        kw = self.expect_word("transition")
        src = self.star_or_ident("a state or '*'")
        self.expect_punct("->")
        dst = self.expect_ident("a state")
        self.expect_word("for")
        types = self.name_list("a QP type or '*'", allow_star=True)
        t = m.Transition(None if src.is_punct("*") else src.value, dst.value, None, [], [], kw.loc)
        t.ref_locs["from"] = src.loc
        t.ref_locs["to"] = dst.loc
        if any(x.is_punct("*") for x in types):
            if len(types) > 1:
                self.errors.add(types[0].loc, "'*' stands for every QP type; list no others")
        else:
            t.qp_types = [x.value for x in types]
            for x in types:
                t.ref_locs.setdefault(x.value, x.loc)
        if self.accept_punct(";"):
            return t
        open_tok = self.expect_punct("{")
        while not self.end_of_block("transition", open_tok):
            which = self.expect_one_of(("required", "optional"), "'required' or 'optional'")
            for a in self.name_list("an attribute mask bit"):
                getattr(t, which.value).append(a.value)
                t.ref_locs.setdefault(a.value, a.loc)
            self.expect_punct(";")
        self.accept_punct(";")
        return t

    # ------------------------------------------------------------ MADs

    def p_mad_class(self) -> None:
        kw = self.next()
        name = self.expect_ident("a class name")
        self.expect_punct("=")
        value = self.expect_int("the management class code")
        cls = m.MadClass(name.value, value.value, 0, [], name.loc, doc=kw.doc)
        version: Optional[Token] = None
        open_tok = self.expect_punct("{")
        while not self.end_of_block(f"mad_class '{name.value}'", open_tok):
            tok = self.expect_one_of(("version", "methods"), "'version' or 'methods'")
            if tok.value == "version":
                if version is not None:
                    self.errors.add(tok.loc, f"mad_class '{name.value}' has two versions")
                version = self.expect_int("a class version")
                cls.version = version.value
            else:
                while True:
                    mname = self.expect_ident("a method name")
                    self.expect_punct("=")
                    mval = self.expect_int("a method value")
                    cls.methods.append(m.MadMethod(mname.value, mval.value, mname.loc))
                    if not self.accept_punct(",") or self.peek().is_punct(";"):
                        break
            self.expect_punct(";")
        self.end_decl()
        if version is None:
            self.errors.add(name.loc, f"mad_class '{name.value}' has no version")
        seen: dict[str, m.MadMethod] = {}
        for meth in cls.methods:
            if meth.name in seen:
                self.errors.add(meth.loc, f"duplicate method '{meth.name}' in mad_class '{name.value}'")
            seen.setdefault(meth.name, meth)
        self.add(cls)

    def p_format(self) -> None:
        self.layout("format")

    def p_header(self) -> None:
        self.layout("header")

    def p_attribute(self) -> None:
        self.layout("attribute")

    def layout(self, kind: str) -> None:
        kw = self.next()
        name = self.expect_ident(f"{_article(kind)} {kind} name")
        lay = m.Layout(name.value, kind, 0, [], name.loc, doc=kw.doc)
        if kind == "attribute":
            self.expect_punct("=")
            lay.attr_id = self.expect_int("the attribute ID").value
            self.expect_word("in")
            for c in self.name_list("a mad_class name"):
                lay.classes.append(c.value)
                lay.ref_locs.setdefault(c.value, c.loc)
        self.expect_word("size")
        size = self.expect_int("the size in bytes")
        lay.size = size.value
        if size.value <= 0:
            self.errors.add(size.loc, f"{kind} size must be positive")
        open_tok = self.expect_punct("{")
        while not self.end_of_block(f"{kind} '{name.value}'", open_tok):
            tok = self.peek()
            if kind == "attribute" and tok.kind == IDENT and tok.value in ("methods", "modifier") \
                    and not self.peek(1).is_punct(":"):
                self.next()
                if tok.value == "methods":
                    for meth in self.name_list("a method name"):
                        lay.methods.append(meth.value)
                        lay.ref_locs.setdefault("method " + meth.value, meth.loc)
                else:
                    text = self.peek()
                    if text.kind != STRING:
                        raise self.fail(text, "a string")
                    self.next()
                    lay.modifier = text.value
                self.expect_punct(";")
                continue
            lay.fields.append(self.bit_field())
        self.end_decl()
        self.add(lay)

    def bit_field(self) -> m.BitField:
        first = self.peek()
        reserved = self.accept_word("reserved") if self.peek(1).kind == IDENT or self.peek(1).is_punct(":") else None
        if reserved is not None and self.peek().is_punct(":"):
            raise IdlError(self.peek().loc, "a reserved field needs a name")
        name = self.expect_ident("a field name")
        self.expect_punct(":")
        width = self.expect_int("the width in bits")
        self.expect_punct("@")
        byte = self.expect_int("the byte offset")
        bit = 7
        bit_tok = None
        if self.accept_punct("["):
            bit_tok = self.expect_int("a bit position (0..7)")
            bit = bit_tok.value
            self.expect_punct("]")
        bf = m.BitField(name.value, width.value, byte.value, bit, name.loc, doc=first.doc,
                        reserved=reserved is not None)
        if bit_tok is not None and not 0 <= bit <= 7:
            self.errors.add(bit_tok.loc, f"bit position {bit} of field '{name.value}' is not in 0..7")
        if width.value <= 0:
            self.errors.add(width.loc, f"field '{name.value}' must be at least 1 bit wide")
        seen: set[str] = set()
        while not self.accept_punct(";"):
            tok = self.expect_one_of(("repeat", "stride", "as", "component"),
                                     "'repeat', 'stride', 'as', 'component' or ';'")
            if tok.value in seen:
                self.errors.add(tok.loc, f"'{tok.value}' given twice")
            seen.add(tok.value)
            if tok.value == "repeat":
                n = self.expect_int("a repeat count")
                if n.value <= 0:
                    self.errors.add(n.loc, "repeat count must be positive")
                bf.repeat = n.value
            elif tok.value == "stride":
                if "repeat" not in seen:
                    self.errors.add(tok.loc, "'stride' needs 'repeat' first")
                s = self.expect_int("a stride in bits")
                if s.value <= 0:
                    self.errors.add(s.loc, "stride must be positive")
                bf.stride = s.value
            elif tok.value == "as":
                k = self.expect_ident("gid, bytes, string, bool or an enum name")
                if k.value in BIT_KINDS:
                    bf.kind = k.value
                else:
                    bf.kind = "enum"
                    bf.enum_name = k.value
            else:
                c = self.expect_int("a component bit")
                bf.component = c.value
        return bf


# ---------------------------------------------------------------- the whole program


class _Reader:
    """Reads files from disk (or from an in-memory dict for tests)."""

    def __init__(self, root: Optional[str], files: Optional[dict[str, str]] = None):
        self.root = root
        self.files = files

    def key(self, path: str) -> str:
        return os.path.normpath(path) if self.files is not None else os.path.realpath(path)

    def exists(self, path: str) -> bool:
        if self.files is not None:
            return os.path.normpath(path) in self.files
        return os.path.isfile(path)

    def read(self, path: str) -> str:
        if self.files is not None:
            return self.files[os.path.normpath(path)]
        with open(path, encoding="utf-8") as f:
            return f.read()

    def display(self, path: str) -> str:
        if self.files is not None:
            return os.path.normpath(path)
        if self.root is not None:
            rel = os.path.relpath(os.path.realpath(path), os.path.realpath(self.root))
            if not rel.startswith(".."):
                return rel
        return path


class ProgramBuilder:
    def __init__(self, reader: _Reader):
        self.reader = reader
        self.errors = ErrorCollector()
        self.loaded: dict[str, Optional[ParsedFile]] = {}  # None while loading (cycles)
        self.order: list[ParsedFile] = []
        self.program = m.Program()
        self.names: dict[str, tuple[object, str]] = {}  # global namespace: name -> (decl, what)
        self.visible: dict[str, set[str]] = {}  # module -> modules whose names it sees

    # ------------------------------------------------------------ loading

    def load(self, path: str) -> Optional[ParsedFile]:
        key = self.reader.key(path)
        if key in self.loaded:
            return self.loaded[key]
        self.loaded[key] = None
        parsed = ParsedFile(path, self.reader.display(path))
        try:
            tokens = tokenize(self.reader.read(path), parsed.display)
            FileParser(tokens, parsed, self.errors).parse()
        except IdlError as e:
            self.errors.add(e.loc, e.message)
            parsed.module = None
        except OSError as e:
            self.errors.add(Loc(parsed.display, 1, 1), f"cannot read file: {e.strerror}")
            parsed.module = None
        self.loaded[key] = parsed
        for rel, loc in parsed.imports:
            target = os.path.join(os.path.dirname(path), rel)
            if not self.reader.exists(target):
                self.errors.add(loc, f"cannot find imported file '{rel}'")
                continue
            self.load(target)
        self.order.append(parsed)
        return parsed

    # ------------------------------------------------------------ build

    def build(self, roots: list[str]) -> m.Program:
        for path in roots:
            self.load(path)
        self.errors.raise_if_any()
        self.register()
        self.errors.raise_if_any()
        self.resolve()
        self.errors.raise_if_any()
        return self.program

    def declare(self, name: str, loc: Loc, decl: object, what: str) -> bool:
        if name in self.names:
            first, first_what = self.names[name]
            self.errors.add(loc, f"duplicate name '{name}'{what}; first declared at {first.loc}{first_what}")
            return False
        self.names[name] = (decl, what)
        return True

    def register(self) -> None:
        p = self.program
        modules: dict[str, ParsedFile] = {}
        for parsed in self.order:
            name = parsed.module
            if name in modules:
                self.errors.add(parsed.module_loc, f"module '{name}' is also declared by {modules[name].display}")
                continue
            modules[name] = parsed
            mod = m.Module(name, parsed.display, target=parsed.target or "al")
            for rel, _ in parsed.imports:
                target = self.loaded.get(self.reader.key(os.path.join(os.path.dirname(parsed.path), rel)))
                if target is not None and target.module not in mod.imports:
                    mod.imports.append(target.module)
            self.visible[name] = {name, *mod.imports}
            mod.decls = list(parsed.decls)
            p.modules.append(mod)
        for parsed in self.order:
            for decl in parsed.decls:
                self.register_decl(decl)
        for parsed in self.order:
            for obj, attr, cname, loc in parsed.const_refs:
                const = self.lookup(cname, loc, parsed.module, m.Const, "constant")
                if const is not None:
                    if attr == "array":
                        if const.value <= 0:
                            self.errors.add(loc, f"array length must be positive; '{cname}' is {const.value}")
                        obj.array = const.value
                    else:
                        setattr(obj, attr, const.value)
        # After the constants: the structures copy the parameters' array lengths.
        for verb in list(p.verbs.values()):
            self.synthesize(verb)

    def register_decl(self, decl: Decl) -> None:
        p = self.program
        if isinstance(decl, m.QpStateMachine):
            if p.qp_state_machine is not None:
                first = p.qp_state_machine.loc
                self.errors.add(decl.loc, f"a second qp_state_machine; the first is at {first}")
            else:
                p.qp_state_machine = decl
            return
        if not self.declare(decl.name, decl.loc, decl, ""):
            return
        if isinstance(decl, m.Const):
            p.consts[decl.name] = decl
        elif isinstance(decl, m.Enum):
            if decl.kind == "statuses" and p.statuses is not None:
                first = p.statuses
                self.errors.add(decl.loc, f"a second statuses declaration '{decl.name}'; '{first.name}' is declared at {first.loc}")
            p.enums[decl.name] = decl
        elif isinstance(decl, m.Flags):
            p.flags[decl.name] = decl
        elif isinstance(decl, m.Struct):
            p.structs[decl.name] = decl
        elif isinstance(decl, m.Object):
            p.objects[decl.name] = decl
        elif isinstance(decl, m.Verb):
            p.verbs[decl.name] = decl
        elif isinstance(decl, m.MadClass):
            p.mad_classes[decl.name] = decl
        elif isinstance(decl, m.Layout):
            p.layouts[decl.name] = decl

    def synthesize(self, verb: m.Verb) -> None:
        """<Verb>In from in+inout parameters, <Verb>Out from out+inout, in declaration order."""
        for side, dirs, attr in (("In", ("in", "inout"), "in_struct"), ("Out", ("out", "inout"), "out_struct")):
            params = [q for q in verb.params if q.direction in dirs]
            if not params:
                continue
            fields = [
                m.Field(q.name, q.type, q.loc, doc=q.doc, array=q.array, array_const=q.array_const,
                        variable=q.variable, count_field=q.count_field, max_count=q.max_count,
                        reserved=q.reserved, pad=q.pad)
                for q in params
            ]
            s = m.Struct(verb.name + side, fields, verb.loc, doc=verb.doc, module=verb.module, verb=verb)
            setattr(verb, attr, s)
            what = f" (the {'input' if side == 'In' else 'output'} structure of verb '{verb.name}')"
            if self.declare(s.name, verb.loc, s, what):
                self.program.structs[s.name] = s

    # ------------------------------------------------------------ resolution

    def lookup(self, name: str, loc: Loc, module: str, cls: type, what: str):
        """The declaration `name` of class `cls`, visible from `module`; None after an error."""
        entry = self.names.get(name)
        if entry is None:
            self.errors.add(loc, f"unknown {what} '{name}'")
            return None
        decl = entry[0]
        if not isinstance(decl, cls):
            kind = describe_decl(decl)
            self.errors.add(loc, f"'{name}' is {_article(kind)} {kind}, not {_article(what)} {what}")
            return None
        if decl.module not in self.visible.get(module, {decl.module}):
            self.errors.add(loc, f"'{name}' is declared in module '{decl.module}', which module '{module}' does not import")
            return None
        return decl

    def resolve_type(self, ref: m.TypeRef, module: str) -> None:
        if ref.decl is not None or ref.handle_object is not None or ref.name in m.POINTER_SIZED:
            return
        if ref.is_handle:
            ref.handle_object = self.lookup(ref.handle_of, ref.loc, module, m.Object, "object")
            return
        if ref.is_primitive:
            return
        entry = self.names.get(ref.name)
        if entry is not None and isinstance(entry[0], m.Object):
            self.errors.add(ref.loc, f"'{ref.name}' is an object, not a type; use handle<{ref.name}>")
            return
        if entry is None:
            self.errors.add(ref.loc, f"unknown type '{ref.name}'")
            return
        ref.decl = self.lookup(ref.name, ref.loc, module, (m.Enum, m.Flags, m.Struct), "type")

    def resolve(self) -> None:
        p = self.program
        for s in p.structs.values():
            if s.verb is None:
                for f in s.fields:
                    self.resolve_type(f.type, s.module)
        for o in p.objects.values():
            if o.parent is not None:
                o.parent_obj = self.lookup(o.parent, o.ref_locs[o.parent], o.module, m.Object, "object")
                if o.parent_obj is not None:
                    o.parent_obj.children.append(o)
            for u in o.uses:
                used = self.lookup(u, o.ref_locs[u], o.module, m.Object, "object")
                if used is not None and o not in used.users:
                    used.users.append(o)
        for o in p.objects.values():
            seen, cur = set(), o
            while cur is not None and cur.name not in seen:
                seen.add(cur.name)
                cur = cur.parent_obj
            if cur is o:
                self.errors.add(o.ref_locs.get(o.parent, o.loc), f"object '{o.name}' is its own ancestor")
        for v in p.verbs.values():
            self.resolve_verb(v)
        for lay in p.layouts.values():
            self.resolve_layout(lay)
        for e in p.enums.values():
            if e.kind == "opcodes":
                for mem in e.members:
                    for h in mem.headers:
                        hdr = self.lookup(h, mem.loc, e.module, m.Layout, "header")
                        if hdr is not None and hdr.kind != "header":
                            self.errors.add(mem.loc, f"'{h}' is a {hdr.kind}, not a header")

    def resolve_verb(self, v: m.Verb) -> None:
        by_name: dict[str, m.Param] = {}
        for q in v.params:
            self.resolve_type(q.type, v.module)
            if q.name in by_name:
                self.errors.add(q.loc, f"duplicate parameter '{q.name}' in verb '{v.name}'")
            by_name.setdefault(q.name, q)
        for q in v.params:
            if q.access is not None and not q.type.is_handle:
                self.errors.add(q.ref_locs["access"], f"access '{q.access}' is only for handle parameters; '{q.name}' is not a handle")
            if q.type.is_handle and q.access is None:
                q.access = "read"
            for attr, word in (("count_field", "count"), ("length_field", "length")):
                target = getattr(q, attr)
                if target is None:
                    continue
                loc = q.ref_locs.get(word, q.loc)
                ref = by_name.get(target)
                if ref is None:
                    self.errors.add(loc, f"{word}({target}) of parameter '{q.name}' names no parameter of verb '{v.name}'")
                elif not ref.type.is_primitive or ref.array is not None or ref.variable or ref.type.name == "uptr":
                    self.errors.add(loc, f"{word}({target}) of parameter '{q.name}' must name an integer parameter")
            if q.length_field is not None and q.type.name != "uptr":
                self.errors.add(q.ref_locs.get("length", q.loc), f"length({q.length_field}) is only for uptr parameters; '{q.name}' is {q.type.name}")
            if q.variable and (q.count_field is None or q.max_count is None):
                self.errors.add(q.loc, f"variable array '{q.name}' needs count(field) and max(N)")
            if not q.variable and (q.count_field is not None or q.max_count is not None):
                self.errors.add(q.loc, f"count() and max() are only for variable arrays ('{q.name}[]')")

    def resolve_layout(self, lay: m.Layout) -> None:
        for c in lay.classes:
            cls = self.lookup(c, lay.ref_locs[c], lay.module, m.MadClass, "mad_class")
            if cls is not None:
                lay.class_objs.append(cls)
        for meth in lay.methods:
            loc = lay.ref_locs["method " + meth]
            if lay.class_objs and not any(any(x.name == meth for x in c.methods) for c in lay.class_objs):
                names = ", ".join(c.name for c in lay.class_objs)
                self.errors.add(loc, f"method '{meth}' is not a method of {names}")
        for f in lay.fields:
            if f.kind == "enum":
                entry = self.names.get(f.enum_name)
                if entry is None or not isinstance(entry[0], m.Enum):
                    self.errors.add(f.loc, f"unknown enum '{f.enum_name}' in 'as' of field '{f.name}'")
                    continue
                f.enum = self.lookup(f.enum_name, f.loc, lay.module, m.Enum, "enum")


def parse_files(paths: list[str], root: Optional[str] = None) -> m.Program:
    """Parse `paths` and their imports. Locations are relative to `root` when given."""
    return ProgramBuilder(_Reader(root)).build(list(paths))


def idl_files(idl_dir: str) -> list[str]:
    """Every *.idl under `idl_dir`, in a stable order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(idl_dir):
        dirnames.sort()
        found.extend(os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".idl"))
    return found


def parse_dir(idl_dir: str, root: Optional[str] = None) -> m.Program:
    return parse_files(idl_files(idl_dir), root)


def parse_sources(files: dict[str, str], roots: Optional[list[str]] = None) -> m.Program:
    """Parse in-memory files {name: text} (tests). Every file is a root unless `roots` is given."""
    files = {os.path.normpath(k): v for k, v in files.items()}
    return ProgramBuilder(_Reader(None, files)).build(sorted(files) if roots is None else roots)


def parse_text(text: str, name: str = "test.idl") -> m.Program:
    return parse_sources({name: text})
