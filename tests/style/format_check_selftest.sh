#!/usr/bin/env bash
# The format check fails on a badly formatted file and passes once it is fixed
# (so a green format_check means something).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v clang-format >/dev/null || { echo "clang-format not found" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/../../.clang-format" "$tmp/"
printf 'int  f( int x ){return x+1;}\n' >"$tmp/bad.cpp"
if "$here/format_check.sh" "$tmp" >/dev/null 2>&1; then
  echo "FAIL: a badly formatted file passed the check" >&2
  exit 1
fi
"$here/format_check.sh" --fix "$tmp" >/dev/null
"$here/format_check.sh" "$tmp" >/dev/null || { echo "FAIL: the fixed file still fails" >&2; exit 1; }
echo "format_check_selftest: ok"
