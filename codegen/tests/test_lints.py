import os
import tempfile
import unittest

from softib_idl import lints
from softib_idl.errors import IdlError

from .support import PRELUDE, IdlTestCase, frontend

OBJECTS = PRELUDE + """\
object Cq { parent Al; }
verb CreateCq = 0x10 { paths direct, proxy; ioctl 0x810; out handle<Cq> cq new; }
verb DestroyCq = 0x11 { paths direct; in handle<Cq> cq destroy; }
"""  # snippets appended start on line 8


class LintTest(IdlTestCase):
    def test_creator_and_destroyer_are_recorded(self):
        p = frontend(OBJECTS)
        cq = p.objects["Cq"]
        self.assertIs(cq.creator, p.verbs["CreateCq"])
        self.assertIs(cq.destroyer, p.verbs["DestroyCq"])
        self.assertIsNone(p.objects["Al"].creator)  # implicit: none needed

    def test_missing_creator(self):
        self.assertIdlError(PRELUDE + "object Pd { parent Al; }\nverb D = 1 { paths direct; in handle<Pd> p destroy; }",
                            "t.idl:5:8: error: object 'Pd' has no creating verb (a handle<Pd> parameter with access "
                            "'new'); mark it implicit if the runtime manages it")

    def test_two_new_parameters(self):
        self.assertIdlError(OBJECTS + "object Pd { parent Al; }\n"
                                      "verb X = 0x12 { paths direct; out handle<Pd> a new; out handle<Pd> b new; }",
                            "t.idl:9:70: error: verb 'X' has two 'new' parameters: 'a' and 'b'")

    def test_proxy_needs_ioctl(self):
        self.assertIdlError(OBJECTS + "verb Q = 0x12 { paths direct, proxy; }",
                            "t.idl:8:17: error: verb 'Q' has the proxy path but no 'ioctl' clause")

    def test_speed_has_no_ioctl(self):
        self.assertIdlError(OBJECTS + "verb Poll = 0x12 { paths speed; ioctl 0x900; }",
                            "t.idl:8:39: error: speed-path verb 'Poll' never crosses the IOCTL channel; remove its "
                            "'ioctl' clause")

    def test_speed_alone(self):
        self.assertIdlError(OBJECTS + "verb Poll = 0x12 { paths speed, direct; }",
                            "t.idl:8:20: error: verb 'Poll': 'speed' cannot be combined with other paths")

    def test_paths_required(self):
        self.assertIdlError(OBJECTS + "verb Q = 0x12 { sync; }", "t.idl:8:6: error: verb 'Q' has no 'paths' clause")

    def test_ioctl_function_range(self):
        self.assertIdlError(OBJECTS + "verb Q = 0x12 { paths proxy; ioctl 0x1000; }",
                            "t.idl:8:36: error: ioctl function code 0x1000 of verb 'Q' does not fit in 12 bits")

    def test_returns_needs_statuses(self):
        self.assertIdlError("module t;\nverb Q = 1 { paths direct; returns SUCCESS; }",
                            "t.idl:2:36: error: verb 'Q' returns 'SUCCESS' but there is no statuses declaration")

    def test_reserved_handle(self):
        self.assertIdlError(OBJECTS + "verb Q = 0x12 { paths direct; in reserved handle<Cq> c; }",
                            "t.idl:8:54: error: reserved parameter 'c' cannot be a handle")

    def test_duplicate_struct_field(self):
        self.assertIdlError(PRELUDE + "struct S { u32 a; u32 a; }", "t.idl:5:23: error: duplicate field 'a' in struct 'S'")

    def test_duplicate_bit_field(self):
        self.assertIdlError(PRELUDE + "format F size 2 { A : 8 @ 0; A : 8 @ 1; }",
                            "t.idl:5:30: error: duplicate field 'A' in format 'F'")

    def test_component_only_in_attributes(self):
        self.assertIdlError(PRELUDE + "format F size 2 { A : 8 @ 0 component 1; }",
                            "t.idl:5:19: error: field 'A': 'component' is only for SA attributes")

    def test_attribute_id_unique_per_class(self):
        self.assertIdlError(PRELUDE + "mad_class C = 1 { version 1; methods Get = 1; }\n"
                                      "attribute A = 0x11 in C size 1 { X : 8 @ 0; }\n"
                                      "attribute B = 0x11 in C size 1 { X : 8 @ 0; }",
                            "t.idl:7:11: error: attribute 'B' has ID 0x0011, already used by 'A' in class 'C'")

    def test_mad_class_code_unique(self):
        self.assertIdlError(PRELUDE + "mad_class C = 1 { version 1; }\nmad_class D = 1 { version 1; }",
                            "t.idl:6:11: error: mad_class 'D' has code 0x01, already used by 'C'")


