#!/usr/bin/env python3
"""Rewrites the field tables of docs/fields.md from `vigil fields --json`.

Each "## ... (prefix.*...)" section's table is regenerated from the catalogue,
in catalogue order; the prose around the tables stays as written. Run from the
repository root after adding or changing a field:

    scripts/update-fields-doc.py [path/to/vigil]
"""
import json
import re
import subprocess
import sys

vigil = sys.argv[1] if len(sys.argv) > 1 else "build/vigil"
fields = json.loads(subprocess.run([vigil, "fields", "--json"], check=True,
                                   capture_output=True, text=True).stdout)
doc = open("docs/fields.md", encoding="utf-8").read().split("\n")


def row(f):
    name = f["name"] + (f["arg"].split()[0] if f["arg"] else "")
    desc = f["description"].replace("|", "\\|")
    return f"| `{name}` | {f['type']} | {f['events']} | {desc} |"


out, placed, i = [], set(), 0
while i < len(doc):
    line = doc[i]
    out.append(line)
    m = re.match(r"## .*\((\w+)\.\*", line)
    if not m:
        i += 1
        continue
    prefix = m.group(1) + "."
    i += 1
    # Copy up to the table's header and separator, then replace its rows.
    while i < len(doc) and not doc[i].startswith("|"):
        out.append(doc[i])
        i += 1
    out.extend(doc[i:i + 2])
    i += 2
    while i < len(doc) and doc[i].startswith("|"):
        i += 1
    for f in fields:
        if f["name"].startswith(prefix):
            out.append(row(f))
            placed.add(f["name"])
missing = [f["name"] for f in fields if f["name"] not in placed]
if missing:
    sys.exit("docs/fields.md has no section for: " + ", ".join(missing))
open("docs/fields.md", "w", encoding="utf-8").write("\n".join(out))
