import os
import tempfile
import unittest

from softib_idl import parser

from .support import PRELUDE, IdlTestCase, frontend

FULL = PRELUDE + """\
import "other.idl";
const u32 MAX_SGE = 4;

/// Type of a queue pair.
enum QpType : u32 {
    /// Reliable connected.
    RC = 0,
    UC = 1,
    UD = 3
}

flags AccessFlags : u32 { LOCAL_WRITE = 0x01, REMOTE_WRITE = 0x02, REMOTE = 0x0C, };

/// One scatter/gather element.
struct Sge {
    u64 vaddr;
    u32 length;
    u32 lkey;
}

struct Uses {
    handle<Ca> ca;
    reserved u32 reserved0;
    pad u8 pad0[4];
    Sge sge[MAX_SGE];
    AccessFlags access;
    QpType type;
    OtherEnum other;
    u8 tail[8];
}

object Ca { parent Al; }
object Cq { parent Ca; }
object Qp { parent Ca; uses Cq, Cq2; }
object Cq2 { parent Ca; }

/// Create a CQ.
verb CreateCq = 0x0030 {
    irql dispatch;
    async;
    paths direct, irp, proxy;
    ioctl 0x830 access readwrite;
    returns SUCCESS, BUSY,;
    /// The CA.
    in    handle<Ca> ca read;
    in    u32 size;
    in    optional reserved u32 reserved0;
    in    optional uptr context length(size);
    out   handle<Cq> cq new;
    inout u32 actual_size;
    out   pad u32 pad0;
    in    u32 num;
    in    pad u32 pad1;
    in    u64 pages[] count(num) max(MAX_SGE);
}

verb DestroyCq = 0x0031 { paths direct; in handle<Cq> cq destroy; }

verb PollCq = 0x0032 {
    paths speed;
    irql dispatch;
    in handle<Cq> cq;
    out u32 count;
    out pad u32 pad0;
}

verb NoParams = 0x0033 { paths direct; sync; }

qp_state_machine QpState by QpType with QpAttrMask {
    transition RESET -> INIT for RC, UC {
        required PKEY, PORT;
        optional ACCESS;
    }
    transition * -> RESET for *;
}
enum QpState : u32 { RESET = 0, INIT = 1, }
flags QpAttrMask : u32 { PKEY = 1, PORT = 2, ACCESS = 4, }

mad_class SubnMgt = 0x01 {
    version 1;
    methods Get = 0x01, Set = 0x02, GetResp = 0x81;
}
mad_class SubnMgtDR = 0x81 { version 1; methods Get = 0x01, Set = 0x02; }

/// MAD header.
format MadHeader size 8 {
    BaseVersion : 8 @ 0;
    R : 1 @ 1[7];
    Method : 7 @ 1[6];
    reserved Reserved1 : 16 @ 2;
    AttributeModifier : 32 @ 4;
}

attribute NodeInfo = 0x0011 in SubnMgt, SubnMgtDR size 40 {
    methods Get;
    modifier "0";
    /// Node type.
    NodeType : 8 @ 2 as NodeType;
    Guid : 64 @ 4;
    Gid : 128 @ 12 as gid component 3;
    Name : 64 @ 28 as string;
    Blob : 16 @ 36 as bytes;
    Flag : 1 @ 38[0] as bool;
    methods : 8 @ 39;
}

attribute VLArb = 0x0018 in SubnMgt size 64 {
    reserved Reserved : 3 @ 0[7] repeat 32 stride 16;
    VL : 5 @ 0[4] repeat 32 stride 16;
    Weight : 8 @ 1 repeat 32 stride 16;
}

header BTH size 12 {
    OpCode : 8 @ 0 as BthOpcode;
    PSN : 24 @ 9;
}
header ImmDt size 4 { Imm : 32 @ 0; }

opcodes BthOpcode : u8 {
    RC_SEND_FIRST = 0x00 : payload;
    RC_SEND_ONLY_WITH_IMMEDIATE = 0x05 : ImmDt, payload;
    RC_ACK = 0x11;
}
"""

OTHER = """\
module other;
import "t.idl";
enum OtherEnum : u16 { A = 1, }
enum NodeType : u8 { CA = 1, SWITCH = 2, }
"""


class ParserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.p = frontend({"t.idl": FULL, "other.idl": OTHER}, stage="parse")

    def test_modules_imports_and_decl_order(self):
        names = [mod.name for mod in self.p.modules]
        self.assertEqual(sorted(names), ["other", "t"])
        t = next(mod for mod in self.p.modules if mod.name == "t")
        self.assertEqual(t.imports, ["other"])
        self.assertEqual(t.path, "t.idl")
        kinds = [type(d).__name__ for d in t.decls[:6]]
        self.assertEqual(kinds, ["Enum", "Object", "Const", "Enum", "Flags", "Struct"])
        self.assertEqual(self.p.enums["QpType"].module, "t")
        self.assertEqual(self.p.enums["OtherEnum"].module, "other")

    def test_const_enum_flags_statuses(self):
        self.assertEqual(self.p.consts["MAX_SGE"].value, 4)
        e = self.p.enums["QpType"]
        self.assertEqual([(x.name, x.value) for x in e.members], [("RC", 0), ("UC", 1), ("UD", 3)])
        self.assertEqual(e.doc, "Type of a queue pair.")
        self.assertEqual(e.members[0].doc, "Reliable connected.")
        self.assertEqual((e.kind, e.underlying), ("enum", "u32"))
        self.assertEqual(self.p.flags["AccessFlags"].mask, 0x0F)
        self.assertEqual(self.p.statuses.name, "Status")
        self.assertEqual(self.p.statuses.kind, "statuses")

    def test_struct_fields(self):
        s = self.p.structs["Uses"]
        f = {x.name: x for x in s.fields}
        self.assertTrue(f["reserved0"].reserved and not f["reserved0"].pad)
        self.assertTrue(f["pad0"].pad and f["pad0"].array == 4)
        self.assertEqual((f["sge"].array, f["sge"].array_const), (4, "MAX_SGE"))
        self.assertIs(f["sge"].type.decl, self.p.structs["Sge"])
        self.assertIs(f["ca"].type.handle_object, self.p.objects["Ca"])
        self.assertIs(f["access"].type.decl, self.p.flags["AccessFlags"])
        self.assertIs(f["other"].type.decl, self.p.enums["OtherEnum"])
        self.assertEqual(self.p.structs["Sge"].doc, "One scatter/gather element.")

    def test_objects(self):
        o = self.p.objects
        self.assertTrue(o["Al"].implicit)
        self.assertIs(o["Ca"].parent_obj, o["Al"])
        self.assertEqual([c.name for c in o["Ca"].children], ["Cq", "Qp", "Cq2"])
        self.assertEqual(o["Qp"].uses, ["Cq", "Cq2"])
        self.assertEqual([u.name for u in o["Cq"].users], ["Qp"])

    def test_verb_clauses(self):
        v = self.p.verbs["CreateCq"]
        self.assertEqual((v.ordinal, v.irql, v.mode), (0x30, "dispatch", "async"))
        self.assertEqual(v.paths, ["direct", "irp", "proxy"])
        self.assertEqual((v.ioctl_function, v.ioctl_access), (0x830, "readwrite"))
        self.assertEqual(v.ioctl_code, (0x3B << 16) | (3 << 14) | (0x830 << 2))
        self.assertEqual(v.returns, ["SUCCESS", "BUSY"])
        self.assertEqual(v.doc, "Create a CQ.")
        n = self.p.verbs["NoParams"]
        self.assertEqual((n.irql, n.mode, n.in_struct, n.out_struct), ("passive", "sync", None, None))

    def test_verb_params(self):
        v = self.p.verbs["CreateCq"]
        q = {x.name: x for x in v.params}
        self.assertEqual(q["ca"].doc, "The CA.")
        self.assertEqual((q["ca"].direction, q["ca"].access), ("in", "read"))
        self.assertTrue(q["reserved0"].optional and q["reserved0"].reserved)
        self.assertEqual(q["context"].length_field, "size")
        self.assertEqual((q["cq"].direction, q["cq"].access), ("out", "new"))
        self.assertEqual(q["actual_size"].direction, "inout")
        self.assertTrue(q["pages"].variable)
        self.assertEqual((q["pages"].count_field, q["pages"].max_count), ("num", 4))
        self.assertEqual(self.p.verbs["PollCq"].params[0].access, "read")  # default
        self.assertIs(v.creates, q["cq"])
        self.assertIs(self.p.verbs["DestroyCq"].destroys.type.handle_object, self.p.objects["Cq"])

    def test_in_out_structs(self):
        v = self.p.verbs["CreateCq"]
        self.assertEqual(v.in_struct.name, "CreateCqIn")
        self.assertEqual([f.name for f in v.in_struct.fields],
                         ["ca", "size", "reserved0", "context", "actual_size", "num", "pad1", "pages"])
        self.assertEqual([f.name for f in v.out_struct.fields], ["cq", "actual_size", "pad0"])
        self.assertIs(v.in_struct.verb, v)
        self.assertIs(self.p.structs["CreateCqOut"], v.out_struct)
        self.assertEqual(v.in_struct.variable_field.name, "pages")
        self.assertEqual(v.in_struct.fields[-1].max_count, 4)
        self.assertEqual(v.in_struct.module, "t")
        speed = self.p.verbs["PollCq"]
        self.assertTrue(speed.is_speed)
        self.assertEqual(speed.in_struct.name, "PollCqIn")
        self.assertEqual(speed.out_struct.name, "PollCqOut")
        self.assertIsNone(self.p.verbs["DestroyCq"].out_struct)

    def test_qp_state_machine(self):
        sm = self.p.qp_state_machine
        self.assertEqual((sm.state_enum, sm.type_enum, sm.mask_flags), ("QpState", "QpType", "QpAttrMask"))
        t0, t1 = sm.transitions
        self.assertEqual((t0.from_state, t0.to_state, t0.qp_types), ("RESET", "INIT", ["RC", "UC"]))
        self.assertEqual((t0.required, t0.optional), (["PKEY", "PORT"], ["ACCESS"]))
        self.assertEqual((t1.from_state, t1.to_state, t1.qp_types), (None, "RESET", None))

    def test_mad_class(self):
        c = self.p.mad_classes["SubnMgt"]
        self.assertEqual((c.value, c.version), (1, 1))
        self.assertEqual([(x.name, x.value) for x in c.methods], [("Get", 1), ("Set", 2), ("GetResp", 0x81)])

    def test_format_bit_fields(self):
        lay = self.p.layouts["MadHeader"]
        self.assertEqual((lay.kind, lay.size, lay.doc), ("format", 8, "MAD header."))
        f = {x.name: x for x in lay.fields}
        self.assertEqual((f["R"].width, f["R"].byte, f["R"].bit, f["R"].bit_offset), (1, 1, 7, 8))
        self.assertEqual((f["Method"].bit, f["Method"].bit_offset), (6, 9))
        self.assertEqual(f["BaseVersion"].bit, 7)
        self.assertTrue(f["Reserved1"].reserved)

    def test_attribute(self):
        lay = self.p.layouts["NodeInfo"]
        self.assertEqual((lay.attr_id, lay.classes, lay.methods, lay.modifier),
                         (0x11, ["SubnMgt", "SubnMgtDR"], ["Get"], "0"))
        self.assertEqual([c.name for c in lay.class_objs], ["SubnMgt", "SubnMgtDR"])
        f = {x.name: x for x in lay.fields}
        self.assertEqual((f["NodeType"].kind, f["NodeType"].enum_name), ("enum", "NodeType"))
        self.assertIs(f["NodeType"].enum, self.p.enums["NodeType"])
        self.assertEqual(f["NodeType"].doc, "Node type.")
        self.assertEqual((f["Gid"].kind, f["Gid"].component), ("gid", 3))
        self.assertEqual([f[k].kind for k in ("Name", "Blob", "Flag", "Guid")], ["string", "bytes", "bool", "uint"])
        self.assertIn("methods", f)  # a field may be called like a keyword

    def test_repeat_and_stride(self):
        f = {x.name: x for x in self.p.layouts["VLArb"].fields}
        self.assertEqual((f["VL"].repeat, f["VL"].stride, f["VL"].bit_offset), (32, 16, 3))
        self.assertEqual(f["VL"].element_bit_offset(2), 35)
        self.assertEqual(f["Weight"].end_bit, 31 * 16 + 8 + 8)

    def test_opcodes(self):
        e = self.p.enums["BthOpcode"]
        self.assertEqual(e.kind, "opcodes")
        mem = e.member("RC_SEND_ONLY_WITH_IMMEDIATE")
        self.assertEqual((mem.value, mem.headers, mem.payload), (5, ["ImmDt"], True))
        self.assertEqual((e.member("RC_ACK").headers, e.member("RC_ACK").payload), ([], False))
        self.assertIs(self.p.layouts["BTH"].fields[0].enum, e)


