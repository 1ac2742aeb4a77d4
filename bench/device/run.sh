#!/usr/bin/env bash
# The NVIDIA measurement as one prepared script (issue 45; the whole procedure is in bench/README.md, "On a GPU
# machine"). A lent GPU machine starts bare and is reached a few minutes at a time, and onnxruntime-gpu (about
# 256 MB) reaches it in parts, each carried by its own call. So:
#
#   bash bench/device/run.sh --keep DIR        every call but the last: copy the carried parts in DIR (inside
#                                              the repo, git-ignored) out of the repo, to $PARTS
#   bash bench/device/run.sh OUT               the last call: join the parts (checked against SHA256SUMS),
#                                              install onnxruntime-gpu, the other carried wheels and ortflow
#                                              with `pip install --target` (PYTHONPATH, so the image's
#                                              onnxruntime stays as it is), run the GPU-only tests and
#                                              bench/gpu.py; at most 8 minutes; its outputs under OUT
#   bash bench/device/run.sh --dry-run OUT     the same on a machine without a GPU (CI: tests/test_bench.py):
#                                              every check it can make, the GPU parts skipped with the reason
#
# OUT gets at most 6 files (the device tool brings back 8): run.log, summary.txt (one line a step: ok, skipped:
# why, FAILED: why), doctor.txt, and from bench/gpu.py table.md, results.json, gpu.log; the models stay in
# $WORK. The exit code is 0 unless a step really failed (a corrupt part, an install, a test, the table), 2 for
# wrong arguments.
#
# Settings: PYTHON (python3), PARTS (/tmp/ortflow-device/parts), WORK (/tmp/ortflow-device/work), TESTS_S (120)
# and BENCH_S (300): the two steps' time limits; BENCH_ARGS (--runs 200).
set -uo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
PARTS="${PARTS:-/tmp/ortflow-device/parts}"
WORK="${WORK:-/tmp/ortflow-device/work}"
TESTS_S="${TESTS_S:-120}"
BENCH_S="${BENCH_S:-300}"
BENCH_ARGS="${BENCH_ARGS:---runs 200}"
GPU_TESTS=(
    tests/test_cuda_graph.py
    "tests/test_attention_fusion.py::test_on_a_gpu_fused_fp16_attention_with_a_padding_mask_keeps_the_fp32_outputs"
)
USAGE="usage: bash bench/device/run.sh [--dry-run] OUT | --keep DIR (bench/README.md, 'On a GPU machine')"
FAILED=0
export PYTHONUNBUFFERED=1  # a step stopped at its time limit still leaves what it printed in run.log

say() { printf '%s\n' "$*" | tee -a "$OUT/summary.txt"; }
ok() { say "ok: $*"; }
skipped() { say "skipped: $*"; }
failed() { say "FAILED: $*"; FAILED=1; }

keep() {  # copy one call's carried parts out of the repo, where the next call's tree cannot replace them
    local from="$1"
    [ -d "$from" ] || { echo "bench/device/run.sh --keep: $from is not a folder — name the carried folder" >&2; exit 2; }
    mkdir -p "$PARTS" && cp -f "$from"/* "$PARTS"/ || exit 1
    echo "kept $(ls "$from" | wc -l) file(s) in $PARTS: $(ls "$PARTS" | tr '\n' ' ')"
    exit 0
}

join_parts() {  # NAME.part-aa, NAME.part-ab, ... -> $WORK/wheels/NAME, each whole file checked against SHA256SUMS
    local wheels="$WORK/wheels" name
    rm -rf "$wheels" && mkdir -p "$wheels"
    if ! ls "$PARTS"/* >/dev/null 2>&1; then
        return 1
    fi
    for name in $(ls "$PARTS" | grep '\.part-' | sed 's/\.part-.*//' | sort -u); do
        cat $(ls "$PARTS"/"$name".part-* | sort) >"$wheels/$name"
    done
    find "$PARTS" -maxdepth 1 -name '*.whl' -exec cp -f {} "$wheels"/ \;
    if [ ! -f "$PARTS/SHA256SUMS" ]; then
        failed "join: $PARTS/SHA256SUMS is missing — carry it with the first part (bench/README.md)"
        return 2
    fi
    if ! (cd "$wheels" && sha256sum --quiet -c "$PARTS/SHA256SUMS"); then
        failed "join: a file does not match $PARTS/SHA256SUMS (a part missing, truncated or from another download) — carry the parts again"
        return 2
    fi
    ok "join: $(ls "$wheels" | tr '\n' ' ')matches SHA256SUMS"
}

