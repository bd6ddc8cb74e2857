"""Helpers shared by the generator tests."""

from __future__ import annotations

import unittest
from typing import Optional

from softib_idl import layout, lints, parser
from softib_idl.errors import IdlErrors

# A minimal valid preamble that most snippets build on.
PRELUDE = """\
// A four-line prelude: snippets appended to it start on line 5.
module t;
statuses Status : u32 { SUCCESS = 0, INVALID_PARAMETER = 1, BUSY = 2, }
object Al { implicit; }
"""


def frontend(files: dict[str, str] | str, lock: Optional[dict[str, int]] = None, stage: str = "lints"):
    """Parse (and lay out, and lint) in-memory files; a str is one file named t.idl."""
    if isinstance(files, str):
        files = {"t.idl": files}
    program = parser.parse_sources(files)
    if stage in ("layout", "lints"):
        layout.compute(program)
    if stage == "lints":
        lints.check(program, lock)
    return program


class IdlTestCase(unittest.TestCase):
    def assertIdlError(self, files, expected: str, lock=None, stage: str = "lints") -> IdlErrors:
        """`expected` is the full headline `file:line:col: error: message` of the first error."""
        with self.assertRaises(IdlErrors) as cm:
            frontend(files, lock=lock, stage=stage)
        headlines = [e.headline for e in cm.exception.errors]
        self.assertIn(expected, headlines, "\n".join(headlines))
        return cm.exception
