"""The `public` clause of objects: parsing, resolution (lints) and the object API backend."""

import unittest

from softib_idl.backends import objects

from .support import IdlTestCase, frontend

# Line 5 onwards.
BASE = """\
// The prelude of support.py, with the statuses the object API needs.
module t;
statuses Status : u32 { SUCCESS = 0, INVALID_PARAMETER = 1, PENDING = 2, INSUFFICIENT_RESOURCES = 3, INVALID_HANDLE = 4 }
object Al { implicit; }
struct Params { u32 depth; u32 kind; }
object Ca { parent Al; public guid = ca_guid, ports; }
object Cq { parent Ca; public size = actual_size, depth = params.depth, context; }
verb OpenCa = 0x10 { paths direct; in handle<Al> al; in u64 ca_guid; out handle<Ca> ca new; }
verb QueryCa = 0x11 { paths direct; in handle<Ca> ca; out u32 ports; out pad u32 pad0; }
verb CloseCa = 0x12 { paths direct; in handle<Ca> ca destroy; }
verb CreateCq = 0x20 { paths direct; in handle<Ca> ca; in Params params; in optional uptr context;
                       out handle<Cq> cq new; out u32 actual_size; out pad u32 pad0; }
verb ResizeCq = 0x21 { paths direct; in handle<Cq> cq; inout u32 size; in reserved u32 r0; }
verb DestroyCq = 0x22 { paths direct; in handle<Cq> cq destroy; }
verb PollCq = 0x23 { paths speed; in handle<Cq> cq; }
"""


class PublicTest(IdlTestCase):
    def test_fields_resolve_to_creator_outputs_inputs_and_query(self):
        p = frontend(BASE)
        cq = p.objects["Cq"]
        self.assertEqual([f.name for f in cq.public], ["size", "depth", "context"])
        self.assertEqual([(f.origin, f.path) for f in cq.public],
                         [("out", "actual_size"), ("in", "params.depth"), ("in", "context")])
        self.assertEqual(cq.public[1].leaf.name, "depth")
        ca = p.objects["Ca"]
        self.assertEqual([(f.origin, f.verb.name) for f in ca.public], [("in", "OpenCa"), ("query", "QueryCa")])
        self.assertIsNone(p.objects["Al"].public)

    def test_unknown_source(self):
        self.assertIdlError(BASE.replace("public guid = ca_guid, ports;", "public guid = nothing;"),
                            "t.idl:6:31: error: public field 'guid' of object 'Ca': 'nothing' is no parameter "
                            "of 'OpenCa' nor an output of 'QueryCa'")

    def test_path_into_a_scalar(self):
        self.assertIdlError(BASE.replace("depth = params.depth", "depth = actual_size.x"),
                            "t.idl:7:51: error: public field 'depth' of object 'Cq': 'actual_size.x' goes into "
                            "something that is not a struct")

    def test_reserved_name_and_duplicate(self):
        self.assertIdlError(BASE.replace("public size = actual_size,", "public handle = actual_size,"),
                            "t.idl:7:31: error: public field 'handle' of object 'Cq' is a name the generator uses "
                            "itself (al, ca, handle)")
        self.assertIdlError(BASE.replace("depth = params.depth", "size = params.depth"),
                            "t.idl:7:51: error: object 'Cq' names public field 'size' twice")

    def test_handle_must_point_to_a_public_object(self):
        src = BASE + "object Qp { parent Cq; public cq2; }\n" \
                     "verb CreateQp = 0x30 { paths direct; in handle<Cq> cq; in handle<Ca> cq2; out handle<Qp> qp new; }\n" \
                     "verb DestroyQp = 0x31 { paths direct; in handle<Qp> qp destroy; }\n"
        frontend(src)  # Ca is public: fine
        self.assertIdlError(src.replace("in handle<Ca> cq2", "in handle<Al> cq2"),
                            "t.idl:16:31: error: public field 'cq2' of object 'Qp': handle<Al> names an object "
                            "without public fields")

    def test_parent_without_public(self):
        self.assertIdlError(BASE.replace("public guid = ca_guid, ports;", ""),
                            "t.idl:7:24: error: object 'Cq' has public fields but its parent 'Ca' has none")

    def test_second_public_clause(self):
        self.assertIdlError(BASE.replace("public guid = ca_guid, ports;", "public guid = ca_guid; public ports;"),
                            "t.idl:6:47: error: object 'Ca' has a second 'public' clause")

    def test_control_verbs_of_an_object(self):
        p = frontend(BASE)
        names = {v.name: (o.name if o else None) for v in p.verbs.values()
                 for o in [objects.object_of(p, v)]}
        self.assertEqual(names, {"OpenCa": "Ca", "QueryCa": "Ca", "CloseCa": "Ca", "CreateCq": "Cq",
                                 "ResizeCq": "Cq", "DestroyCq": "Cq", "PollCq": None})
        self.assertEqual(objects.struct_name(p.objects["Cq"]), "IB_CQ")
        view = objects.verb_view(p, p.verbs["ResizeCq"], p.objects["Cq"])
        self.assertEqual(view["refresh"], ["object->size = out.size;"])
        self.assertTrue(view["takes_in"])
        create = objects.verb_view(p, p.verbs["CreateCq"], p.objects["Cq"])
        self.assertEqual(create["done"], ["object->handle = out.cq.value;", "object->size = out.actual_size;",
                                          "object->depth = in.params.depth;", "object->context = in.context;"])
        self.assertEqual([f["name"] for f in objects.create_fields(p.objects["Cq"])], ["params", "context"])


if __name__ == "__main__":
    unittest.main()
