"""Bad IDL: each case asserts the exact `file:line:col: error: message`."""

import unittest

from .support import PRELUDE, IdlTestCase, frontend

# PRELUDE is 4 lines; snippets below start on line 5.
OBJECTS = PRELUDE + """\
object Cq { parent Al; }
verb CreateCq = 0x10 { paths direct; out handle<Cq> cq new; }
verb DestroyCq = 0x11 { paths direct; in handle<Cq> cq destroy; }
"""  # the snippets after OBJECTS start on line 8


class NegativeTest(IdlTestCase):
    def test_duplicate_ordinal(self):
        self.assertIdlError(OBJECTS + "verb Query = 0x10 { paths direct; in handle<Cq> cq; }",
                            "t.idl:8:14: error: verb 'Query' has ordinal 0x0010, already used by verb 'CreateCq'")

    def test_unknown_type(self):
        self.assertIdlError(PRELUDE + "struct S {\n    u33 size;\n}",
                            "t.idl:6:5: error: unknown type 'u33'")

    def test_pointer_sized_types(self):
        cases = [("long", "long", 5), ("unsigned long", "unsigned long", 5), ("size_t", "size_t", 5),
                 ("u32*", "u32*", 5), ("void *", "void*", 5)]
        for spelled, shown, col in cases:
            with self.subTest(type=spelled):
                self.assertIdlError(PRELUDE + f"struct S {{\n    {spelled} x;\n}}",
                                    f"t.idl:6:{col}: error: pointer-sized type '{shown}' cannot be expressed; "
                                    "use u64 or uptr")

    def test_pointer_sized_parameter(self):
        self.assertIdlError(PRELUDE + "verb V = 1 { paths direct;\n  in uintptr_t p; }",
                            "t.idl:6:6: error: pointer-sized type 'uintptr_t' cannot be expressed; use u64 or uptr")

    def test_32_64_layout_difference(self):
        self.assertIdlError(PRELUDE + "struct S {\n    u32 a;\n    u64 b;\n}",
                            "t.idl:7:9: error: field 'b' is at offset 4 in a 32-bit build and 8 in a 64-bit build")

    def test_implicit_padding(self):
        self.assertIdlError(PRELUDE + "struct S {\n    u16 a;\n    u32 b;\n}",
                            "t.idl:7:9: error: implicit padding of 2 bytes before field 'b'; declare it with pad")

    def test_overlapping_bit_fields(self):
        self.assertIdlError(PRELUDE + "header H size 2 {\n    SE : 1 @ 0[7];\n    M : 2 @ 0[7];\n}",
                            "t.idl:7:5: error: field 'M' overlaps field 'SE' at byte 0 bit 7")

    def test_field_past_attribute_end(self):
        self.assertIdlError(PRELUDE + "mad_class C = 1 { version 1; methods Get = 1; }\n"
                                      "attribute A = 0x11 in C size 40 {\n    LocalPortNum : 8 @ 40;\n}",
                            "t.idl:7:5: error: field 'LocalPortNum' runs past the end of attribute 'A': "
                            "it ends in byte 40, but the size is 40 bytes")

    def test_object_with_two_creators(self):
        self.assertIdlError(OBJECTS + "verb CreateCq2 = 0x12 { paths direct; out handle<Cq> cq new; }",
                            "t.idl:8:57: error: object 'Cq' has two creating verbs: 'CreateCq' and 'CreateCq2'")

    def test_created_by_allows_named_creators(self):
        program = frontend(PRELUDE + "object Mr { parent Al; created_by RegMem, RegPhys; }\n"
                                     "verb RegMem = 1 { paths direct; out handle<Mr> mr new; }\n"
                                     "verb RegPhys = 2 { paths direct; out handle<Mr> mr new; }\n"
                                     "verb DeregMr = 3 { paths direct; in handle<Mr> mr destroy; }")
        mr = program.objects["Mr"]
        self.assertEqual([v.name for v in mr.creators], ["RegMem", "RegPhys"])
        self.assertEqual(mr.creator.name, "RegMem")

    def test_creator_missing_from_created_by(self):
        self.assertIdlError(PRELUDE + "object Mr { parent Al; created_by RegMem; }\n"
                                      "verb RegMem = 1 { paths direct; out handle<Mr> mr new; }\n"
                                      "verb RegPhys = 2 { paths direct; out handle<Mr> mr new; }\n"
                                      "verb DeregMr = 3 { paths direct; in handle<Mr> mr destroy; }",
                            "t.idl:7:52: error: verb 'RegPhys' creates 'Mr' but is not in the object's "
                            "created_by list")

    def test_created_by_names_a_non_creator(self):
        self.assertIdlError(PRELUDE + "object Mr { parent Al; created_by RegMem, QueryMr; }\n"
                                      "verb RegMem = 1 { paths direct; out handle<Mr> mr new; }\n"
                                      "verb QueryMr = 2 { paths direct; in handle<Mr> mr; }\n"
                                      "verb DeregMr = 3 { paths direct; in handle<Mr> mr destroy; }",
                            "t.idl:5:43: error: object 'Mr' names 'QueryMr' in created_by, but that verb "
                            "has no handle<Mr> parameter with access 'new'")

    def test_object_without_destroyer(self):
        self.assertIdlError(PRELUDE + "object Mr { parent Al; }\n"
                                      "verb RegMr = 1 { paths direct; out handle<Mr> mr new; }",
                            "t.idl:5:8: error: object 'Mr' has no destroying verb (a handle<Mr> parameter with "
                            "access 'destroy'); mark it implicit if the runtime manages it")

    def test_unknown_status(self):
        self.assertIdlError(OBJECTS + "verb Q = 0x12 {\n  paths direct;\n  returns SUCCESS, INVALID_CQ;\n}",
                            "t.idl:10:20: error: verb 'Q' returns unknown status 'INVALID_CQ' (not in statuses 'Status')")

    def test_missing_direction(self):
        self.assertIdlError(PRELUDE + "verb V = 1 {\n    paths direct;\n    u32 size;\n}",
                            "t.idl:7:5: error: parameter 'size' of verb 'V' has no direction (in, out or inout)")

    def test_unterminated_block(self):
        self.assertIdlError(PRELUDE + "verb V = 1 {\n    paths direct;\n    in u32 size;\n",
                            "t.idl:7:17: error: expected '}' to close verb 'V' opened at 5:12")

    def test_unterminated_struct(self):
        self.assertIdlError(PRELUDE + "struct S { u32 a;", "t.idl:5:18: error: expected '}' to close struct 'S' opened at 5:10")

    def test_unterminated_string(self):
        self.assertIdlError(PRELUDE + 'mad_class C = 1 { version 1; methods Get = 1; }\n'
                                      'attribute A = 1 in C size 4 {\n    modifier "block number;\n}',
                            "t.idl:7:14: error: unterminated string")

    def test_unterminated_block_comment(self):
        self.assertIdlError(PRELUDE + "/* forgotten\nstruct S { u32 a; }",
                            "t.idl:5:1: error: unterminated block comment")

    def test_stale_ordinal_vs_lock(self):
        self.assertIdlError(OBJECTS, "t.idl:7:18: error: verb 'DestroyCq' had ordinal 0x0012 in ordinals.lock and now "
                                     "has 0x0011; ordinals are stable (run with --update-lock only for a verb never "
                                     "released)", lock={"CreateCq": 0x10, "DestroyCq": 0x12})

    def test_reused_ordinal_of_removed_verb(self):
        self.assertIdlError(OBJECTS, "t.idl:7:18: error: ordinal 0x0011 of verb 'DestroyCq' belonged to verb "
                                     "'FreeCq' in ordinals.lock; use a new ordinal (or --update-lock for a rename)",
                            lock={"CreateCq": 0x10, "FreeCq": 0x11})

    def test_duplicate_component_bit(self):
        self.assertIdlError(PRELUDE + "mad_class SA = 3 { version 2; methods Get = 1; }\n"
                                      "attribute PR = 0x35 in SA size 16 {\n"
                                      "    ServiceID : 64 @ 0 component 0;\n"
                                      "    DGID : 64 @ 8 component 0;\n}",
                            "t.idl:8:5: error: field 'DGID' has component bit 0, already used by field 'ServiceID' "
                            "of attribute 'PR'")

    def test_duplicate_name(self):
        self.assertIdlError(PRELUDE + "enum Cq : u8 { A = 1, }\nstruct Cq { u32 a; }",
                            "t.idl:6:8: error: duplicate name 'Cq'; first declared at t.idl:5:6")

    def test_duplicate_name_with_verb_structure(self):
        self.assertIdlError(PRELUDE + "struct VIn { u32 a; }\nverb V = 1 { paths direct; in u32 a; }",
                            "t.idl:6:6: error: duplicate name 'VIn' (the input structure of verb 'V'); "
                            "first declared at t.idl:5:8")

    def test_new_on_in_handle(self):
        self.assertIdlError(OBJECTS + "verb X = 0x12 { paths direct; in handle<Cq> c new; }",
                            "t.idl:8:47: error: 'new' is only for out handles; parameter 'c' of verb 'X' is in")

    def test_destroy_on_out_handle(self):
        self.assertIdlError(OBJECTS + "verb X = 0x12 { paths direct; out handle<Cq> c destroy; }",
                            "t.idl:8:48: error: 'destroy' is only for in handles; parameter 'c' of verb 'X' is out")

    def test_duplicate_ioctl_function(self):
        self.assertIdlError(PRELUDE + "verb A = 1 { paths proxy; ioctl 0x830; }\n"
                                      "verb B = 2 { paths proxy; ioctl 0x830; }",
                            "t.idl:6:33: error: ioctl function code 0x830 of verb 'B' is already used by verb 'A'")

    def test_unknown_enum_in_as(self):
        self.assertIdlError(PRELUDE + "header BTH size 1 {\n    OpCode : 8 @ 0 as BthOpcodes;\n}",
                            "t.idl:6:5: error: unknown enum 'BthOpcodes' in 'as' of field 'OpCode'")

    def test_syntax_error(self):
        self.assertIdlError(PRELUDE + "enum E : u8 { A = 1 B = 2 }",
                            "t.idl:5:21: error: expected ',', found 'B'")

    def test_qp_state_machine_unknown_state(self):
        self.assertIdlError(PRELUDE + "enum S : u8 { RESET = 0, INIT = 1, }\nenum T : u8 { RC = 0, }\n"
                                      "flags M : u8 { PORT = 1, }\n"
                                      "qp_state_machine S by T with M {\n  transition RESET -> RTR for RC;\n}",
                            "t.idl:9:23: error: qp_state_machine: 'RTR' is not a state of 'S'")


if __name__ == "__main__":
    unittest.main()
