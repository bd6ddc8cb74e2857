"""Tokens of the IDL (docs/idl.md, "Lexical structure")."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import IdlError, register_source
from .model import Loc

IDENT = "ident"
INT = "int"
STRING = "string"
PUNCT = "punct"
EOF = "eof"

PUNCTUATION = set("{}()[]<>;,=:@.*")


@dataclass
class Token:
    kind: str
    value: object  # str for ident/punct/string, int for int
    loc: Loc
    text: str  # the source spelling, for messages
    doc: str = ""  # `///` comment lines just before the token

    def is_punct(self, p: str) -> bool:
        return self.kind == PUNCT and self.value == p

    def is_word(self, w: str) -> bool:
        return self.kind == IDENT and self.value == w

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of file"
        if self.kind == STRING:
            return f"string {self.text}"
        if self.kind == INT:
            return f"integer {self.text}"
        return f"'{self.text}'"


def _ident_start(c: str) -> bool:
    return c.isascii() and (c.isalpha() or c == "_")


def _ident_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def tokenize(text: str, file: str) -> list[Token]:
    """Return the tokens of `text`, ending with an EOF token; raise IdlError on bad input."""
    register_source(file, text)
    tokens: list[Token] = []
    doc_lines: list[str] = []
    i, line, line_start, n = 0, 1, 0, len(text)

    def loc_at(pos: int) -> Loc:
        return Loc(file, line, pos - line_start + 1)

    while i < n:
        c = text[i]
        if c == "\n":
            i += 1
            line += 1
            line_start = i
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            comment = text[i:end]
            if comment.startswith("///") and not comment.startswith("////"):
                body = comment[3:].rstrip("\r")
                doc_lines.append(body[1:] if body.startswith(" ") else body)
            i = end
            continue
        if text.startswith("/*", i):
            start = loc_at(i)
            end = text.find("*/", i + 2)
            if end < 0:
                raise IdlError(start, "unterminated block comment")
            for j in range(i, end):
                if text[j] == "\n":
                    line += 1
                    line_start = j + 1
            i = end + 2
            continue

        start = i
        loc = loc_at(i)
        if _ident_start(c):
            while i < n and _ident_char(text[i]):
                i += 1
            word = text[start:i]
            tok = Token(IDENT, word, loc, word)
        elif c.isdigit():
            tok, i = _number(text, i, loc)
        elif c == '"':
            tok, i = _string(text, i, loc)
        elif text.startswith("->", i):
            i += 2
            tok = Token(PUNCT, "->", loc, "->")
        elif c in PUNCTUATION:
            i += 1
            tok = Token(PUNCT, c, loc, c)
        else:
            shown = c if c.isprintable() else f"\\x{ord(c):02x}"
            raise IdlError(loc, f"unexpected character '{shown}'")
        if doc_lines:
            tok.doc = "\n".join(doc_lines)
            doc_lines = []
        tokens.append(tok)

    # EOF sits just after the last character, on the last non-empty line, so its
    # caret shows something useful.
    if text.endswith("\n") and line > 1:
        last = text[:-1].rsplit("\n", 1)[-1]
        eof_loc = Loc(file, line - 1, len(last.rstrip("\r")) + 1)
    else:
        eof_loc = loc_at(n)
    tokens.append(Token(EOF, None, eof_loc, ""))
    return tokens


def _number(text: str, i: int, loc: Loc) -> tuple[Token, int]:
    start = i
    n = len(text)
    while i < n and _ident_char(text[i]):
        i += 1
    spelling = text[start:i]
    body = spelling.lower()
    base, digits = 10, body
    if body.startswith("0x"):
        base, digits = 16, body[2:]
    elif body.startswith("0b"):
        base, digits = 2, body[2:]
    allowed = {10: "0123456789", 16: "0123456789abcdef", 2: "01"}[base]
    ok = (
        digits != ""
        and not digits.startswith("_")
        and not digits.endswith("_")
        and "__" not in digits
        and all(ch in allowed or ch == "_" for ch in digits)
    )
    if not ok:
        raise IdlError(loc, f"malformed integer '{spelling}'")
    return Token(INT, int(digits.replace("_", ""), base), loc, spelling), i


_ESCAPES = {'"': '"', "\\": "\\"}


def _string(text: str, i: int, loc: Loc) -> tuple[Token, int]:
    start = i
    i += 1
    out = []
    n = len(text)
    while True:
        if i >= n or text[i] == "\n":
            raise IdlError(loc, "unterminated string")
        c = text[i]
        if c == '"':
            i += 1
            break
        if c == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt not in _ESCAPES:
                col = loc.col + (i - start)
                raise IdlError(Loc(loc.file, loc.line, col), f"unknown escape '\\{nxt}' in string")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return Token(STRING, "".join(out), loc, text[start:i]), i
