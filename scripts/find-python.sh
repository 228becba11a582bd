#!/usr/bin/env bash
# Print the path of a Python >= 3.12 (Django 6 needs it). On these machines python3 is 3.11 and pyenv keeps
# 3.12 beside it; the pyenv `python3.12` shim answers only when PYENV_VERSION names it, so look in pyenv's
# versions folder directly.
set -euo pipefail
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for candidate in python3.12 python3.13 python3; do
  path=$(command -v "$candidate" 2>/dev/null || true)
  if [ -n "$path" ] && ok "$path"; then echo "$path"; exit 0; fi
done
if command -v pyenv >/dev/null 2>&1; then
  for dir in "$(pyenv root)"/versions/3.12* "$(pyenv root)"/versions/3.13*; do
    if [ -x "$dir/bin/python3" ] && ok "$dir/bin/python3"; then echo "$dir/bin/python3"; exit 0; fi
  done
fi
echo "No Python >= 3.12 found: install one (e.g. 'pyenv install 3.12') and run make again." >&2
exit 1
