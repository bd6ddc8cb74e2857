"""The softib IDL frontend: lexer -> parser -> model -> layout -> lints (docs/idl.md).

load_program() is the one call other tools need; codegen/softib_gen.py adds the
backends, clang-format and the generated tree.
"""

from __future__ import annotations

from typing import Optional


def load_program(idl_dir: str, root: Optional[str] = None, lock: Optional[dict[str, int]] = None):
    """Parse every *.idl under `idl_dir`, lay it out and lint it; raise errors.IdlErrors."""
    from . import layout, lints, parser

    program = parser.parse_dir(idl_dir, root)
    layout.compute(program)
    lints.check(program, lock)
    return program