class ImportTest(IdlTestCase):
    def write(self, root, files):
        for name, text in files.items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    def test_imports_relative_to_importer_cycles_loaded_once(self):
        with tempfile.TemporaryDirectory() as root:
            self.write(root, {
                "a.idl": 'module a; import "sub/b.idl"; struct S { B b; }',
                "sub/b.idl": 'module b; import "c.idl"; import "../a.idl"; enum B : u32 { X = 1, }',
                "sub/c.idl": 'module c; import "b.idl"; const u8 K = 1;',
            })
            p = parser.parse_files([os.path.join(root, "a.idl"), os.path.join(root, "sub/c.idl")], root=root)
            self.assertEqual(sorted(mod.path for mod in p.modules), ["a.idl", "sub/b.idl", "sub/c.idl"])
            self.assertIs(p.structs["S"].fields[0].type.decl, p.enums["B"])

    def test_parse_dir_reads_every_file(self):
        with tempfile.TemporaryDirectory() as root:
            self.write(root, {"x.idl": "module x; const u8 A = 1;", "y.idl": "module y; const u8 B = 2;",
                              "notes.txt": "ignored"})
            p = parser.parse_dir(root, root=root)
            self.assertEqual(list(p.consts), ["A", "B"])

    def test_missing_import(self):
        self.assertIdlError('module a;\nimport "nope.idl";', "t.idl:2:8: error: cannot find imported file 'nope.idl'",
                            stage="parse")

    def test_not_imported_is_invisible(self):
        self.assertIdlError({"a.idl": "module a;\nstruct S { E e; }", "b.idl": "module b; enum E : u8 { X = 1, }"},
                            "a.idl:2:12: error: 'E' is declared in module 'b', which module 'a' does not import",
                            stage="parse")

    def test_same_module_twice(self):
        self.assertIdlError({"a.idl": "module a;", "b.idl": "module a;"},
                            "b.idl:1:8: error: module 'a' is also declared by a.idl", stage="parse")


