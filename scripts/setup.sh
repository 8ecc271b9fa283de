#!/usr/bin/env bash
# Installs what fa-opt needs on Debian 12: LLVM/MLIR 22, ninja, cmake, and
# numpy for the CPU test harness. Idempotent; run as root or with sudo.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PKGS=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools ninja-build cmake g++ python3)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if [ ! -x /usr/lib/llvm-22/bin/mlir-opt ]; then
  echo "setup: error: LLVM/MLIR 22 is not installed under /usr/lib/llvm-22" >&2
  echo "setup: Debian 12 ships it from bookworm-security (apt-get update, then the packages above)" >&2
  exit 1
fi

# numpy for the float64 reference of the CPU tests; pytest for python/.
if ! python3 -c "import numpy, pytest" 2>/dev/null; then
  echo "setup: installing numpy and pytest"
  python3 -m pip install -q numpy pytest 2>/dev/null \
    || python3 -m pip install -q --break-system-packages numpy pytest 2>/dev/null \
    || { $SUDO apt-get install -y -qq python3-numpy python3-pytest; }
fi
python3 -c "import numpy, pytest" || { echo "setup: error: numpy/pytest unavailable" >&2; exit 1; }

# cuobjdump + nvdisasm (NVIDIA's wheels) for the SASS checks of the lit suite
# (the toolkit here has only nvcc and ptxas). Best effort: without them those
# tests are reported unsupported.
if [ -x /usr/local/cuda/bin/ptxas ] && ! [ -x /usr/local/cuda/bin/cuobjdump ] \
   && ! python3 -c "import sysconfig, os, sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()['purelib'], 'nvidia/cu13/bin/cuobjdump')) else 1)"; then
  echo "setup: installing cuobjdump and nvdisasm (pip wheels)"
  python3 -m pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm 2>/dev/null \
    || python3 -m pip install -q --break-system-packages nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm 2>/dev/null \
    || echo "setup: note: cuobjdump unavailable; SASS tests will be skipped"
fi

if [ -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: ptxas found at /usr/local/cuda/bin/ptxas (PTX validation tests enabled)"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda: PTX validation tests and the runtime are skipped"
fi
