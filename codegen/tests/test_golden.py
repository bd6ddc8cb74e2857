"""Golden test: the fixture IDL, run through every real backend, matches golden/ byte for byte.

Refresh after an intended change of a backend or template:
    /usr/bin/python3 codegen/tests/update_goldens.py
"""

import contextlib
import io
import os
import shutil
import unittest

import softib_gen

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixture")
GOLDEN = os.path.join(HERE, "golden")


class GoldenTest(unittest.TestCase):
    @unittest.skipIf(shutil.which("clang-format") is None, "clang-format not installed")
    def test_fixture_output_matches_goldens(self):
        self.assertTrue(os.path.isdir(GOLDEN), "no goldens yet: run codegen/tests/update_goldens.py")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = softib_gen.main(["--idl", FIXTURE, "--out", GOLDEN, "--verify"])
        self.assertEqual(rc, 0, "generated output differs from codegen/tests/golden "
                                "(if intended, run codegen/tests/update_goldens.py):\n" + err.getvalue())


if __name__ == "__main__":
    unittest.main()
