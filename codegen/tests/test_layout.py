import unittest

from .support import IdlTestCase, frontend

HEAD = "module t;\nobject O { implicit; }\nenum E8 : u8 { A = 1, }\nflags F16 : u16 { B = 1, }\n"


def struct_layout(body: str, name: str = "S", extra: str = ""):
    p = frontend(HEAD + extra + f"struct {name} {{ {body} }}", stage="layout")
    s = p.structs[name]
    return s, {f.name: f for f in s.fields}


class StructLayoutTest(IdlTestCase):
    def test_primitives_offsets_sizes(self):
        s, f = struct_layout("u8 a; i8 b; u16 c; u32 d; u64 e; i64 g; uptr h; handle<O> i; bool8 j; u8 k[7];")
        self.assertEqual([(x.name, x.offset, x.size) for x in s.fields],
                         [("a", 0, 1), ("b", 1, 1), ("c", 2, 2), ("d", 4, 4), ("e", 8, 8), ("g", 16, 8),
                          ("h", 24, 8), ("i", 32, 8), ("j", 40, 1), ("k", 41, 7)])
        self.assertEqual((s.size, s.align64, s.align32), (48, 8, 4))
        self.assertEqual((f["e"].align64, f["e"].align32), (8, 4))
        self.assertEqual((f["h"].align64, f["h"].align32), (8, 4))
        self.assertEqual((f["i"].align64, f["i"].align32, f["i"].elem_size), (8, 4, 8))

    def test_enum_and_flags_use_underlying(self):
        s, f = struct_layout("E8 a; u8 b; F16 c;")
        self.assertEqual([(x.offset, x.size) for x in s.fields], [(0, 1), (1, 1), (2, 2)])
        self.assertEqual(s.size, 4)

    def test_nested_struct_and_array_of_structs(self):
        extra = "struct In { u64 v; u32 l; u32 k; }\n"
        s, f = struct_layout("u32 n; pad u32 p; In one; In many[3];", extra=extra)
        self.assertEqual((f["one"].offset, f["one"].size, f["one"].elem_size), (8, 16, 16))
        self.assertEqual((f["many"].offset, f["many"].size, f["many"].elem_size), (24, 48, 16))
        self.assertEqual((f["one"].align64, f["one"].align32), (8, 4))
        self.assertEqual(s.size, 72)

    def test_nested_struct_computed_on_demand(self):
        s, f = struct_layout("Later x;", name="First", extra="struct Later { u16 a; u16 b; }\n")
        self.assertEqual((s.size, f["x"].size), (4, 4))

    def test_array_by_constant(self):
        s, f = struct_layout("u32 a[N];", extra="const u32 N = 6;\n")
        self.assertEqual((f["a"].size, f["a"].array, s.size), (24, 6, 24))

    def test_variable_array(self):
        s, f = struct_layout("u32 n; pad u32 p; u64 pages[] count(n) max(8);")
        self.assertEqual((f["pages"].offset, f["pages"].size, f["pages"].elem_size), (8, 8, 8))
        self.assertEqual(s.size, 8)
        self.assertIs(s.variable_field, f["pages"])

    def test_verb_structs(self):
        p = frontend(HEAD + "verb V = 1 { paths direct; in handle<O> o; in u32 a; inout u32 b; out u32 c; }",
                     stage="layout")
        vin, vout = p.verbs["V"].in_struct, p.verbs["V"].out_struct
        self.assertEqual([(f.name, f.offset) for f in vin.fields], [("o", 0), ("a", 8), ("b", 12)])
        self.assertEqual((vin.size, vin.align64, vin.align32), (16, 8, 4))
        self.assertEqual([(f.name, f.offset) for f in vout.fields], [("b", 0), ("c", 4)])
        self.assertEqual(vout.size, 8)


class StructLayoutErrorTest(IdlTestCase):
    def test_32_64_interior_difference(self):
        self.assertIdlError(HEAD + "struct S {\n  u32 a;\n  u64 b;\n}",
                            "t.idl:7:7: error: field 'b' is at offset 4 in a 32-bit build and 8 in a 64-bit build",
                            stage="layout")

    def test_32_64_size_difference(self):
        self.assertIdlError(HEAD + "struct S { u64 a; u32 b; }",
                            "t.idl:5:8: error: struct 'S' is 12 bytes in a 32-bit build and 16 in a 64-bit build; "
                            "end it with explicit pad", stage="layout")

    def test_handle_after_u32(self):
        self.assertIdlError(HEAD + "struct S { u32 a; handle<O> h; }",
                            "t.idl:5:29: error: field 'h' is at offset 4 in a 32-bit build and 8 in a 64-bit build",
                            stage="layout")

    def test_implicit_padding(self):
        self.assertIdlError(HEAD + "struct S { u8 a; u32 b; }",
                            "t.idl:5:22: error: implicit padding of 3 bytes before field 'b'; declare it with pad",
                            stage="layout")

    def test_implicit_tail_padding(self):
        self.assertIdlError(HEAD + "struct S { u32 a; u8 b; }",
                            "t.idl:5:8: error: implicit padding of 3 bytes at the end of struct 'S'; declare it with pad",
                            stage="layout")

    def test_nested_struct_misaligned(self):
        self.assertIdlError(HEAD + "struct In { u64 v; }\nstruct S { u32 a; In i; }",
                            "t.idl:6:22: error: field 'i' is at offset 4 in a 32-bit build and 8 in a 64-bit build",
                            stage="layout")

    def test_variable_array_not_last(self):
        self.assertIdlError(HEAD + "struct S { u32 n; u32 a[] count(n) max(2); u32 b; }",
                            "t.idl:5:23: error: variable array 'a' must be the last field of struct 'S'",
                            stage="layout")

    def test_verb_struct_error_names_the_parameter(self):
        self.assertIdlError(HEAD + "verb V = 1 {\n paths direct;\n in u32 a;\n in uptr p;\n}",
                            "t.idl:8:10: error: field 'p' is at offset 4 in a 32-bit build and 8 in a 64-bit build",
                            stage="layout")

    def test_struct_containing_itself(self):
        self.assertIdlError(HEAD + "struct S { u32 a; S s; }", "t.idl:5:21: error: struct 'S' contains itself",
                            stage="layout")

    def test_empty_struct(self):
        self.assertIdlError(HEAD + "struct S { }", "t.idl:5:8: error: struct 'S' has no fields", stage="layout")


