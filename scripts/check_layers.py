#!/usr/bin/python3
"""Checks that code calls only down the layers written in docs/layers.txt.

Usage: check_layers.py [--root DIR] [--table FILE] [--graph]

Two kinds of use are checked, both against the same table:
  includes  every #include of every C/C++ source and header under the layer folders,
            resolved as the compiler would (next to the including file, then the include
            directories of the target compiling it and of what that target links; for a
            header, those of its folder's targets; then every include directory the CMake
            files name, then the root), mapped to the folder that owns the file;
  links     every target_link_libraries (and $<TARGET_OBJECTS:...>) between targets of the
            tree, each target mapped to the folder whose CMake file defines it.

A folder may use itself and the folders of strictly lower levels; folders on one level are
peers and never use each other. Test code (a `tests/` folder anywhere, the top test folders of
the table, and targets that link GoogleTest) follows the table's test rule (docs/layers.txt).
Production code never uses test code. A file or target in a folder the table does not name is
a violation too.

Prints one line per violation (file:line: what, which layers) and exits 1 if there is any;
exits 0 and prints a one-line summary otherwise. --graph prints the folder graph it found.
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from pathlib import Path, PurePosixPath

SOURCE_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".inc", ".ipp"}
CMAKE_NAMES = {"CMakeLists.txt"}
CMAKE_SUFFIX = ".cmake"
# Directories never walked: version control, build trees, caches.
SKIP_DIR_RE = re.compile(r"^(\.git|build.*|__pycache__|\..*)$")
# Link items that are not targets of this tree.
EXTERNAL_LINK_RE = re.compile(r"^(.*::.*|-.*|\$\{.*\}|.*\.(a|so)$)$")
GTEST_RE = re.compile(r"^(GTest|gtest|GMock|gmock)(::|$)")
KEYWORDS_LINK = {"PUBLIC", "PRIVATE", "INTERFACE", "LINK_PUBLIC", "LINK_PRIVATE",
                 "LINK_INTERFACE_LIBRARIES", "debug", "optimized", "general"}
KEYWORDS_ADD = {"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "IMPORTED", "ALIAS",
                "EXCLUDE_FROM_ALL", "WIN32", "MACOSX_BUNDLE", "GLOBAL"}


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Table:
    levels: list[list[str]]  # bottom first
    level_of: dict[str, int]
    level_name: dict[int, str]
    outside: set[str]  # folders that hold no layer code (not scanned for includes)
    test_folders: set[str]  # whole folders of test code (at the top)
    fixtures: set[str]  # composition roots a lower folder's tests may reach
    targets: dict[str, tuple[str, bool]]  # target defined outside its folder -> folder, test
    parts: dict[str, str]  # a folder that is part of another (generated halves) -> owner

    def folder_of(self, path: str) -> str | None:
        """The deepest table folder (layer, part, test or outside) that holds `path`; a part
        answers its owner."""
        best = None
        for folder in list(self.level_of) + list(self.outside) + list(self.parts):
            if path == folder or path.startswith(folder + "/"):
                if best is None or len(folder) > len(best):
                    best = folder
        return self.parts.get(best, best) if best is not None else None


def load_table(path: Path) -> Table:
    levels: list[list[str]] = []
    level_name: dict[int, str] = {}
    outside: set[str] = set()
    test_folders: set[str] = set()
    fixtures: set[str] = set()
    targets: dict[str, tuple[str, bool]] = {}
    parts: dict[str, str] = {}
    section = None
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            section = m.group(1)
            continue
        words = line.split()
        if section == "levels":
            # "name: folder folder ..."
            if ":" not in words[0]:
                raise SystemExit(f"{path}:{lineno}: a level is `name: folder ...`")
            name = words[0].rstrip(":")
            level_name[len(levels)] = name
            levels.append(words[1:])
        elif section == "outside":
            outside.update(words)
        elif section == "tests":
            test_folders.update(words)
        elif section == "fixtures":
            fixtures.update(words)
        elif section == "parts":
            if len(words) != 2:
                raise SystemExit(f"{path}:{lineno}: a part line is `folder owner-folder`")
            parts[words[0]] = words[1]
        elif section == "targets":
            if len(words) not in (2, 3) or (len(words) == 3 and words[2] != "test"):
                raise SystemExit(f"{path}:{lineno}: a target line is `target folder [test]`")
            targets[words[0]] = (words[1], len(words) == 3)
        else:
            raise SystemExit(f"{path}:{lineno}: line outside a known [section]")
    level_of: dict[str, int] = {}
    for i, folders in enumerate(levels):
        for folder in folders:
            if folder in level_of:
                raise SystemExit(f"{path}: {folder} is on two levels")
            level_of[folder] = i
    for folder in test_folders | fixtures:
        if folder not in level_of:
            raise SystemExit(f"{path}: {folder} ([tests]/[fixtures]) is on no level")
    for target, (folder, _) in targets.items():
        if folder not in level_of:
            raise SystemExit(f"{path}: target {target}'s folder {folder} is on no level")
    for part, owner in parts.items():
        if owner not in level_of:
            raise SystemExit(f"{path}: {part} is part of {owner}, which is on no level")
    return Table(levels, level_of, level_name, outside, test_folders, fixtures, targets, parts)


# --------------------------------------------------------------------------------------------
# The tree
# --------------------------------------------------------------------------------------------

def walk(root: Path):
    """Relative posix paths of every file under root (sorted, skipping build trees)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not SKIP_DIR_RE.match(d))
        rel = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            out.append(name if rel == "." else f"{rel}/{name}")
    return out