class ParserErrorTest(IdlTestCase):
    def test_missing_module(self):
        self.assertIdlError("const u8 A = 1;", "t.idl:1:1: error: the file must start with 'module <name>;'",
                            stage="parse")

    def test_unknown_declaration(self):
        self.assertIdlError("module t;\nunion U {}", "t.idl:2:1: error: expected a declaration, found 'union'",
                            stage="parse")

    def test_reserved_needs_a_name(self):
        self.assertIdlError("module t;\nstruct S { reserved u32; }",
                            "t.idl:2:24: error: a reserved field needs a name", stage="parse")
        self.assertIdlError("module t;\nformat F size 1 { reserved : 8 @ 0; }",
                            "t.idl:2:28: error: a reserved field needs a name", stage="parse")

    def test_duplicate_member_and_value(self):
        self.assertIdlError("module t;\nenum E : u8 { A = 1, B = 1, }",
                            "t.idl:2:22: error: 'B' has the same value as 'A' in 'E'", stage="parse")
        self.assertIdlError("module t;\nflags F : u8 { A = 1, A = 2, }",
                            "t.idl:2:23: error: duplicate member 'A' in 'F'; first declared at 2:16", stage="parse")

    def test_value_does_not_fit(self):
        self.assertIdlError("module t;\nenum E : u8 { A = 0x100, }",
                            "t.idl:2:19: error: value 0x100 of 'A' does not fit in u8", stage="parse")

    def test_unknown_enum_in_as(self):
        self.assertIdlError("module t;\nformat F size 1 { X : 8 @ 0 as Nope; }",
                            "t.idl:2:19: error: unknown enum 'Nope' in 'as' of field 'X'", stage="parse")

    def test_object_is_not_a_type(self):
        self.assertIdlError("module t;\nobject O { implicit; }\nstruct S { O o; }",
                            "t.idl:3:12: error: 'O' is an object, not a type; use handle<O>", stage="parse")

    def test_handle_of_non_object(self):
        self.assertIdlError("module t;\nstruct S { handle<S> h; }",
                            "t.idl:2:12: error: 'S' is a struct, not an object", stage="parse")

    def test_count_names_a_parameter(self):
        self.assertIdlError("module t;\nverb V = 1 { paths direct; in u32 n; in u32 a[] count(m) max(4); }",
                            "t.idl:2:55: error: count(m) of parameter 'a' names no parameter of verb 'V'",
                            stage="parse")

    def test_variable_needs_count_and_max(self):
        self.assertIdlError("module t;\nverb V = 1 { paths direct; in u32 a[]; }",
                            "t.idl:2:35: error: variable array 'a' needs count(field) and max(N)", stage="parse")

    def test_access_on_non_handle(self):
        self.assertIdlError("module t;\nverb V = 1 { paths direct; in u32 a new; }",
                            "t.idl:2:37: error: access 'new' is only for handle parameters; 'a' is not a handle",
                            stage="parse")

    def test_unknown_constant(self):
        self.assertIdlError("module t;\nstruct S { u8 a[N]; }", "t.idl:2:17: error: unknown constant 'N'",
                            stage="parse")

    def test_two_statuses(self):
        self.assertIdlError("module t;\nstatuses A : u8 { X = 0, }\nstatuses B : u8 { Y = 0, }",
                            "t.idl:3:10: error: a second statuses declaration 'B'; 'A' is declared at t.idl:2:10",
                            stage="parse")

    def test_several_errors_are_reported_together(self):
        e = self.assertIdlError("module t;\nstruct S { Foo a; Bar b; }", "t.idl:2:12: error: unknown type 'Foo'",
                                stage="parse")
        self.assertEqual([x.headline for x in e.errors],
                         ["t.idl:2:12: error: unknown type 'Foo'", "t.idl:2:19: error: unknown type 'Bar'"])

    def test_method_of_class(self):
        self.assertIdlError("module t;\nmad_class C = 1 { version 1; methods Get = 1; }\n"
                            "attribute A = 1 in C size 1 { methods Set; X : 8 @ 0; }",
                            "t.idl:3:39: error: method 'Set' is not a method of C", stage="parse")

    def test_handle_needs_an_object(self):
        self.assertIdlError("module t;\nstruct S { handle h; }", "t.idl:2:19: error: expected '<', found 'h'",
                            stage="parse")

    def test_crlf_line_endings(self):
        p = frontend("module t;\r\n/// Doc.\r\nenum E : u8 {\r\n  A = 1,\r\n}\r\n", stage="parse")
        self.assertEqual((p.enums["E"].doc, p.enums["E"].members[0].loc.line), ("Doc.", 4))

    def test_opcode_header_must_be_header(self):
        self.assertIdlError("module t;\nformat F size 1 { X : 8 @ 0; }\nopcodes O : u8 { A = 1 : F; }",
                            "t.idl:3:18: error: 'F' is a format, not a header", stage="parse")


