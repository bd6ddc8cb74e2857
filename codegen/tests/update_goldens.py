#!/usr/bin/python3
"""Regenerate codegen/tests/golden/ from codegen/tests/fixture/ with every real backend.

Run after an intended change of a backend or template, review the diff, commit it:
    /usr/bin/python3 codegen/tests/update_goldens.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import softib_gen  # noqa: E402

if __name__ == "__main__":
    sys.exit(softib_gen.main(["--idl", os.path.join(HERE, "fixture"), "--out", os.path.join(HERE, "golden")]))