def is_test_path(table: Table, path: str) -> bool:
    parts = PurePosixPath(path).parts
    if "tests" in parts[:-1]:
        return True
    return any(path == f or path.startswith(f + "/") for f in table.test_folders)


def normalise(path: str) -> str | None:
    """Collapses . and .. of a root-relative path; None if it leaves the root."""
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
        else:
            out.append(part)
    return "/".join(out)


# --------------------------------------------------------------------------------------------
# CMake
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Command:
    name: str
    args: list[str]
    line: int


def cmake_commands(text: str):
    """The commands of a CMake file: name, arguments (quotes removed), line of the name."""
    i, n, line = 0, len(text), 1
    commands = []
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*\(").match(text, i)
            if not m:
                i += 1
                continue
            name, start_line = m.group(0).split("(")[0].strip().lower(), line
            line += m.group(0).count("\n")
            i = m.end()
            args, depth, cur = [], 0, ""
            while i < n:
                c = text[i]
                if c == "\n":
                    line += 1
                if c == '"':
                    j = i + 1
                    while j < n and text[j] != '"':
                        if text[j] == "\\":
                            j += 1
                        j += 1
                    cur += text[i + 1:j]
                    line += text[i:j].count("\n")
                    i = j + 1
                    continue
                if c == "#" and depth == 0 and not cur:
                    while i < n and text[i] != "\n":
                        i += 1
                    continue
                if c == "(":
                    depth += 1
                    cur += c
                elif c == ")":
                    if depth == 0:
                        if cur:
                            args.append(cur)
                        i += 1
                        break
                    depth -= 1
                    cur += c
                elif c.isspace() and depth == 0:
                    if cur:
                        args.append(cur)
                    cur = ""
                else:
                    cur += c
                i += 1
            commands.append(Command(name, args, start_line))
        else:
            i += 1
    return commands


@dataclasses.dataclass
class Target:
    name: str
    folder: str | None
    test: bool
    file: str
    line: int
    sources: list[str]
    include_dirs: list[str] = dataclasses.field(default_factory=list)


def expand(value: str, variables: dict[str, str]) -> str | None:
    """Substitutes known ${VAR}s; None if an unknown one remains."""
    def sub(m):
        return variables.get(m.group(1), m.group(0))
    for _ in range(4):
        value = re.sub(r"\$\{(\w+)\}", sub, value)
    return None if "${" in value else value


def read_cmake(table: Table, root: Path, files: list[str]):
    """Targets, link uses and include directories of every CMake file."""
    targets: dict[str, Target] = {}
    links: list[tuple[str, str, str, int]] = []  # from target, to target, file, line
    include_dirs: list[str] = []
    target_dirs: dict[str, list[str]] = {}
    gtest_users: set[str] = set()
    for rel in files:
        text = (root / rel).read_text(errors="replace")
        here = str(PurePosixPath(rel).parent)
        here = "" if here == "." else here
        # include()d .cmake files run in the includer's directory (the top level here).
        current = here if PurePosixPath(rel).name in CMAKE_NAMES else ""
        # Directories stand for themselves as "/<root-relative path>".
        variables = {"CMAKE_CURRENT_SOURCE_DIR": f"/{current}", "PROJECT_SOURCE_DIR": "/",
                     "CMAKE_SOURCE_DIR": "/", "SOFTIB_GENERATED_DIR": "/generated",
                     "CMAKE_CURRENT_LIST_DIR": f"/{here}"}

        def path_of(token):
            value = expand(token, variables)
            if value is None or "$<" in value:
                return None
            if value.startswith("/"):
                return normalise(value)
            return normalise(f"{current}/{value}")

        for cmd in cmake_commands(text):
            if cmd.name == "set" and cmd.args:
                values = [expand(a, variables) for a in cmd.args[1:] if a != "PARENT_SCOPE"]
                if all(v is not None for v in values) and not any("CACHE" == v for v in values):
                    variables[cmd.args[0]] = " ".join(values)
            elif cmd.name in ("add_library", "add_executable") and cmd.args:
                name = cmd.args[0]
                if "ALIAS" in cmd.args or "IMPORTED" in cmd.args:
                    continue
                sources, objects = [], []
                for token in cmd.args[1:]:
                    if token in KEYWORDS_ADD:
                        continue
                    for obj in re.findall(r"\$<TARGET_OBJECTS:([\w.+-]+)>", token):
                        objects.append(obj)
                    for part in (expand(token, variables) or "").split():
                        p = path_of(part)
                        if p and (root / p).is_file():
                            sources.append(p)
                if name in table.targets:
                    folder, test = table.targets[name]
                else:
                    folder = table.folder_of(rel)
                    test = is_test_path(table, rel) or bool(sources and is_test_path(table, sources[0]))
                targets[name] = Target(name, folder, test, rel, cmd.line, sources)
                for obj in objects:
                    links.append((name, obj, rel, cmd.line))
            elif cmd.name == "target_link_libraries" and cmd.args:
                name = cmd.args[0]
                for token in cmd.args[1:]:
                    if token in KEYWORDS_LINK:
                        continue
                    if GTEST_RE.match(token):
                        gtest_users.add(name)
                        continue
                    for obj in re.findall(r"\$<TARGET_OBJECTS:([\w.+-]+)>", token):
                        links.append((name, obj, rel, cmd.line))
                    if "$<" in token or EXTERNAL_LINK_RE.match(token):
                        continue
                    links.append((name, token, rel, cmd.line))
            elif cmd.name == "target_include_directories" and cmd.args:
                for token in cmd.args[1:]:
                    if token in ("PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"):
                        continue
                    p = path_of(token)
                    if p is not None and (root / p).is_dir():
                        if p not in include_dirs:
                            include_dirs.append(p)
                        target_dirs.setdefault(cmd.args[0], []).append(p)
    for name in gtest_users:
        if name in targets and name not in table.targets:
            targets[name].test = True
    # What each target compiles with: its own include directories, then those of what it
    # links, transitively (every use is taken as PUBLIC: the check only needs where a name
    # resolves, not who may see it).
    uses: dict[str, list[str]] = {}
    for src, dst, _, _ in links:
        uses.setdefault(src, []).append(dst)
    for name, target in targets.items():
        seen, order, stack = set(), [], [name]
        while stack:
            t = stack.pop(0)
            if t in seen:
                continue
            seen.add(t)
            order.extend(d for d in target_dirs.get(t, []) if d not in order)
            stack.extend(uses.get(t, []))
        target.include_dirs = order
    return targets, links, include_dirs


# --------------------------------------------------------------------------------------------
# Includes
# --------------------------------------------------------------------------------------------

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)


