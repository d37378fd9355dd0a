#!/usr/bin/env python3
"""Storage's doors: every public item of wpds-storage, as the server builds it, is one the
server uses (scripts/check-layering, rule 8).

Reads rustdoc's JSON of wpds-storage built with the server's features (`cli`, no
`test-support`) and lists its public items: the items of its public modules and what they
re-export (functions, types, traits, constants, statics, macros) and the methods and
associated constants of its public types' own impls. An item is used when the server's
code (src/, comments left out) names it, or when a used item's signature, fields or
variants name it (a type a used function returns must stay public with it). Every other
public item fails the check, named with its path: make it `pub(crate)`, or public only with
`test-support` (`#[cfg_attr(feature = "test-support", visibility::make(pub))]`) if the tests
reach it.

By name: a method the server never calls passes when the server names something else that
is spelled alike (`new`, `read`). Modules, enum variants, struct fields and trait impls are
not checked on their own (a module is a path, a variant or field is its type's, a trait impl
is the trait's).

Usage: storage_doors.py [--self-test] RUSTDOC_JSON SERVER_SRC_DIR
"""

import json
import re
import sys
from pathlib import Path

CHECKED = {"function", "struct", "enum", "union", "trait", "trait_alias", "constant",
           "static", "type_alias", "macro", "proc_macro", "assoc_const"}


def kind(item):
    return next(iter(item["inner"])) if isinstance(item["inner"], dict) else item["inner"]


def public_items(doc):
    """(path, id) of every public item reachable from the crate's root."""
    index = doc["index"]
    found, seen = [], set()

    def visit(item_id, path):
        item = index.get(str(item_id))
        if item is None or (item_id, path) in seen:
            return
        seen.add((item_id, path))
        k = kind(item)
        inner = item["inner"][k]
        if k == "module":
            for child in inner["items"]:
                child_item = index.get(str(child))
                if child_item is None:
                    continue
                ck = kind(child_item)
                if ck == "use":
                    use = child_item["inner"]["use"]
                    if use.get("id") is None:
                        continue  # another crate's item
                    if use["is_glob"]:
                        visit(use["id"], path)
                    else:
                        visit(use["id"], f"{path}::{use['name']}")
                else:
                    visit(child, f"{path}::{child_item['name']}")
            return
        if k in CHECKED:
            found.append((path, item_id))
        if k in ("struct", "enum", "union"):
            for impl_id in inner.get("impls", []):
                impl = index.get(str(impl_id))
                if impl is None or impl["inner"]["impl"]["trait"] is not None:
                    continue
                for assoc in impl["inner"]["impl"]["items"]:
                    a = index.get(str(assoc))
                    if a is not None and kind(a) in ("function", "assoc_const"):
                        found.append((f"{path}::{a['name']}", assoc))

    root = doc["root"]
    visit(root, index[str(root)]["name"])
    return found


def referenced(value, into):
    """The ids every path inside a signature or body of JSON names."""
    if isinstance(value, dict):
        if "id" in value and "path" in value:
            into.add(value["id"])
        for v in value.values():
            referenced(v, into)
    elif isinstance(value, list):
        for v in value:
            referenced(v, into)


def signature_ids(doc, item_id):
    """What an item's signature, fields and variants name (its impls and docs left out)."""
    index = doc["index"]
    item = index[str(item_id)]
    k = kind(item)
    inner = dict(item["inner"][k])
    inner.pop("impls", None)
    inner.pop("implementations", None)
    ids = set()
    referenced(inner, ids)
    members = []
    if k == "struct":
        plain = inner["kind"].get("plain") if isinstance(inner["kind"], dict) else None
        tuple_ = inner["kind"].get("tuple") if isinstance(inner["kind"], dict) else None
        members = (plain or {}).get("fields", []) + [f for f in (tuple_ or []) if f is not None]
    elif k == "enum":
        members = inner["variants"]
    elif k == "trait":
        members = inner["items"]
    for member in members:
        m = index.get(str(member))
        if m is None:
            continue
        mk = kind(m)
        referenced(m["inner"][mk], ids)
        if mk == "variant":
            vk = m["inner"]["variant"]["kind"]
            fields = []
            if isinstance(vk, dict):
                fields = vk.get("struct", {}).get("fields", []) + [
                    f for f in (vk.get("tuple") or []) if f is not None]
            for field in fields:
                fi = index.get(str(field))
                if fi is not None:
                    referenced(fi["inner"][kind(fi)], ids)
    return ids


