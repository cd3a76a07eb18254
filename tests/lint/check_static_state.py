#!/usr/bin/env python3
"""Mutable objects that live for the whole process, in harness/ and kernels/:
every file-scope object that is not const (static or not), and every static
local of a function. Each one is state a second backend, a second run or a
test in the same process shares with the first (issue 38: the kernel ABI had
no context pointer, so the built-in table kept its runtime in a static).

The ones that remain are listed, each with a one-line reason, in
tests/lint/static_state.allow ("path: name  # reason"); this check fails on
any object that is not listed there, and on a listed one that no longer
exists (so the list stays the inventory).

Usage: check_static_state.py SOURCE_DIR [--list]
  --list  print every object found (path: name  kind) and exit 0.

The scan is textual (comments, strings and preprocessor lines removed; braces
counted), not a C parser: good for this tree's code, not for any C. An object
is const when `const` follows its last `*` (or, with no `*`, when `const` is
among its specifiers): `static const char *names[]` is mutable (the pointers),
`static const char *const names[]` is not. Device code (__device__,
__constant__, __shared__) is not host state and is left out."""
import os
import re
import sys

TOPS = ("harness", "kernels")
EXTS = (".c", ".h", ".cu", ".cuh", ".cpp")
ALLOW = os.path.join("tests", "lint", "static_state.allow")
DEVICE = re.compile(r"\b(__device__|__constant__|__shared__|__managed__)\b")
IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"static", "const", "volatile", "extern", "inline", "register", "signed", "unsigned", "short", "long",
            "int", "char", "float", "double", "void", "struct", "union", "enum", "_Thread_local", "__thread",
            "thread_local", "_Atomic", "restrict", "__restrict", "__restrict__", "typedef", "auto", "bool", "_Bool"}


def strip(text):
    """Comments, string and character literals and preprocessor lines blanked
    (newlines kept, so offsets still give line numbers)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def split_top(text, sep):
    """text split at `sep` outside (), [] and {}."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def drop_bodies(text):
    """The braces of struct/union/enum bodies removed (with what is inside)."""
    out, depth = [], 0
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def declared_objects(stmt):
    """(name, const) for each object a file-scope declaration defines; [] for
    functions, prototypes, types, typedefs, extern declarations and macros."""
    m = re.search(r"\bstatic\b", stmt)
    is_static = m is not None
    if m:
        stmt = stmt[m.start():]
    if DEVICE.search(stmt) or re.search(r"\b(typedef|using|template|namespace)\b", stmt):
        return []
    if re.search(r"\bextern\b", stmt):
        return []
    parts = split_top(stmt, ",")
    specifiers_const = None
    found = []
    for k, part in enumerate(parts):
        decl = split_top(part, "=")[0]
        decl = drop_bodies(decl).strip()
        if not decl:
            continue
        # A function or its prototype, or a macro call: NAME( not followed by '*'.
        pm = re.search(r"\(", decl)
        if pm and not re.match(r"\(\s*\*", decl[pm.start():]):
            return []
        if k == 0:
            if not is_static and "=" not in part and re.fullmatch(r"(struct|union|enum|class)\s*\w*", decl):
                return []  # a type only
            words = [w for w in IDENT.findall(decl)]
            if not words:
                return []
        # The declared name: the last identifier outside [] (arrays) and before ')' of (*name).
        core = re.sub(r"\[[^\]]*\]", "", decl)
        core = re.sub(r"\)\s*\(.*$", ")", core)  # function pointer parameter list
        names = IDENT.findall(core)
        names = [w for w in names if w not in KEYWORDS]
        if not names:
            continue
        name = names[-1]
        if k == 0 and len(names) < 2 and not re.search(r"\b(int|char|float|double|long|short|unsigned|signed|"
                                                        r"void|_Bool|bool|struct|union|enum)\b", decl):
            return []  # MACRO; or a lone identifier: not a declaration this scan understands
        star = core.rfind("*")
        if star >= 0:
            const = re.search(r"\bconst\b", core[star:]) is not None
        else:
            if specifiers_const is None:
                specifiers_const = re.search(r"\bconst(expr)?\b", decl.split(name)[0]) is not None
            const = specifiers_const
        if k == 0 and specifiers_const is None:
            specifiers_const = re.search(r"\bconst(expr)?\b", decl.split(name)[0]) is not None
        found.append((name, const, is_static))
    return found