def strip_block_comments(text: str) -> str:
    """Blanks /* ... */ comments, keeping the line structure."""
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def includes_of(text: str):
    text = strip_block_comments(text)
    for m in INCLUDE_RE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)


class Resolver:
    def __init__(self, root: Path, include_dirs: list[str], files: set[str],
                 targets: dict[str, Target]):
        self.root = root
        self.files = files
        # The CMake include directories, then the project root (folders include each other's
        # sources by root-relative paths such as "runtime/al/src/objects.h").
        self.dirs = list(include_dirs)
        if "" not in self.dirs:
            self.dirs.append("")
        # A source file that a target names is compiled with that target's directories.
        self.dirs_of: dict[str, list[str]] = {}
        # A header is compiled with the directories of its folder's targets (production
        # headers with the production targets', test headers with the tests').
        self.folder_dirs: dict[tuple[str, bool], list[str]] = {}
        for target in targets.values():
            for source in target.sources:
                self.dirs_of.setdefault(source, []).extend(target.include_dirs)
            if target.folder is not None:
                key = (target.folder, target.test)
                self.folder_dirs.setdefault(key, []).extend(target.include_dirs)

    def resolve(self, includer: str, bracket: str, name: str, own: str | None,
                test: bool) -> str | None:
        here = str(PurePosixPath(includer).parent)
        if bracket == '"':
            p = normalise(f"{here}/{name}" if here != "." else name)
            if p in self.files:
                return p
        for d in self.dirs_of.get(includer, []) + self.folder_dirs.get((own or "", test), []):
            p = normalise(f"{d}/{name}")
            if p in self.files:
                return p
        # What none of those finds: every directory of the tree, then the root.
        found = []
        for d in self.dirs:
            p = normalise(f"{d}/{name}" if d else name)
            if p in self.files and p not in found:
                found.append(p)
        if not found:
            return None
        # Several directories hold a file of that name: the includer's own folder's wins
        # (its target names its own directories first), else the first directory named.
        for p in found:
            if own and (p == own or p.startswith(own + "/")):
                return p
        return found[0]


