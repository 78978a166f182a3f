#!/usr/bin/env bash
# Run HERE (not on the GPU machine) before a device check: puts into ignored folders what the
# GPU machine lacks, within its 64 MiB carry limit.
#   .whl/                 cp312 wheels of xgrammar and its missing dependencies (~10 MB)
#   .device/smollm2-shape SmolLM2's config and tokenizer (no weights: they do not fit; the
#                         benchmark times random weights of the same shape)
# Then on the device: run(command="bash scripts/device_bench.sh", carry=[".whl", ".device"]).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
grep -qx '/.device/' .git/info/exclude || echo /.device/ >> .git/info/exclude
rm -rf .whl && mkdir -p .whl .device/smollm2-shape
for pkg in xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2 pydantic==2.14.4 pydantic-core==2.50.5 \
           annotated-types==0.8.0 typing-inspection==0.4.5 jsonschema==4.26.0 \
           jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$pkg"
done
folder=$(.venv/bin/python -c "
from evallocal.judges.defaults import default_llm_judge
from evallocal.judges.gguf import converted_folder
j = default_llm_judge(); print(converted_folder(j.gguf_path, j.gguf_sha256))")
cp "$folder"/{config.json,generation_config.json,tokenizer.json,tokenizer_config.json,chat_template.jinja} .device/smollm2-shape/
du -sh .whl .device
