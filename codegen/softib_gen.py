#!/usr/bin/python3
"""softib code generator: idl/ -> generated/.

lexer -> parser -> model -> layout -> lints -> backends (Jinja2) -> clang-format ->
write only the files that changed, delete stale ones, write generated/sources.cmake.
Nothing is written when any stage reports an error.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

CODEGEN_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(CODEGEN_DIR)
DEFAULT_IDL = os.path.join(REPO_ROOT, "idl")
DEFAULT_OUT = os.path.join(REPO_ROOT, "generated")
DEFAULT_LOCK = os.path.join(CODEGEN_DIR, "ordinals.lock")
STYLE_FILE = os.path.join(REPO_ROOT, ".clang-format")

sys.path.insert(0, CODEGEN_DIR)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idl", default=DEFAULT_IDL, help="directory of *.idl files (default: idl/)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="generated tree (default: generated/)")
    ap.add_argument("--lock", help="ordinals lock file (default: codegen/ordinals.lock for idl/, "
                                   "else <idl dir>/ordinals.lock)")
    ap.add_argument("--verify", action="store_true",
                    help="regenerate in memory and fail (exit 1) if the tree on disk differs")
    ap.add_argument("--update-lock", action="store_true",
                    help="rewrite the ordinals lock from the IDL (accepts changed ordinals)")
    ap.add_argument("--no-format", action="store_true", help="skip clang-format")
    ap.add_argument("--backends", help="comma-separated subset of backends to run (needs --out)")
    ap.add_argument("--quiet", action="store_true", help="print only errors")
    args = ap.parse_args(argv)
    if args.verify and args.update_lock:
        ap.error("--verify and --update-lock cannot be combined")
    args.idl = os.path.abspath(args.idl)
    args.out = os.path.abspath(args.out)
    if args.lock is None:
        same = os.path.realpath(args.idl) == os.path.realpath(DEFAULT_IDL)
        args.lock = DEFAULT_LOCK if same else os.path.join(args.idl, "ordinals.lock")
    if args.backends and os.path.realpath(args.out) == os.path.realpath(DEFAULT_OUT):
        ap.error("--backends writes a partial tree; give --out another directory")
    return args


def display(path: str) -> str:
    rel = os.path.relpath(path, REPO_ROOT)
    return path if rel.startswith("..") else rel


def main(argv=None, backends=None) -> int:
    """Run the generator; `backends` replaces backends.BACKENDS (tests)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        print("softib codegen needs Jinja2: run it with /usr/bin/python3 (Debian python3-jinja2)", file=sys.stderr)
        return 2

    from softib_idl import emit, layout, lints, parser
    from softib_idl.errors import IdlError, IdlErrors

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg)

    # ---- frontend
    if not os.path.isdir(args.idl):
        print(f"softib_gen: no IDL directory {display(args.idl)}", file=sys.stderr)
        return 1
    paths = parser.idl_files(args.idl)
    if not paths:
        print(f"softib_gen: no .idl files under {display(args.idl)}", file=sys.stderr)
        return 1
    try:
        lock, _ = lints.read_lock(args.lock, display(args.lock))
        program = parser.parse_files(paths, root=REPO_ROOT)
        layout.compute(program)
        lints.check(program, None if args.update_lock else lock)
    except IdlErrors as e:
        print(e.format(), file=sys.stderr)
        print(f"{len(e.errors)} error(s); nothing written", file=sys.stderr)
        return 1
    except IdlError as e:
        print(e.format(), file=sys.stderr)
        print("1 error(s); nothing written", file=sys.stderr)
        return 1

    # ---- backends
    if backends is None:
        try:
            from softib_idl import backends as backend_pkg
        except Exception:
            traceback.print_exc()
            print("softib_gen: cannot import the backends; nothing written", file=sys.stderr)
            return 1
        backends = backend_pkg.BACKENDS
    selected = list(backends)
    if args.backends:
        wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
        known = {emit.backend_name(b): b for b in selected}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            print(f"softib_gen: unknown backend(s) {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
            return 1
        selected = [known[w] for w in wanted]
    try:
        produced = emit.run_backends(program, selected, emit.make_render())
        files = {path: content for per in produced.values() for path, content in per.items()}
        files[emit.SOURCES_CMAKE] = emit.sources_cmake(produced)
        if not args.no_format:
            files = emit.clang_format(files, STYLE_FILE)
    except emit.EmitError as e:
        print(f"softib_gen: {e}; nothing written", file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        print("softib_gen: a backend failed; nothing written", file=sys.stderr)
        return 1

    new_verbs = sorted(v.name for v in program.verbs.values() if v.name not in lock)

    # ---- verify
    if args.verify:
        report = emit.diff_tree(args.out, files)
        if new_verbs:
            report.append(f"{display(args.lock)} lacks verbs: {', '.join(new_verbs)}")
        if report:
            print(f"{display(args.out)} is out of date with the IDL:", file=sys.stderr)
            print("\n".join(report), file=sys.stderr)
            print("run: /usr/bin/python3 codegen/softib_gen.py", file=sys.stderr)
            return 1
        say(f"{display(args.out)} is up to date ({len(files)} files)")
        return 0

    # ---- write
    written, deleted = emit.write_tree(args.out, files)
    for rel in written:
        say(f"wrote {display(os.path.join(args.out, rel))}")
    for rel in deleted:
        say(f"deleted {display(os.path.join(args.out, rel))}")
    if args.update_lock or new_verbs:
        ordinals = {v.name: v.ordinal for v in program.verbs.values()}
        if not args.update_lock:
            ordinals = {**lock, **ordinals}  # keep released names: their ordinals stay taken
        text = lints.format_lock(ordinals)
        if emit.read_text(args.lock) != text:
            with open(args.lock, "w", encoding="utf-8") as f:
                f.write(text)
            say(f"updated {display(args.lock)}")
    say(f"{len(files)} files, {len(written)} written, {len(deleted)} deleted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