# --------------------------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------------------------

def describe(table: Table, folder: str, test: bool) -> str:
    level = table.level_of[folder]
    return f"{folder}{' (test)' if test else ''} [{table.level_name[level]}]"


def judge(table: Table, src: str | None, src_test: bool, dst: str | None, dst_test: bool):
    """None if src may use dst, else why not."""
    if src is None or dst is None:
        return "a folder that docs/layers.txt does not name"
    if src in table.outside or dst in table.outside:
        return "a folder outside the layers (docs/layers.txt [outside])"
    if dst_test and not src_test:
        return "production code reaches test code"
    ls, ld = table.level_of[src], table.level_of[dst]
    if src == dst:
        return None
    if not src_test:
        if ld < ls:
            return None
        return "a lower layer reaches a higher one" if ld > ls else "a layer reaches its peer"
    # Test code: see docs/layers.txt [tests] and [fixtures].
    if src in table.test_folders or ld <= ls:
        return None
    if dst in table.fixtures:
        return None
    return "a test reaches above the layer it tests"


def check(root: Path, table: Table, graph: bool = False):
    files = walk(root)
    file_set = set(files)
    cmake_files = [f for f in files
                   if PurePosixPath(f).name in CMAKE_NAMES or f.endswith(CMAKE_SUFFIX)]
    targets, links, include_dirs = read_cmake(table, root, cmake_files)
    resolver = Resolver(root, include_dirs, file_set, targets)
    violations: list[str] = []
    edges: dict[tuple[str, str], int] = {}
    unknown_reported: set[str] = set()

    def unknown(path: str) -> None:
        # Named by its first two directories (a new ulp/ipoib/src/x.cc says ulp/ipoib).
        top = "/".join(PurePosixPath(path).parent.parts[:2]) or path
        if top not in unknown_reported:
            unknown_reported.add(top)
            violations.append(f"{path}:1: {top} is a folder that docs/layers.txt does not name")

    checked_includes = 0
    for rel in files:
        if PurePosixPath(rel).suffix not in SOURCE_SUFFIXES:
            continue
        src = table.folder_of(rel)
        if src is None:
            unknown(rel)
            continue
        if src in table.outside:
            continue
        src_test = is_test_path(table, rel)
        text = (root / rel).read_text(errors="replace")
        for line, bracket, name in includes_of(text):
            dst_file = resolver.resolve(rel, bracket, name, src, src_test)
            if dst_file is None:
                continue
            checked_includes += 1
            dst = table.folder_of(dst_file)
            dst_test = dst is not None and is_test_path(table, dst_file)
            if dst is not None and dst != src:
                edges[(f"{src}{'/tests' if src_test else ''}",
                       f"{dst}{'/tests' if dst_test else ''}")] = 1
            why = judge(table, src, src_test, dst, dst_test)
            if why:
                violations.append(
                    f"{rel}:{line}: includes {bracket}{name}{'>' if bracket == '<' else bracket} "
                    f"({dst_file}): {describe_or(table, src, src_test)} -> "
                    f"{describe_or(table, dst, dst_test)}: {why}")

    checked_links = 0
    for name, target in sorted(targets.items()):
        if target.folder is None:
            violations.append(f"{target.file}:{target.line}: target {name} is defined in a "
                              "folder that docs/layers.txt does not name (or list it in [targets])")
            continue
        if target.folder in table.outside:
            violations.append(f"{target.file}:{target.line}: target {name} is defined outside "
                              "the layers: give its folder in docs/layers.txt [targets]")
    for src_name, dst_name, rel, line in links:
        if src_name not in targets or dst_name not in targets:
            continue  # external (system libraries, imported packages)
        s, d = targets[src_name], targets[dst_name]
        if s.folder is None or d.folder is None or s.folder in table.outside \
                or d.folder in table.outside:
            continue  # reported above
        checked_links += 1
        if s.folder != d.folder:
            edges[(f"{s.folder}{'/tests' if s.test else ''}",
                   f"{d.folder}{'/tests' if d.test else ''}")] = 1
        why = judge(table, s.folder, s.test, d.folder, d.test)
        if why:
            violations.append(f"{rel}:{line}: {src_name} links {dst_name}: "
                              f"{describe(table, s.folder, s.test)} -> "
                              f"{describe(table, d.folder, d.test)}: {why}")
    if graph:
        for a, b in sorted(edges):
            print(f"{a} -> {b}")
    return violations, checked_includes, checked_links, len(targets)


def describe_or(table: Table, folder: str | None, test: bool) -> str:
    if folder is None:
        return "(no folder of the table)"
    if folder in table.outside:
        return f"{folder} (outside the layers)"
    return describe(table, folder, test)


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=here, help="the tree to check")
    parser.add_argument("--table", type=Path, help="the layer table (default ROOT/docs/layers.txt)")
    parser.add_argument("--graph", action="store_true", help="print the folder graph found")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    table = load_table(args.table or root / "docs" / "layers.txt")
    violations, includes, links, targets = check(root, table, args.graph)
    for v in violations:
        print(v)
    if violations:
        print(f"check_layers: {len(violations)} violation(s) of the layer order "
              f"(docs/layers.txt, docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check_layers: {includes} includes and {links} links of {targets} targets "
          "call only down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