install() {  # the joined wheels and ortflow itself into $WORK/site, first on PYTHONPATH
    local site="$WORK/site"
    rm -rf "$site" && mkdir -p "$site"
    if ls "$WORK"/wheels/*.whl >/dev/null 2>&1 &&
        ! "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$WORK"/wheels/*.whl; then
        failed "install: pip could not install the carried wheels (run.log says why)"
        return 1
    fi
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    if "$PYTHON" -c "import ortflow.engine, sys; sys.exit(not ortflow.engine.__file__.startswith('$REPO/'))" 2>/dev/null; then
        ok "install: ortflow from this checkout is installed already (editable); used as is"
    elif ! "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation --target "$site" "$REPO"; then
        failed "install: pip could not build ortflow from $REPO offline (it needs setuptools >= 68 and wheel)"
        return 1
    fi
    ok "install: $(ls "$site" | grep -c 'dist-info$') distribution(s) into $site (first on PYTHONPATH)"
}

requirements() {  # every runtime requirement of ortflow importable, else the wheels to carry
    local missing
    missing="$("$PYTHON" - <<'EOF'
from importlib.metadata import PackageNotFoundError, requires, version
from packaging.requirements import Requirement

missing = []
for line in requires("ortflow") or []:
    need = Requirement(line)
    if need.marker is not None and not need.marker.evaluate({"extra": ""}):
        continue
    try:
        version(need.name)
    except PackageNotFoundError:
        missing.append(need.name)
print(" ".join(missing))
EOF
)" || { failed "requirements: ortflow's metadata cannot be read (is it installed?)"; return 1; }
    if [ -n "$missing" ]; then
        failed "requirements: not installed: $missing — carry their wheels (bench/README.md: pip download --no-deps ... $missing)"
        return 1
    fi
    ok "requirements: every runtime requirement of ortflow is installed"
}

cuda_libraries() {  # the pip-installed CUDA and cuDNN libraries (nvidia-* wheels, as torch's) on the loader's path
    local dirs
    dirs="$("$PYTHON" - <<'EOF'
import glob
import os

try:
    import nvidia
except ImportError:
    raise SystemExit(0)
found = {os.path.dirname(p) for r in nvidia.__path__ for p in glob.glob(os.path.join(r, "*", "lib", "lib*.so*"))}
print(":".join(sorted(found)))
EOF
)"
    if [ -z "$dirs" ]; then
        say "note: no pip-installed CUDA libraries (nvidia-* wheels): the loader's own path is used"
        return 0
    fi
    export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    ok "CUDA libraries: $(echo "$dirs" | tr ':' '\n' | wc -l) folders of nvidia-* wheels on LD_LIBRARY_PATH"
}

onnxruntime_build() {  # which onnxruntime the tests will import, and whether it is the GPU wheel
    "$PYTHON" -c "import onnxruntime as o; print(o.__version__, o.get_device(), o.__file__)"
}

gpu_usable() {  # empty when ONNX Runtime gets the CUDA provider here, else why not
    "$PYTHON" - <<'EOF'
from ortflow.engine.ort.providers import resolve

check = resolve(["CUDAExecutionProvider"])
print("" if "CUDAExecutionProvider" in check.usable else check.missing.get("CUDAExecutionProvider", "not listed"))
EOF
}

run_tests() {
    local code
    (cd "$REPO" && timeout "$TESTS_S" "$PYTHON" -P -m pytest -q -rs -p no:cacheprovider "${GPU_TESTS[@]}")
    code=$?
    case $code in
        0) ok "GPU tests: ${GPU_TESTS[*]}$1" ;;
        124) failed "GPU tests: over ${TESTS_S} s (TESTS_S)" ;;
        *) failed "GPU tests: pytest exited $code (run.log has its report)" ;;
    esac
}

run_bench() {
    local code
    mkdir -p "$WORK/gpu"
    if [ "$DRY" = 1 ]; then  # without a GPU: one line saying what is missing, exit 0 (--quick)
        (cd "$REPO" && "$PYTHON" bench/gpu.py --quick --out "$WORK/gpu") 2>&1 | tee "$OUT/gpu.log"
    else
        (cd "$REPO" && timeout "$BENCH_S" "$PYTHON" bench/gpu.py --out "$WORK/gpu" $BENCH_ARGS) 2>&1 | tee "$OUT/gpu.log"
    fi
    code=${PIPESTATUS[0]}
    cp -f "$WORK/gpu/table.md" "$WORK/gpu/results.json" "$OUT"/ 2>/dev/null
    if [ "$code" = 124 ]; then
        failed "bench/gpu.py: over ${BENCH_S} s (BENCH_S; BENCH_ARGS to shorten it)"
    elif [ "$code" != 0 ]; then
        failed "bench/gpu.py exited $code (gpu.log says why)"
    elif grep -q '^skipped: ' "$OUT/gpu.log"; then
        skipped "bench/gpu.py: $(grep '^skipped: ' "$OUT/gpu.log" | head -1 | sed 's/^skipped: //')"
    else
        ok "bench/gpu.py: table.md, results.json"
    fi
}

main() {
    local started=$SECONDS why joined
    : >"$OUT/summary.txt"
    say "bench/device/run.sh$([ "$DRY" = 1 ] && echo ' --dry-run') on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC'); repo $REPO"
    join_parts
    joined=$?
    [ "$joined" = 2 ] && return 1
    if [ "$joined" = 1 ]; then
        [ "$DRY" = 1 ] || { failed "join: no parts in $PARTS — carry them first (--keep DIR in each call)"; return 1; }
        skipped "join: no parts in $PARTS (a GPU run carries onnxruntime-gpu there first)"
    fi
    install || return 1
    requirements || return 1
    ls "$WORK"/wheels/onnxruntime_gpu-*.whl >/dev/null 2>&1 ||
        { [ "$DRY" = 1 ] || { failed "install: no onnxruntime_gpu-*.whl among the joined parts"; return 1; }; }
    ok "onnxruntime: $(onnxruntime_build)"
    cuda_libraries
    (cd "$WORK" && COLUMNS=200 "$PYTHON" -m ortflow.engine.cli doctor) >"$OUT/doctor.txt" 2>&1 || { failed "engine doctor (doctor.txt)"; return 1; }
    ok "engine doctor: $(grep 'CUDA provider:' "$OUT/doctor.txt" | sed 's/^ *//')"
    why="$(gpu_usable)" || { failed "the provider check did not run (run.log)"; return 1; }
    if [ -n "$why" ]; then
        [ "$DRY" = 1 ] || { failed "no usable CUDA provider: $why"; return 1; }
        skipped "the GPU: $why; the GPU-only tests skip, saying so"
        run_tests " (skipped without a GPU)"
    else
        run_tests ""
    fi
    run_bench
    say "$(( SECONDS - started )) s"
}

DRY=0
case "${1:-}" in
    --keep) [ $# = 2 ] || { echo "$USAGE" >&2; exit 2; }; keep "$2" ;;
    --dry-run) DRY=1; shift ;;
    -*|"") echo "$USAGE" >&2; exit 2 ;;
esac
[ $# = 1 ] || { echo "$USAGE" >&2; exit 2; }
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
mkdir -p "$WORK" && WORK="$(cd "$WORK" && pwd)"
# Python started in the repo's root would import its ortflow/ folder, which is not the package (pyproject's
# package-dir maps ortflow.engine to engine/): each step runs elsewhere, or with -P.
cd "$WORK" || exit 1
main 2>&1 | tee "$OUT/run.log"
[ "${PIPESTATUS[0]}" = 0 ] && [ "$(grep -c '^FAILED: ' "$OUT/summary.txt")" = 0 ]
