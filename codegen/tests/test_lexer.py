import unittest

from softib_idl.errors import IdlError
from softib_idl.lexer import EOF, IDENT, INT, PUNCT, STRING, tokenize


def kinds(text):
    return [(t.kind, t.value) for t in tokenize(text, "x.idl")[:-1]]


class LexerTest(unittest.TestCase):
    def test_identifiers_and_punctuation(self):
        self.assertEqual(
            kinds("a_1 { } ( ) [ ] < > ; , = : @ . -> *"),
            [(IDENT, "a_1")] + [(PUNCT, p) for p in "{ } ( ) [ ] < > ; , = : @ . -> *".split()],
        )

    def test_arrow_is_one_token(self):
        self.assertEqual(kinds("RESET->INIT"), [(IDENT, "RESET"), (PUNCT, "->"), (IDENT, "INIT")])

    def test_integers(self):
        self.assertEqual(
            kinds("0 42 0x1F 0XfF 0b101 1_000 0xdead_beef 0b1111_0000"),
            [(INT, v) for v in (0, 42, 31, 255, 5, 1000, 0xDEADBEEF, 0xF0)],
        )

    def test_integer_keeps_its_spelling(self):
        tok = tokenize("0x00_30", "x.idl")[0]
        self.assertEqual((tok.value, tok.text), (0x30, "0x00_30"))

    def test_strings_and_escapes(self):
        self.assertEqual(kinds(r'"a b" "q\"x" "back\\slash"'),
                         [(STRING, "a b"), (STRING, 'q"x'), (STRING, "back\\slash")])

    def test_comments_are_skipped_and_lines_counted(self):
        toks = tokenize("a // one\n/* two\nthree */ b\n  c", "x.idl")
        self.assertEqual([(t.value, t.loc.line, t.loc.col) for t in toks[:-1]],
                         [("a", 1, 1), ("b", 3, 10), ("c", 4, 3)])

    def test_doc_comments_attach_to_next_token(self):
        toks = tokenize("/// First line.\n///  Indented.\n// plain\nenum X\n//// not doc\ny", "x.idl")
        self.assertEqual(toks[0].doc, "First line.\n Indented.")
        self.assertEqual(toks[1].doc, "")
        self.assertEqual(toks[2].doc, "")

    def test_eof_location_is_after_last_character(self):
        toks = tokenize("a\nbc\n", "x.idl")
        self.assertEqual(toks[-1].kind, EOF)
        self.assertEqual((toks[-1].loc.line, toks[-1].loc.col), (2, 3))

    def test_locations(self):
        toks = tokenize("module m;\n\tverb", "dir/f.idl")
        self.assertEqual(str(toks[0].loc), "dir/f.idl:1:1")
        self.assertEqual(str(toks[3].loc), "dir/f.idl:2:2")


class LexerErrorTest(unittest.TestCase):
    def error(self, text):
        with self.assertRaises(IdlError) as cm:
            tokenize(text, "x.idl")
        return cm.exception

    def test_unterminated_block_comment(self):
        e = self.error("a\n  /* never closed\n")
        self.assertEqual(e.headline, "x.idl:2:3: error: unterminated block comment")

    def test_unterminated_string(self):
        e = self.error('modifier "abc;\nnext')
        self.assertEqual(e.headline, "x.idl:1:10: error: unterminated string")

    def test_unterminated_string_at_eof(self):
        self.assertEqual(self.error('x "abc').headline, "x.idl:1:3: error: unterminated string")

    def test_bad_character(self):
        self.assertEqual(self.error("a $b").headline, "x.idl:1:3: error: unexpected character '$'")

    def test_lone_minus_is_bad(self):
        self.assertEqual(self.error("= -1").headline, "x.idl:1:3: error: unexpected character '-'")

    def test_malformed_integers(self):
        for text in ("12ab", "0x", "0b102", "1__0", "0x_1", "7_"):
            with self.subTest(text=text):
                self.assertEqual(self.error(text).headline, f"x.idl:1:1: error: malformed integer '{text}'")

    def test_unknown_escape(self):
        self.assertEqual(self.error(r'"a\n"').headline, r"x.idl:1:3: error: unknown escape '\n' in string")

    def test_error_format_has_source_line_and_caret(self):
        e = self.error("module m;\n\tconst $x")
        self.assertEqual(e.format(), "x.idl:2:8: error: unexpected character '$'\n\tconst $x\n\t      ^")


if __name__ == "__main__":
    unittest.main()