if __name__ == "__main__":
    unittest.main()


class ModuleTargetTest(IdlTestCase):
    def test_default_target_is_the_access_layer(self):
        p = frontend("module t;\nconst u8 A = 1;", stage="parse")
        self.assertEqual(p.modules[0].target, "al")
        self.assertEqual(p.module_target("t"), "al")

    def test_target_hca(self):
        p = frontend({"a.idl": "module a;\ntarget hca;\nconst u8 A = 1;", "b.idl": "module b;"},
                     stage="parse")
        self.assertEqual(p.module_target("a"), "hca")
        self.assertEqual(p.module_target("b"), "al")
        self.assertEqual(p.consts["A"].module, "a")

    def test_target_device(self):
        p = frontend("module a;\ntarget device;\nconst u8 A = 1;", stage="parse")
        self.assertEqual(p.module_target("a"), "device")

    def test_unknown_target(self):
        self.assertIdlError("module t;\ntarget gpu;",
                            "t.idl:2:8: error: unknown module target 'gpu'; expected one of al, hca, device",
                            stage="parse")

    def test_second_target(self):
        self.assertIdlError("module t;\ntarget hca;\ntarget al;",
                            "t.idl:3:1: error: a second 'target' declaration; a module has one target",
                            stage="parse")

    def test_target_before_module(self):
        self.assertIdlError("target hca;\nmodule t;",
                            "t.idl:1:1: error: the file must start with 'module <name>;'", stage="parse")