BIT_HEAD = "module t;\nenum E : u8 { A = 1, B = 7, }\n"


class BitLayoutTest(IdlTestCase):
    def test_valid_layout_passes(self):
        p = frontend(BIT_HEAD + "header H size 4 {\n A : 1 @ 0[7]; B : 3 @ 0[6]; C : 12 @ 0[3];\n"
                                " D : 3 @ 2 as E; reserved R : 5 @ 2[4]; Z : 8 @ 3; }", stage="layout")
        f = {x.name: x for x in p.layouts["H"].fields}
        self.assertEqual([f[n].bit_offset for n in "ABCDRZ"], [0, 1, 4, 16, 19, 24])
        self.assertEqual(f["C"].end_bit, 16)

    def test_repeat_interleaved(self):
        frontend(BIT_HEAD + "format F size 4 { X : 4 @ 0[7] repeat 4 stride 8; Y : 4 @ 0[3] repeat 4 stride 8; }",
                 stage="layout")

    def test_overlap(self):
        self.assertIdlError(BIT_HEAD + "format F size 4 {\n A : 8 @ 0;\n B : 4 @ 0[3];\n}",
                            "t.idl:5:2: error: field 'B' overlaps field 'A' at byte 0 bit 3", stage="layout")

    def test_overlap_of_repeat_elements(self):
        self.assertIdlError(BIT_HEAD + "format F size 8 {\n A : 8 @ 0 repeat 4;\n B : 8 @ 2;\n}",
                            "t.idl:5:2: error: field 'B' overlaps field 'A[2]' at byte 2 bit 7", stage="layout")

    def test_stride_smaller_than_width(self):
        self.assertIdlError(BIT_HEAD + "format F size 8 {\n A : 8 @ 0 repeat 4 stride 4;\n}",
                            "t.idl:4:2: error: field 'A' has stride 4, smaller than its width 8", stage="layout")

    def test_past_end(self):
        self.assertIdlError(BIT_HEAD + "format F size 4 {\n A : 16 @ 3;\n}",
                            "t.idl:4:2: error: field 'A' runs past the end of format 'F': it ends in byte 4, "
                            "but the size is 4 bytes", stage="layout")

    def test_repeat_past_end(self):
        self.assertIdlError(BIT_HEAD + "format F size 4 {\n A : 8 @ 0 repeat 5;\n}",
                            "t.idl:4:2: error: field 'A' runs past the end of format 'F': it ends in byte 4, "
                            "but the size is 4 bytes", stage="layout")

    def test_bit_out_of_range(self):
        self.assertIdlError(BIT_HEAD + "format F size 4 { A : 1 @ 0[8]; }",
                            "t.idl:3:29: error: bit position 8 of field 'A' is not in 0..7", stage="parse")

    def test_widths(self):
        cases = [
            ("A : 72 @ 0;", "field 'A' is 72 bits wide; a field wider than 64 bits needs 'as bytes', "
                            "'as string' or 'as gid'"),
            ("A : 64 @ 0 as gid;", "field 'A' is 'as gid' and must be 128 bits wide, not 64"),
            ("A : 12 @ 0 as bytes;", "field 'A' is 'as bytes' and its width 12 is not a multiple of 8"),
            ("A : 16 @ 0[3] as string;", "field 'A' is 'as string' and must start on a byte boundary"),
            ("A : 2 @ 0 as E;", "field 'A' is 2 bits wide but 'E.B' is 0x7"),
            ("A : 65 @ 0 as bool;", "field 'A' is 65 bits wide; 'as bool' allows at most 64"),
        ]
        for body, message in cases:
            with self.subTest(body=body):
                self.assertIdlError(BIT_HEAD + f"format F size 32 {{\n {body}\n}}", f"t.idl:4:2: error: {message}",
                                    stage="layout")


if __name__ == "__main__":
    unittest.main()
