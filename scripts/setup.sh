#!/usr/bin/env bash
# Set up rocketrl: a virtual environment in .venv, PyTorch, and the package with its test tools.
# The venv sees the creating interpreter's packages, so a PyTorch already installed there (a CUDA
# build, say) is kept.
#   ROCKETRL_TORCH_INDEX_URL=<index>  install torch from that package index instead
#   PYTHON=python3.11                 interpreter used to create .venv
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv --system-site-packages .venv
fi
py=.venv/bin/python
"$py" -m pip install --quiet --upgrade pip

if "$py" -c "import torch" 2>/dev/null; then
  echo "keeping installed torch $("$py" -c 'import torch; print(torch.__version__)')"
elif [ -n "${ROCKETRL_TORCH_INDEX_URL:-}" ]; then
  "$py" -m pip install --quiet torch --index-url "$ROCKETRL_TORCH_INDEX_URL"
else
  # 2.13.0: the release our CPU-only machines carry as a local CPU build; a CUDA machine that
  # already has torch keeps its own (above).
  "$py" -m pip install --quiet "torch==2.13.0"
fi

"$py" -m pip install --quiet -e ".[test]"
"$py" -m rocketrl.cli info
