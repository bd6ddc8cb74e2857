"""IDL errors: `file:line:col: error: message`, the source line and a caret.

Every stage collects its errors in an ErrorCollector and the driver writes
nothing when any stage reported one.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .model import Loc

# Source text of every file read, keyed by the name used in Loc.file, so an
# error can quote its line without re-reading the file.
_SOURCES: dict[str, list[str]] = {}


def register_source(name: str, text: str) -> None:
    _SOURCES[name] = text.split("\n")


def source_line(loc: Loc) -> Optional[str]:
    lines = _SOURCES.get(loc.file)
    if lines is None or not 1 <= loc.line <= len(lines):
        return None
    return lines[loc.line - 1].rstrip("\r")


class IdlError(Exception):
    """One located error."""

    def __init__(self, loc: Loc, message: str):
        super().__init__(f"{loc}: error: {message}")
        self.loc = loc
        self.message = message

    @property
    def headline(self) -> str:
        return f"{self.loc}: error: {self.message}"

    def format(self) -> str:
        line = source_line(self.loc)
        if line is None:
            return self.headline
        # Keep tabs so the caret lines up under the offending column.
        indent = "".join(c if c == "\t" else " " for c in line[: max(self.loc.col - 1, 0)])
        return f"{self.headline}\n{line}\n{indent}^"


class IdlErrors(Exception):
    """Raised when a stage ends with errors; carries all of them, in source order."""

    def __init__(self, errors: Iterable[IdlError]):
        self.errors = sorted(errors, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))
        super().__init__("\n".join(e.headline for e in self.errors))

    def format(self) -> str:
        return "\n".join(e.format() for e in self.errors)


class ErrorCollector:
    """Gathers errors so one run reports as many as it can find."""

    def __init__(self) -> None:
        self.errors: list[IdlError] = []
        self._seen: set[tuple] = set()

    def add(self, loc: Loc, message: str) -> None:
        key = (loc, message)
        if key not in self._seen:
            self._seen.add(key)
            self.errors.append(IdlError(loc, message))

    def extend(self, errors: Iterable[IdlError]) -> None:
        for e in errors:
            self.add(e.loc, e.message)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise IdlErrors(self.errors)
