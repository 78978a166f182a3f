#!/usr/bin/env bash
# Runs ON the GPU machine (see prepare_device_bench.sh): the judge benchmarks on CUDA, logs in $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/gpu.txt"
# the shipped NLI model travels with the repo; the LLM is SmolLM2's shape with random weights
python3 scripts/bench_judge.py --quick --model .device/smollm2-shape --random-weights --batch-size 64 2>&1 | tee "$OUT/quick-b64.log"
python3 scripts/bench_judge.py --skip-nli --model .device/smollm2-shape --random-weights --batch-size 256 2>&1 | tee "$OUT/full-b256.log"