def function_statics(body):
    """(name, const, offset) of the static locals in a function body."""
    found = []
    for m in re.finditer(r"\bstatic\b[^;{}]*(=|;)", body):
        text = body[m.start():]
        end = 0
        depth = 0
        while end < len(text):
            c = text[end]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == ";" and depth == 0:
                break
            end += 1
        for name, const, _ in declared_objects(text[:end]):
            found.append((name, const, m.start()))
    return found


def scan_file(path):
    """Every mutable process-lifetime object of one file: (name, kind, line)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip(f.read())
    found = []
    i, n = 0, len(text)
    start = 0
    while i < n:
        c = text[i]
        if c == ";":
            stmt = text[start:i]
            at = start + len(stmt) - len(stmt.lstrip())
            for name, const, is_static in declared_objects(stmt):
                if not const:
                    found.append((name, "file static" if is_static else "file global", text.count("\n", 0, at)))
            i += 1
            start = i
            continue
        if c == "{":
            head = text[start:i]
            if re.search(r"\bextern\s*\"\s*\"\s*$", head) or re.search(r"\bnamespace\b[^;]*$", head):
                i += 1  # a transparent block: its contents are file scope
                start = i
                continue
            # Find the matching brace.
            depth, j = 0, i
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            body = text[i + 1:j]
            if re.search(r"\b(struct|union|enum|class)\s*\w*\s*$", head) or re.search(r"=\s*$", head):
                i = j + 1  # a type body or an initializer: part of the statement
                continue
            # A function body: its static locals are process state too.
            if not DEVICE.search(head):
                for name, const, offset in function_statics(body):
                    if not const:
                        found.append((name, "function static", text.count("\n", 0, i + 1 + offset)))
            i = j + 1
            start = i
            continue
        if c == "}":  # the end of a transparent block
            i += 1
            start = i
            continue
        i += 1
    return found


def scan(root):
    result = []
    for top in TOPS:
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            for name in sorted(files):
                if name.endswith(EXTS):
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, root)
                    for obj, kind, line in scan_file(path):
                        result.append((rel, obj, kind, line + 1))
    return result


def read_allow(root):
    allowed, problems = {}, []
    path = os.path.join(root, ALLOW)
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"(\S+):\s+(\w+)\s+#\s*(\S.*)", line)
            if not m:
                problems.append(f"{ALLOW}:{number}: not 'path: name  # reason': {line}")
                continue
            allowed[(m.group(1), m.group(2))] = number
    return allowed, problems


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else ".")
    found = scan(root)
    if "--list" in sys.argv:
        for rel, obj, kind, line in found:
            print(f"{rel}:{line}: {obj}  ({kind})")
        print(f"{len(found)} objects ({sum(k == 'file static' for _, _, k, _ in found)} file static, "
              f"{sum(k == 'file global' for _, _, k, _ in found)} file global, "
              f"{sum(k == 'function static' for _, _, k, _ in found)} function static)")
        return 0
    allowed, problems = read_allow(root)
    seen = set()
    for rel, obj, kind, line in found:
        seen.add((rel, obj))
        if (rel, obj) not in allowed:
            problems.append(f"{rel}:{line}: new mutable {kind} '{obj}': pass it as a context instead, or add "
                            f"'{rel}: {obj}  # why it must be process-wide' to {ALLOW}")
    for (rel, obj), number in sorted(allowed.items(), key=lambda x: x[1]):
        if (rel, obj) not in seen:
            problems.append(f"{ALLOW}:{number}: {rel}: {obj} is listed but no longer there: remove the line")
    for p in problems:
        print(p)
    if not problems:
        print(f"static state: {len(found)} mutable process-wide objects, each listed in {ALLOW}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
