#!/usr/bin/python3
"""Unit tests of scripts/check_layers.py on tiny fake trees (ctest `layers.check_test`).

Each test writes a tree in a temporary directory (a layer table, a few sources and CMake
files), runs the check on it as a program (python3 check_layers.py --root TREE) and asserts
its exit code and the exact violation lines. Python 3 standard library only.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "check_layers.py"

TABLE = """\
[levels]
base:  lib/base
mid:   lib/mid lib/peer
node:  lib/root
top:   app
tests: tests
[parts]
gen/base lib/base
[targets]
gen_target lib/base
[tests]
tests
[fixtures]
lib/root
[outside]
docs cmake
"""

# A clean tree: app -> mid -> base by includes and links; mid's tests use the fixture
# lib/root (above mid) and the peer; the top tests use everything; a generated part of base.
CLEAN = {
    "docs/layers.txt": TABLE,
    "CMakeLists.txt": "add_subdirectory(lib/base)\ninclude(cmake/Gen.cmake)\n",
    "cmake/Gen.cmake": "add_library(gen_target STATIC ${GEN_SOURCES})\n",
    "gen/base/gen.h": "#pragma once\n",
    "lib/base/CMakeLists.txt": textwrap.dedent("""\
        add_library(base STATIC src/base.cc)
        target_include_directories(base PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
                                           ${PROJECT_SOURCE_DIR}/gen)
        target_link_libraries(base PUBLIC gen_target Threads::Threads)
        """),
    "lib/base/include/softib/base/base.h": '#pragma once\n#include "base/gen.h"\n',
    "lib/base/src/base.cc": '#include "softib/base/base.h"\n#include <vector>\n',
    "lib/mid/CMakeLists.txt": textwrap.dedent("""\
        add_library(mid STATIC src/mid.cc)
        target_include_directories(mid PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
        target_link_libraries(mid PUBLIC base)  # a comment (with parentheses)
        add_executable(mid_tests tests/mid_test.cc)
        target_link_libraries(mid_tests PRIVATE mid root peer GTest::gtest_main)
        """),
    "lib/mid/include/softib/mid/mid.h": '#pragma once\n#include "softib/base/base.h"\n',
    "lib/mid/src/mid.cc": '#include "softib/mid/mid.h"\n#include "../src/local.h"\n',
    "lib/mid/src/local.h": "#pragma once\n",
    "lib/mid/tests/mid_test.cc":
        '#include "softib/mid/mid.h"\n#include "softib/root/root.h"\n#include "softib/peer/peer.h"\n',
    "lib/peer/CMakeLists.txt": textwrap.dedent("""\
        add_library(peer STATIC peer.cc)
        target_include_directories(peer PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
        """),
    "lib/peer/include/softib/peer/peer.h": "#pragma once\n",
    "lib/peer/peer.cc": '#include "softib/peer/peer.h"\n',
    "lib/root/CMakeLists.txt": textwrap.dedent("""\
        add_library(root STATIC root.cc)
        target_include_directories(root PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
        target_link_libraries(root PUBLIC mid peer)
        """),
    "lib/root/include/softib/root/root.h": '#pragma once\n#include "softib/mid/mid.h"\n',
    "lib/root/root.cc": '#include "softib/root/root.h"\n#include "softib/peer/peer.h"\n',
    "app/CMakeLists.txt": "add_executable(app main.cc)\ntarget_link_libraries(app PRIVATE root)\n",
    "app/main.cc": '/* #include "softib/nowhere.h" */\n#include "softib/root/root.h"\n',
    "tests/CMakeLists.txt": "add_executable(all_tests all.cc)\ntarget_link_libraries(all_tests app)\n",
    "tests/all.cc": '#include "softib/root/root.h"\n#include "softib/base/base.h"\n',
    "build/x/generated.cc": '#include "softib/root/root.h"\n',  # build trees are skipped
}


def run(files):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                              capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout.splitlines(), proc.stderr


class CheckLayersTest(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, out, err = run(CLEAN)
        self.assertEqual(rc, 0, out + [err])
        self.assertEqual(len(out), 1)
        # Includes: gen.h, base.h (x3), mid.h (x3), local.h, root.h (x4), peer.h (x3); the
        # commented-out one, <vector> and the build tree's are not counted. Links:
        # base->gen_target, mid->base, mid_tests->mid/root/peer, root->mid/peer, app->root,
        # all_tests->app (Threads:: and GTest:: are not targets of the tree).
        self.assertEqual(out[0], "check_layers: 15 includes and 9 links of 8 targets "
                                 "call only down")

    def test_a_source_resolves_through_its_targets_directories(self):
        # "same.h" exists in app/ (whose directory the union lists first) and in lib/base:
        # mid.cc is compiled by `mid`, which links `base`, so it is base's — no violation.
        files = dict(CLEAN)
        files["app/CMakeLists.txt"] += \
            "target_include_directories(app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/inc)\n"
        files["app/inc/same.h"] = "#pragma once\n"
        files["lib/base/include/same.h"] = "#pragma once\n"
        files["lib/mid/src/mid.cc"] += '#include "same.h"\n'
        rc, out, err = run(files)
        self.assertEqual(rc, 0, out + [err])
        # A header is compiled with its folder's targets' directories: base's copy too.
        files["lib/mid/include/softib/mid/mid.h"] += '#include "same.h"\n'
        rc, out, err = run(files)
        self.assertEqual(rc, 0, out + [err])
        # Without the link, mid.cc finds app's copy through the tree's directories.
        files["lib/mid/CMakeLists.txt"] = files["lib/mid/CMakeLists.txt"].replace(
            "target_link_libraries(mid PUBLIC base)", "")
        files["lib/mid/include/softib/mid/mid.h"] = "#pragma once\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            'lib/mid/src/mid.cc:3: includes "same.h" (app/inc/same.h): '
            "lib/mid [mid] -> app [top]: a lower layer reaches a higher one"])

    def test_include_up_fails(self):
        files = dict(CLEAN)
        files["lib/base/src/base.cc"] = ('#include "softib/base/base.h"\n'
                                         '\n#include "softib/mid/mid.h"\n')
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            'lib/base/src/base.cc:3: includes "softib/mid/mid.h" '
            "(lib/mid/include/softib/mid/mid.h): lib/base [base] -> lib/mid [mid]: "
            "a lower layer reaches a higher one"])

    def test_link_up_fails(self):
        files = dict(CLEAN)
        files["lib/base/CMakeLists.txt"] = CLEAN["lib/base/CMakeLists.txt"] + \
            "target_link_libraries(base\n  PRIVATE mid)\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            "lib/base/CMakeLists.txt:5: base links mid: lib/base [base] -> lib/mid [mid]: "
            "a lower layer reaches a higher one"])

    def test_unknown_folder_fails(self):
        files = dict(CLEAN)
        files["extra/thing/src/x.cc"] = '#include "softib/base/base.h"\n'
        files["extra/thing/src/y.cc"] = "int y;\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            "extra/thing/src/x.cc:1: extra/thing is a folder that docs/layers.txt does not name"])

    def test_target_outside_the_layers_fails(self):
        files = dict(CLEAN)
        files["cmake/Gen.cmake"] += "add_library(stray INTERFACE)\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            "cmake/Gen.cmake:2: target stray is defined outside the layers: give its folder "
            "in docs/layers.txt [targets]"])

    def test_peers_never_use_each_other(self):
        files = dict(CLEAN)
        files["lib/peer/peer.cc"] += '#include "softib/mid/mid.h"\n'
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            'lib/peer/peer.cc:2: includes "softib/mid/mid.h" (lib/mid/include/softib/mid/mid.h): '
            "lib/peer [mid] -> lib/mid [mid]: a layer reaches its peer"])

    def test_production_never_uses_test_code(self):
        files = dict(CLEAN)
        files["lib/mid/tests/fixture.h"] = "#pragma once\n"
        files["lib/mid/src/mid.cc"] += '#include "lib/mid/tests/fixture.h"\n'
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            'lib/mid/src/mid.cc:3: includes "lib/mid/tests/fixture.h" (lib/mid/tests/fixture.h): '
            "lib/mid [mid] -> lib/mid (test) [mid]: production code reaches test code"])

    def test_a_test_reaches_no_higher_than_its_fixtures(self):
        files = dict(CLEAN)
        files["lib/mid/tests/mid_test.cc"] += '#include "app/main.cc"\n'
        files["lib/mid/CMakeLists.txt"] += "target_link_libraries(mid_tests PRIVATE app)\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            'lib/mid/tests/mid_test.cc:4: includes "app/main.cc" (app/main.cc): '
            "lib/mid (test) [mid] -> app [top]: a test reaches above the layer it tests",
            "lib/mid/CMakeLists.txt:6: mid_tests links app: lib/mid (test) [mid] -> app [top]: "
            "a test reaches above the layer it tests"])

    def test_a_gtest_target_is_test_code(self):
        # A target that links GoogleTest is test code even when its sources are not in tests/.
        files = dict(CLEAN)
        files["lib/base/CMakeLists.txt"] += textwrap.dedent("""\
            add_library(base_support STATIC src/support.cc)
            target_link_libraries(base_support PUBLIC GTest::gtest)
            target_link_libraries(base PRIVATE base_support)
            """)
        files["lib/base/src/support.cc"] = "int s;\n"
        rc, out, _ = run(files)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [
            "lib/base/CMakeLists.txt:7: base links base_support: lib/base [base] -> "
            "lib/base (test) [base]: production code reaches test code"])


if __name__ == "__main__":
    unittest.main()