def code_only(text):
    """Rust source with its comments, strings and characters blanked (a lifetime `'a` stays)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif c == "r" and re.match(r'r#*"', text[i:]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            close = text.find('"' + hashes, i + len(hashes) + 2)
            i = n if close < 0 else close + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "'" and (text[i + 1:i + 2] == "\\" or text[i + 2:i + 3] == "'"):
            close = text.find("'", i + 2 if text[i + 1] != "\\" else i + 3)
            i = n if close < 0 else close + 1
        else:
            out.append(c)
            i += 1
            continue
        out.append(" ")
    return "".join(out)


def server_words(src):
    """The identifiers the server's code names, its comments and literals left out."""
    words = set()
    for path in sorted(Path(src).rglob("*.rs")):
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code_only(path.read_text())))
    return words


def unused_doors(doc, words):
    """(items, used, the paths of public items the server does not use)."""
    items = public_items(doc)
    by_id = {}
    for path, item_id in items:
        by_id.setdefault(item_id, []).append(path)
    # By the names it is public under (a re-export may rename it: `read as secret`).
    used = {item_id for item_id, paths in by_id.items() if any(p.rsplit("::", 1)[-1] in words for p in paths)}
    pending = list(used)
    while pending:
        for ref in signature_ids(doc, pending.pop()):
            if ref in by_id and ref not in used:
                used.add(ref)
                pending.append(ref)
    # One path per item: the shortest (a re-export at the root before its module's).
    unused = sorted(min(paths, key=lambda p: (p.count("::"), p)) for item_id, paths in by_id.items()
                    if item_id not in used)
    return by_id, used, unused


def check(doc, src):
    by_id, used, unused = unused_doors(doc, server_words(src))
    print(f"storage's doors: {len(by_id)} public items of wpds-storage as the server builds it "
          f"(rustdoc JSON format {doc.get('format_version')}), {len(used)} used by src/ "
          "or named in what it uses")
    if unused:
        print("storage's doors: public, yet the server never uses them (make each pub(crate), "
              "or public only with test-support):", file=sys.stderr)
        for path in unused:
            print(f"    - {path}", file=sys.stderr)
        return 1
    return 0


def self_test(doc, src):
    """The check fails where it should: on a public item added that the server does not
    name, and on one the server stops naming (src/ without main.rs, which alone calls
    `repos::auth::revoke`)."""
    import copy
    import shutil
    import tempfile
    failures = []
    _, _, unused = unused_doors(doc, server_words(src))
    if unused:
        failures.append(f"the real tree fails: {unused}")
    planted = copy.deepcopy(doc)
    module = next(item for item in planted["index"].values()
                  if item["name"] == "time_log" and kind(item) == "module")
    door = {"id": 10**9, "crate_id": 0, "name": "a_new_door", "visibility": "public", "docs": None,
            "links": {}, "attrs": [], "deprecation": None, "span": None,
            "inner": {"function": {"sig": {"inputs": [], "output": None, "is_c_variadic": False},
                                   "generics": {"params": [], "where_predicates": []},
                                   "header": {}, "has_body": True}}}
    planted["index"][str(door["id"])] = door
    module["inner"]["module"]["items"].append(door["id"])
    _, _, unused = unused_doors(planted, server_words(src))
    if unused != ["wpds_storage::repos::time_log::a_new_door"]:
        failures.append(f"a planted public function: reported {unused}")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True)
        (Path(tmp) / "main.rs").unlink()
        _, _, unused = unused_doors(doc, server_words(tmp))
    if "wpds_storage::repos::auth::revoke" not in unused:
        failures.append(f"src/ without main.rs: repos::auth::revoke not reported ({unused})")
    for failure in failures:
        print(f"storage's doors: self-test FAILED: {failure}", file=sys.stderr)
    if not failures:
        print("storage's doors: self-test passed: a planted public function and one the server "
              "stops naming are both reported")
    return 1 if failures else 0


def main():
    args = sys.argv[1:]
    test = args[:1] == ["--self-test"]
    if test:
        args = args[1:]
    doc = json.loads(Path(args[0]).read_text())
    return (self_test if test else check)(doc, args[1])


if __name__ == "__main__":
    sys.exit(main())
