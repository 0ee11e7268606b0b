#!/usr/bin/env bash
# Installs everything w4a8check needs to build and test on a fresh Debian 12 machine:
# Debian packages (compilers, CMake, GoogleTest, RapidCheck, Google Benchmark, CLI11, clang's libFuzzer
# and sanitizer runtimes, coverage tools, clang-tidy, libc++ and AFL++ for the OSS-Fuzz-style builds,
# python3-venv for the comfy-kitchen environment) and the PyPI packages the test oracles use.
# Idempotent: when everything is there it only checks (about a second).
# CUDA: nvcc is used when present (CUDA kernels then always compile); it is not installed here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

pkgs=(build-essential cmake ninja-build g++ clang libclang-rt-14-dev llvm
      googletest libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev libcli11-dev
      python3 python3-pip python3-venv zip unzip clang-tidy
      libc++-14-dev libc++abi-14-dev afl++
      chromium)  # headless rendering test of the audit's HTML report (tests/audit)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

py=${W4A8_PYTHON:-python3}
if ! "$py" -c 'import safetensors, numpy' 2>/dev/null; then
  "$py" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt" 2>/dev/null ||
    "$py" -m pip install -q --disable-pip-version-check --break-system-packages -r "$here/requirements.txt"
fi
"$py" -c 'import safetensors, numpy; print("python oracles: safetensors", safetensors.__version__, "numpy", numpy.__version__)'
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "CUDA: $( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) ) found; CUDA kernels will be compiled"
  # nvdisasm for the SASS-proxy test (ci/sass-proxies.sh), when the toolkit lacks it.
  nvd_dir=$HOME/.cache/w4a8check/nvdisasm
  if ! command -v nvdisasm >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvdisasm ] && [ ! -x "$nvd_dir/nvidia/cu13/bin/nvdisasm" ]; then
    "$py" -m pip install -q --disable-pip-version-check --target "$nvd_dir" nvidia-cuda-nvdisasm==13.5.37 ||
      echo "CUDA: nvdisasm not installed; the SASS-proxy test will report SKIPPED"
  fi
else
  echo "CUDA: nvcc not found; CUDA kernels will be skipped at configure time"
fi
