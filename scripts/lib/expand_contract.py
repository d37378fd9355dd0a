#!/usr/bin/env python3
"""Expand, then contract: no migration may break the release before it (scripts/check-migrations).

During a rolling upgrade the release before serves on the migrated schema, and after a
rollback it serves there for good (docs/operations.md, "Upgrading"), so a release's
migration may only add: tables, columns it need not write, indexes, functions. What breaks
the release before:

- PostgreSQL, read by squawk (a linter teams run on their migrations in CI), whose rules
  among its others name each break: renaming-column, renaming-table, changing-column-type,
  ban-drop-column, ban-drop-table, adding-required-field (a NOT NULL column without a
  default: the release before inserts without it), adding-not-nullable-field.
- SQLite, read by a pattern: its ALTER TABLE knows RENAME TO, RENAME COLUMN, ADD COLUMN and
  DROP COLUMN, so every ALTER TABLE but ADD COLUMN breaks it, as does DROP TABLE and an ADD
  COLUMN … NOT NULL without a DEFAULT.

The contract step, once no release that could still serve reads what it drops, says so on
its up.sql's first line: `-- contract: <why the release before no longer reads it>`; it then
passes, its reason printed.

Usage: expand_contract.py SQUAWK MIGRATIONS_DIR            (exit 1 on a break)
       expand_contract.py SQUAWK MIGRATIONS_DIR --self-test
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BREAKS = {
    "renaming-column", "renaming-table", "changing-column-type", "ban-drop-column",
    "ban-drop-table", "adding-required-field", "adding-not-nullable-field",
}
CONTRACT = re.compile(r"\s*--\s*contract:\s*(\S.*)")


def statements(sql):
    """The statements of `sql`, comments dropped (SQLite's migrations hold no functions)."""
    sql = re.sub(r"--[^\n]*", "", sql)
    return [s.strip() for s in sql.split(";") if s.strip()]


def sqlite_breaks(sql):
    """Why each statement of a SQLite migration breaks the release before, if it does."""
    found = []
    for statement in statements(sql):
        flat = " ".join(statement.split())
        upper = flat.upper()
        if upper.startswith("DROP TABLE"):
            found.append(("drop-table", flat))
        elif upper.startswith("ALTER TABLE"):
            if " ADD COLUMN " not in upper and not re.match(r"ALTER TABLE \S+ ADD ", upper):
                found.append(("alter-table-other-than-add-column", flat))
            elif " NOT NULL" in upper and " DEFAULT " not in upper:
                found.append(("add-column-not-null-without-default", flat))
    return found


def check(squawk, root):
    """Prints each break (or contract step) under `root`; whether there was a break."""
    broken = False
    migrations = sorted(p for p in root.glob("*/*/up.sql"))
    contracted = {}
    for up in migrations:
        first = up.read_text().split("\n", 1)[0]
        match = CONTRACT.match(first)
        if match:
            contracted[up] = match.group(1)
            print(f"check-migrations: contract step, allowed: {up.relative_to(root)}: {match.group(1)}")
    postgres = [up for up in migrations if up.parent.parent.name == "postgres" and up not in contracted]
    if postgres:
        out = subprocess.run([squawk, "--reporter", "json", "--pg-version", "15", *map(str, postgres)],
                             capture_output=True, text=True)
        try:
            findings = json.loads(out.stdout or "[]")
        except json.JSONDecodeError:
            print(f"check-migrations: squawk's answer is not JSON (exit {out.returncode}):\n{out.stdout}{out.stderr}",
                  file=sys.stderr)
            return True
        for finding in findings:
            if finding["rule_name"] in BREAKS:
                broken = True
                where = Path(finding["file"]).relative_to(root)
                print(f"check-migrations: BREAKS the release before: {where}:{finding['line'] + 1}: "
                      f"{finding['rule_name']}: {finding['message']}", file=sys.stderr)
    for up in migrations:
        if up.parent.parent.name != "sqlite" or up in contracted:
            continue
        for rule, statement in sqlite_breaks(up.read_text()):
            broken = True
            print(f"check-migrations: BREAKS the release before: {up.relative_to(root)}: {rule}: {statement}",
                  file=sys.stderr)
    print(f"check-migrations: {len(migrations)} migrations read "
          f"({len(postgres)} PostgreSQL by squawk, the SQLite ones by pattern): "
          f"{'a break of the release before' if broken else 'every one only expands'}")
    return broken


def self_test(squawk, root):
    """A migration renaming a column and changing a type, on each engine, is refused with
    its causes; the same drop marked as a contract step passes."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "migrations"
        shutil.copytree(root, copy)
        planted = {
            "postgres": "ALTER TABLE time_log_entries RENAME COLUMN note TO remark;\n"
                        "ALTER TABLE time_log_entries ALTER COLUMN hours_centi TYPE NUMERIC(6, 2);\n",
            "sqlite": "ALTER TABLE time_log_entries RENAME COLUMN note TO remark;\n",
        }
        for engine, sql in planted.items():
            folder = copy / engine / "9999-12-31-000001_break"
            folder.mkdir()
            (folder / "up.sql").write_text(sql)
        out = subprocess.run([sys.executable, __file__, squawk, str(copy)], capture_output=True, text=True)
        for cause in ("renaming-column", "changing-column-type", "alter-table-other-than-add-column"):
            if cause not in out.stderr:
                failures.append(f"the planted break is not named {cause}")
        if out.returncode != 1:
            failures.append(f"the planted break exits {out.returncode}, not 1")
        for engine in planted:
            up = copy / engine / "9999-12-31-000001_break" / "up.sql"
            up.write_text("-- contract: 1.0.0 and later never read time_log_entries.note\n"
                          "ALTER TABLE time_log_entries DROP COLUMN note;\n")
        out = subprocess.run([sys.executable, __file__, squawk, str(copy)], capture_output=True, text=True)
        if out.returncode != 0 or "contract step, allowed" not in out.stdout:
            failures.append(f"a marked contract step is refused (exit {out.returncode}): {out.stderr}")
    for failure in failures:
        print(f"check-migrations: self-test FAILED: {failure}", file=sys.stderr)
    if not failures:
        print("check-migrations: self-test passed: a planted rename and type change are refused on both engines, "
              "naming renaming-column, changing-column-type and alter-table-other-than-add-column; a marked "
              "contract step passes")
    return 1 if failures else 0


def main():
    squawk, root = sys.argv[1], Path(sys.argv[2])
    if sys.argv[3:] == ["--self-test"]:
        return self_test(squawk, root)
    return 1 if check(squawk, root) else 0


if __name__ == "__main__":
    sys.exit(main())
