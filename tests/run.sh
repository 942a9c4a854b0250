#!/usr/bin/env bash
# The README's test command: installs what the tests need on a fresh machine (a virtual environment with
# requirements.txt + tests/requirements.txt, and Debian's Chromium for the browser tests), then runs ruff
# and every test. `.ci/run` runs exactly this. Arguments go to pytest: `tests/run.sh -m "not browser"` leaves out the
# browser tests (tests/test_browser*.py), `-m browser` runs only them.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q -r requirements.txt -r tests/requirements.txt
if ! command -v chromium >/dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
"$VENV/bin/ruff" check .
# Two workers (pytest-xdist), one test file each at a time, the browser files first (tests/conftest.py): the two cores
# are busy all along (Chromium, the apps, the tests). On a quiet 2-core machine this whole command took 4 min 52 s to
# 5 min 36 s on an AMD EPYC (five runs in one day, before later cuts of a page load's CPU), and 6 min 55 s to 7 min 29 s
# (780 to 850 CPU-s) on a slower Intel Xeon whose speed drifts within a day; with a CPU-heavy process looping beside it,
# 9 to 10.5 min. A third worker (-n 3) was slower, the cores being the limit.
"$VENV/bin/python" -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder tests "$@"
