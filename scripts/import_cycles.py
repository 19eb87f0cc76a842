#!/usr/bin/env python3
"""File-level `use` cycles in a Rust crate's src/ (issues 29 and 41: "no import circle").

Every reference `crate::a::b::Item`, `super::Item`, `self::x::Item` (in `use` trees and in
code, outside `#[cfg(test)] mod tests`) is an edge to the file that defines the item: module
segments are walked down to the deepest module file, and an item that module only
re-exports (`pub use x::Item`, `pub use x::*`) is followed to where it comes from.

A reference that reaches its item through a re-export is also an edge to the module file the
path names, when that file has code of its own (anything besides `mod` and `use`
declarations and attributes): `use super::work_claims::ClaimStatus` depends on
`work_claims/mod.rs` as well as on `work_claims/shapes.rs`, because the path goes through
the one to reach the other. Counting only the defining file hid a five-file circle in
`src/claim/` (issue 41). A pure facade (say a `mod.rs` of only `pub mod` and `pub use`
lines) stays a facade: a path through it is an edge to the defining file only. `pub use`
lines themselves are never edges.

Prints every strongly connected component of more than one file; exits 1 if there is one.
Usage: import_cycles.py [SRC_DIR]  (default: src)
"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "src"
files = {}  # module path tuple -> file
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith(".rs"):
            continue
        p = os.path.join(dp, f)
        rel = os.path.relpath(p, root)[:-3].split(os.sep)
        if rel == ["main"]:
            continue
        if rel[-1] in ("mod", "lib"):
            rel = rel[:-1]
        files[tuple(rel)] = p

def strip_tests(text):
    m = re.search(r"^#\[cfg\(test\)\]\s*\n(?:\s*#\[[^\n]*\n)*\s*(pub(\(crate\))?\s+)?mod \w+\s*\{", text, re.M)
    return text[: m.start()] if m else text

def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)

src = {m: strip_comments(strip_tests(open(p).read())) for m, p in files.items()}

# A file of nothing but `mod` and `use` declarations (and attributes) is a facade: it only
# points elsewhere, so a path through it depends on where it points, not on it.
DECL = re.compile(r"#!?\[[^\]]*\]|\b(pub(\([\w:\s]+\))?\s+)?(mod\s+\w+|use\s+[^;]+);", re.S)
facade = {m for m, text in src.items() if not DECL.sub("", text).strip()}

def expand(tree):
    """Expands a use tree `a::{b, c::{d, e}}` into paths."""
    tree = tree.strip()
    i = tree.find("{")
    if i < 0:
        return [re.sub(r"\s+as\s+\w+$", "", tree).strip()]
    prefix, inner = tree[:i], tree[i + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur); cur = ""; continue
        depth += (ch == "{") - (ch == "}")
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            for e in expand(p):
                out.append(prefix + e if e != "self" else prefix.rstrip(":"))
    return out

USE = re.compile(r"\b(pub(\([\w:]+\))?\s+)?use\s+([^;]+);", re.S)
reexports = {}  # module -> list of (name or '*', absolute path)

def absolute(mod, path):
    segs = [s for s in re.split(r"\s*::\s*", path.strip()) if s]
    if not segs:
        return None
    cur = list(mod)
    if segs[0] == "crate":
        cur, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                cur = cur[:-1]
            segs = segs[1:]
    else:
        if tuple(cur + [segs[0]]) in files:
            pass  # a child module named without self::
        else:
            return None  # an external crate or a local item
    return cur + segs

for mod, text in src.items():
    for m in USE.finditer(text):
        if not m.group(1):
            continue
        for p in expand(m.group(3)):
            a = absolute(mod, p)
            if a:
                reexports.setdefault(mod, []).append((a[-1], a))

def named(a):
    """The deepest module file the path's own segments walk down to."""
    cur = []
    for s in a:
        if tuple(cur + [s]) not in files:
            break
        cur.append(s)
    return tuple(cur)

def resolve(a, depth=0):
    """The file that defines what the path names, following re-exports."""
    cur = list(named(a))
    rest = a[len(cur):]
    if rest and depth < 8:
        for name, target in reexports.get(tuple(cur), []):
            if name == rest[0] or name == "*":
                t = target[:-1] + rest if name != "*" else target[:-1] + rest
                r = resolve(t, depth + 1)
                if r != tuple(cur) or name == rest[0]:
                    return r
    return tuple(cur)

REF = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*(?:super|self))*(?:\s*::\s*\w+)+)")
edges = {m: set() for m in files}
for mod, text in src.items():
    paths = []
    for m in USE.finditer(text):
        if m.group(1):
            continue
        paths += expand(m.group(3))
    body = USE.sub("", text)
    paths += [m.group(1) for m in REF.finditer(body)]
    for p in paths:
        a = absolute(mod, p)
        if not a:
            continue
        targets = {resolve(a)}
        if named(a) not in facade:
            targets.add(named(a))  # the path goes through it, even when it only re-exports the item
        for t in targets:
            if t != mod and t in files and t != ():
                edges[mod].add(t)

# Tarjan's strongly connected components.
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(comp)
for v in files:
    if v not in index:
        visit(v)
name = lambda m: os.path.relpath(files[m], root)
for comp in sccs:
    cs = set(comp)
    print(f"cycle of {len(comp)} files:")
    for m in sorted(comp, key=name):
        outs = sorted(name(t) for t in edges[m] if t in cs)
        print(f"  {name(m)} -> {', '.join(outs)}")
print(f"{len(sccs)} import cycle(s) among {len(files)} files" if sccs else f"no import cycle among {len(files)} files")
sys.exit(1 if sccs else 0)
