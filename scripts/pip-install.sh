#!/usr/bin/env bash
# Usage: scripts/pip-install.sh LOCK PIP...   (e.g. scripts/pip-install.sh requirements/lock.txt .venv/bin/python -m pip)
# Install a lock with hashes and show one line per package as pip reaches it ("[12/139] django==6.1.3"), so the
# first `make run` (minutes of downloads) is not silent. pip's warnings and errors still go to stderr.
set -euo pipefail
lock=$1
shift
total=$(grep -c '^[A-Za-z0-9]' "$lock")
echo "Installing $total Python packages from $lock (the first time downloads them: a few minutes)"
"$@" install --require-hashes --progress-bar off -r "$lock" | awk -v total="$total" '
  /^Collecting / || /^Requirement already satisfied: / {
    n++
    printf "  [%d/%d] %s\n", n, total, ($1 == "Collecting" ? $2 : $4)
    fflush()
    next
  }
  /^Installing collected packages/ { print "  Unpacking and installing them..."; fflush(); next }
  /^Successfully installed/ { print "  Done."; fflush() }
'