QP = PRELUDE + """\
enum QpState : u8 { RESET = 0, INIT = 1, RTR = 2, }
enum QpType : u8 { RC = 0, UD = 3, }
flags QpAttrMask : u32 { PORT = 1, PKEY = 2, QKEY = 4, }
"""  # snippets appended start on line 8


class QpStateMachineLintTest(IdlTestCase):
    def test_valid(self):
        p = frontend(QP + "qp_state_machine QpState by QpType with QpAttrMask {\n"
                          "  transition RESET -> INIT for RC, UD { required PORT, PKEY; optional QKEY; }\n"
                          "  transition * -> RESET for *;\n}")
        self.assertEqual(len(p.qp_state_machine.transitions), 2)

    def test_unknown_names(self):
        base = QP + "qp_state_machine QpState by QpType with QpAttrMask {\n  transition "
        self.assertIdlError(base + "RESET -> INIT for XRC;\n}",
                            "t.idl:9:32: error: qp_state_machine: 'XRC' is not a QP type of 'QpType'")
        self.assertIdlError(base + "BAD -> INIT for RC;\n}",
                            "t.idl:9:14: error: qp_state_machine: 'BAD' is not a state of 'QpState'")
        self.assertIdlError(base + "RESET -> INIT for RC { required SL; }\n}",
                            "t.idl:9:46: error: qp_state_machine: 'SL' is not a mask bit of 'QpAttrMask'")
        self.assertIdlError(base + "RESET -> INIT for RC { required PORT; optional PORT; }\n}",
                            "t.idl:9:46: error: qp_state_machine: 'PORT' is both required and optional")

    def test_unknown_enums(self):
        self.assertIdlError(QP + "qp_state_machine State by QpType with QpAttrMask { }",
                            "t.idl:8:18: error: qp_state_machine: unknown state enum 'State'")
        self.assertIdlError(QP + "qp_state_machine QpState by QpType with Mask { }",
                            "t.idl:8:41: error: qp_state_machine: unknown attribute mask flags 'Mask'")

    def test_duplicate_transition(self):
        self.assertIdlError(QP + "qp_state_machine QpState by QpType with QpAttrMask {\n"
                                 "  transition RESET -> INIT for RC;\n  transition RESET -> INIT for UD, RC;\n}",
                            "t.idl:10:3: error: qp_state_machine: transition RESET -> INIT for RC is declared twice")


