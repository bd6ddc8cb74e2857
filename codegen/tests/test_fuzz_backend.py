"""The fuzz backend (softib_idl/backends/fuzz.py): the verb model rows, the statuses each
verb may return, the raw invokers, and one libFuzzer target per module with proxy verbs."""

import re
import unittest

from softib_idl import emit
from softib_idl.backends import fuzz

from .support import PRELUDE, frontend

VERBS = """\
module t;
statuses Status : u32 { SUCCESS = 0, INVALID_PARAMETER = 1, RESOURCE_BUSY = 2,
                        INVALID_CQ_HANDLE = 3, INVALID_AL_HANDLE = 4, PENDING = 5,
                        INSUFFICIENT_RESOURCES = 6, CANCELED = 7, }
object Al { implicit; }
object Cq { parent Al; }
enum Kind : u32 { A = 1, B = 4, }
flags Bits : u16 { X = 0x1, Y = 0x4, }
struct Elem { u32 v; reserved u32 r; }
const u32 MAX_ELEMS = 8;
verb CreateCq = 0x0100 {
    irql dispatch; sync; paths direct, irp, proxy; ioctl 0x900 access readwrite;
    returns SUCCESS, INSUFFICIENT_RESOURCES;
    in handle<Al> al;
    in Kind kind;
    in Bits bits;
    in pad u16 pad0;
    in u8 blob[16];
    in u32 num;
    in reserved u32 reserved0;
    in Elem elems[] count(num) max(MAX_ELEMS);
    out handle<Cq> cq new;
}
verb DestroyCq = 0x0101 {
    irql dispatch; async; paths direct, proxy; ioctl 0x901 access write;
    returns SUCCESS, RESOURCE_BUSY, CANCELED;
    in handle<Cq> cq destroy;
}
verb KernelOnly = 0x0102 {
    irql passive; sync; paths direct, irp; ioctl 0x902 access read;
    returns SUCCESS;
    in optional handle<Cq> cq;
}
verb PollCq = 0x0110 {
    irql dispatch; sync; paths speed;
    returns SUCCESS;
    in handle<Cq> cq;
}
"""


def render_files(text: str) -> dict:
    program = frontend(text)
    return fuzz.emit(program, emit.make_render())


class FuzzBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = render_files(VERBS)
        cls.model = cls.files["fuzz/verb_model.cc"]
        cls.flat = re.sub(r"\s+", " ", cls.model)  # before clang-format: compare flattened

    def row(self, verb: str) -> str:
        m = re.search(r"constexpr FieldInfo k%sFields\[\] = \{(.*?)\};" % verb, self.model, re.S)
        self.assertIsNotNone(m, verb)
        return m.group(1)

    def test_outputs(self):
        self.assertEqual(sorted(self.files), ["fuzz/proxy_model.cc", "fuzz/proxy_model.h",
                                              "fuzz/t_fuzz.cc", "fuzz/verb_model.cc",
                                              "fuzz/verb_model.h"])

    def test_fields_of_every_kind(self):
        row = self.row("CreateCq")
        self.assertIn('H(0, abi::ObjectType::Al, FieldAccess::kRead, false, "al")', row)
        self.assertIn('EN(8, 4, kValuesKind, "kind")', row)
        self.assertIn('FL(12, 2, 0x5u, "bits")', row)
        self.assertIn("R(14, 2)", row)
        self.assertIn('I(16, 16, "blob")', row)  # the byte array is one row
        self.assertIn('C(32, 4, "num")', row)
        self.assertIn("R(36, 4)", row)
        self.assertIn('I(0, 4, "v", true)', row)  # trailing element fields
        self.assertIn("R(4, 4, true)", row)
        self.assertIn("kValuesKindData[] = {1u, 4u}", self.model)

    def test_handle_access_and_optional(self):
        self.assertIn('H(0, abi::ObjectType::Cq, FieldAccess::kDestroy, false, "cq")',
                      self.row("DestroyCq"))
        self.assertIn('H(0, abi::ObjectType::Cq, FieldAccess::kRead, true, "cq")',
                      self.row("KernelOnly"))

    def test_statuses_add_invalid_parameter_and_handle_statuses(self):
        m = re.search(r"kCreateCqStatuses\[\] = \{(.*?)\};", self.model, re.S)
        names = re.findall(r"Status::(\w+)", m.group(1))
        self.assertEqual(names, ["SUCCESS", "INSUFFICIENT_RESOURCES", "INVALID_PARAMETER",
                                 "INVALID_AL_HANDLE"])

    def test_speed_verbs_are_left_out(self):
        self.assertNotIn("PollCq", self.model)
        self.assertNotIn("PollCq", self.files["fuzz/proxy_model.cc"])

    def test_invokers_follow_the_paths(self):
        self.assertIn("kernel::IbCreateCq(al, in, std::span<const abi::Elem>(elems), out, irp)",
                      self.model)
        self.assertIn("kernel::BuildCreateCqIrp(", self.model)
        self.assertNotIn("BuildDestroyCqIrp", self.model)  # no irp path
        self.assertIn("&DirectDestroyCq, nullptr}", self.flat)
        proxy = self.files["fuzz/proxy_model.cc"]
        self.assertIn("user::proxy::DestroyCqAsync(device, in, overlapped)", proxy)
        self.assertNotIn("KernelOnly", proxy)

    def test_module_target_lists_its_proxy_verbs(self):
        target = self.files["fuzz/t_fuzz.cc"]
        self.assertIn("LLVMFuzzerTestOneInput", target)
        self.assertIn('FuzzVerbs("t", kOrdinals, data, size)', target)
        self.assertEqual(re.findall(r"(0x[0-9A-F]{4}),  // (\w+)", target),
                         [("0x0100", "CreateCq"), ("0x0101", "DestroyCq")])

    def test_creates_and_destroys(self):
        self.assertIn('{"CreateCq", "t", 0x0100, abi::kIoctlCreateCq, abi::kPathDirect | abi::kPathIrp'
                      ' | abi::kPathProxy, true, false, 40, 8, 8, 8, 32, 4, 0, 0, kCreateCqFields,'
                      ' kCreateCqStatuses, true, abi::ObjectType::Cq, 0, false, abi::ObjectType{},'
                      ' &DirectCreateCq, &BuildCreateCq}', self.flat)
        self.assertIn("kDestroyCqStatuses, false, abi::ObjectType{}, 0, true, abi::ObjectType::Cq,",
                      self.flat)

    def test_no_verbs_no_files(self):
        self.assertEqual(render_files(PRELUDE), {})

    def test_registered(self):
        from softib_idl import backends
        self.assertIn(fuzz, backends.BACKENDS)


if __name__ == "__main__":
    unittest.main()
