#!/usr/bin/env bash
# Fresh Debian 12 machine: install, build, and run the main job on the
# bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/run-example.sh "$@"