class LockTest(IdlTestCase):
    def test_round_trip(self):
        text = lints.format_lock({"B": 0x20, "A": 0x10})
        self.assertTrue(text.endswith("A 0x0010\nB 0x0020\n"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ordinals.lock")
            with open(path, "w") as f:
                f.write(text + "# a comment\n\nC 0x30  # trailing\n")
            ordinals, _ = lints.read_lock(path)
        self.assertEqual(ordinals, {"A": 0x10, "B": 0x20, "C": 0x30})

    def test_missing_file_is_empty(self):
        self.assertEqual(lints.read_lock("/nonexistent/ordinals.lock"), ({}, {}))

    def test_malformed_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ordinals.lock")
            with open(path, "w") as f:
                f.write("A 0x10\nB\n")
            with self.assertRaises(IdlError) as cm:
                lints.read_lock(path, "ordinals.lock")
        self.assertEqual(cm.exception.headline,
                         "ordinals.lock:2:1: error: malformed ordinals.lock line 'B' (expected 'Name 0xORDINAL')")

    def test_new_verbs_are_fine(self):
        frontend(PRELUDE + "verb A = 1 { paths direct; }\nverb B = 2 { paths direct; }", lock={"A": 1})


if __name__ == "__main__":
    unittest.main()


HCA = """\
// A four-line prelude: snippets appended to it start on line 5.
module t;
statuses Status : u32 { SUCCESS = 0, INVALID_PARAMETER = 1, BUSY = 2, INVALID_PERMISSION = 3, }
target hca;
"""


class HcaTargetLintTest(IdlTestCase):
    def test_a_valid_hca_verb(self):
        p = frontend(HCA + "verb V = 1 { irql dispatch; async; paths irp; ioctl 0x900; in u32 pd; out u32 key; }")
        self.assertEqual(p.module_target("t"), "hca")

    def test_irp_path_only(self):
        self.assertIdlError(HCA + "verb V = 1 { async; paths irp, proxy; ioctl 0x900; in u32 pd; }",
                            "t.idl:5:21: error: verb 'V' of a 'target hca' module has only the irp path (paths irp;)")

    def test_needs_ioctl(self):
        self.assertIdlError(HCA + "verb V = 1 { async; paths irp; in u32 pd; }",
                            "t.idl:5:6: error: verb 'V' of a 'target hca' module needs an 'ioctl' clause (its IRP "
                            "carries the code)")

    def test_must_be_async(self):
        self.assertIdlError(HCA + "verb V = 1 { sync; paths irp; ioctl 0x900; in u32 pd; }",
                            "t.idl:5:6: error: verb 'V' of a 'target hca' module must be async: the HCA driver may "
                            "pend any of them")

    def test_no_handles(self):
        self.assertIdlError(HCA + "object Al { implicit; }\n"
                                  "verb V = 1 { async; paths irp; ioctl 0x900; in handle<Al> al; }",
                            "t.idl:6:59: error: verb 'V' of a 'target hca' module: parameter 'al' is a handle; "
                            "objects of the HCA are CA-local numbers (u32)")


DEVICE = """\
// A four-line prelude: snippets appended to it start on line 5.
module t;
statuses Status : u32 { SUCCESS = 0, INVALID_PARAMETER = 1, PENDING = 2, INVALID_PERMISSION = 3, }
target device;
"""


class DeviceTargetLintTest(IdlTestCase):
    def test_a_valid_device_verb(self):
        p = frontend(DEVICE + "verb V = 1 { irql dispatch; sync; paths irp, proxy; ioctl 0x900; in u32 a; out u32 b; }")
        self.assertEqual(p.module_target("t"), "device")

    def test_async_is_allowed(self):
        frontend(DEVICE + "verb V = 1 { async; paths proxy, irp; ioctl 0x900; returns PENDING; in u32 a; }")

    def test_irp_and_proxy_paths(self):
        self.assertIdlError(DEVICE + "verb V = 1 { sync; paths proxy; ioctl 0x900; in u32 a; }",
                            "t.idl:5:20: error: verb 'V' of a 'target device' module has the irp and proxy paths "
                            "(paths irp, proxy;)")
        self.assertIdlError(DEVICE + "verb V = 1 { sync; paths irp, direct; ioctl 0x900; in u32 a; }",
                            "t.idl:5:20: error: verb 'V' of a 'target device' module has the irp and proxy paths "
                            "(paths irp, proxy;)")

    def test_needs_ioctl(self):
        self.assertIdlError(DEVICE + "verb V = 1 { sync; paths irp; in u32 a; }",
                            "t.idl:5:6: error: verb 'V' of a 'target device' module needs an 'ioctl' clause")

    def test_sync_never_returns_pending(self):
        self.assertIdlError(DEVICE + "verb V = 1 { sync; paths irp, proxy; ioctl 0x900; returns SUCCESS, PENDING; }",
                            "t.idl:5:68: error: verb 'V' of a 'target device' module is sync: its IRP is completed "
                            "with what the handler returns, and never with PENDING; return another status for "
                            "'not yet' (NOT_DONE)")

    def test_no_handles(self):
        self.assertIdlError(DEVICE + "object Al { implicit; }\n"
                                     "verb V = 1 { sync; paths irp, proxy; ioctl 0x900; in handle<Al> al; }",
                            "t.idl:6:65: error: verb 'V' of a 'target device' module: parameter 'al' is a handle; "
                            "a driver's device resolves no per-file handles")
