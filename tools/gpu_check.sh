#!/usr/bin/env bash
# The GPU check: run weft's CUDA path on a real GPU and write a report.
#
#   tools/gpu_check.sh              on a GPU machine (no network needed)
#   tools/gpu_check.sh --simulate   dry run on a CPU machine, against tests/cuda_fake_driver.py
#
# In the repository root it installs weft without network, then runs, each phase under its own time
# limit: a smoke test (tools/gpu_smoke.py), tests/test_cuda_runtime.py, the examples bounce, cloth
# and torch_optimize on cuda:0, the benchmark rows saxpy / n-body / cloth on cuda:0 next to the CPU,
# and the whole test suite with its device-parametrised tests on cuda:0 (tests/devices.py). After
# every phase it rewrites $OUT/report.md (tools/gpu_report.py: passed / failed / skipped, failures
# with their messages, timings, the GPU, driver and CUDA versions) and $OUT/logs.tar.gz, so a run
# cut short still leaves its report. $OUT defaults to ./gpu_check_out; GPU_CHECK_BUDGET (seconds,
# default 480) bounds the whole run, the suite getting what the other phases leave;
# GPU_CHECK_PHASES (default: all) names the phases to run, e.g. "install smoke cuda_runtime suite".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT="${OUT:-$ROOT/gpu_check_out}"
LOGS="$(mktemp -d)/logs"
mkdir -p "$OUT" "$LOGS"
PY="${PYTHON:-python3}"
BUDGET="${GPU_CHECK_BUDGET:-480}"
DEVICE=cuda:0
export WEFT_CACHE_DIR="${WEFT_CACHE_DIR:-$ROOT/.gpu-check-cache}"
export PYTHONUNBUFFERED=1
export PYTHONFAULTHANDLER=1  # a crash prints the Python stack of every thread
# JAX would take 75 % of the GPU's memory in every process that touches it (the suite runs many)
export XLA_PYTHON_CLIENT_PREALLOCATE=false
RUN=("$PY")
if [ "${1:-}" = "--simulate" ]; then
    RUN=("$PY" tests/simulated_cuda.py)
    export WEFT_TEST_SIMULATED_CUDA=1
    echo "simulated driver (dry run)" >"$LOGS/mode.txt"
else
    echo "real GPU" >"$LOGS/mode.txt"
fi
START=$(date +%s)
NPROC=$(nproc 2>/dev/null || echo 2)

left() { echo $((BUDGET - ($(date +%s) - START))); }

report() {
    "$PY" tools/gpu_report.py "$LOGS" "$OUT/report.md" >/dev/null 2>>"$LOGS/report_errors.log"
    tar -czf "$OUT/logs.tar.gz.tmp" -C "$(dirname "$LOGS")" logs && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"
}

# phase NAME LIMIT CMD...: run CMD with output in $LOGS/NAME.log, at most LIMIT seconds (and never
# past the budget); record its exit code and duration, then refresh the report.
phase() {
    local name=$1 limit=$2
    shift 2
    case " ${GPU_CHECK_PHASES:-$name} " in *" $name "*) ;; *) return ;; esac
    local budget_left
    budget_left=$(left)
    if [ "$budget_left" -lt 15 ]; then
        echo "$name skipped 0 (budget spent)" >>"$LOGS/phases.txt"
        return
    fi
    [ "$limit" -gt "$budget_left" ] && limit=$budget_left
    local t0=$(date +%s)
    echo "== $name (limit ${limit}s): $*" >"$LOGS/$name.log"
    # SIGINT first: pytest still writes its JUnit file and summary, the benchmarks their rows so far
    timeout -s INT -k 20 "$limit" "$@" >>"$LOGS/$name.log" 2>&1
    local rc=$?
    echo "$name $rc $(($(date +%s) - t0))" >>"$LOGS/phases.txt"
    report
}

{
    date -u
    echo "--- nvidia-smi"; nvidia-smi 2>&1 | head -20
    echo "--- nvidia-smi query"; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
    echo "--- python"; "$PY" -c "import sys; print(sys.version)"
    echo "--- packages"; "$PY" -m pip list 2>/dev/null | grep -i -E "^(cuda|nvidia-cuda-nvrtc|torch |jax |jaxlib|numpy|pytest)" 
    echo "--- compilers"; (g++ --version || c++ --version || clang++ --version) 2>&1 | head -1; nvcc --version 2>&1 | tail -2
    echo "--- cpu"; echo "$NPROC cores"; grep -m1 "model name" /proc/cpuinfo
} >"$LOGS/env.log" 2>&1

phase install 180 "$PY" -m pip install --no-deps --no-build-isolation -e .
phase smoke 90 "${RUN[@]}" tools/gpu_smoke.py --device $DEVICE
phase cuda_runtime 150 "$PY" -m pytest -q -rfEs -p no:cacheprovider --timeout 120 \
    --junitxml="$LOGS/cuda_runtime.xml" tests/test_cuda_runtime.py tests/test_cuda_runtime_simulated.py
phase example_bounce 90 "${RUN[@]}" -m weft.examples.bounce --device $DEVICE --out "$LOGS/bounce"
phase example_cloth 150 "${RUN[@]}" -m weft.examples.cloth --device $DEVICE --no-gif --out "$LOGS/cloth"
phase example_torch_optimize 90 "${RUN[@]}" -m weft.examples.torch_optimize --device $DEVICE
phase benchmarks 150 "${RUN[@]}" benchmarks/run.py --device $DEVICE --no-warp --quick --budget 1.0 --deadline 110 \
    --only saxpy nbody cloth --json "$LOGS/benchmarks.json"
WORKERS=$((NPROC > 14 ? 14 : NPROC))
phase suite 900 env WEFT_TEST_DEVICES=$DEVICE "$PY" -m pytest -q -rfEs -p no:cacheprovider --timeout 300 -n "$WORKERS" \
    --junitxml="$LOGS/suite.xml" tests --deselect tests/test_cuda_codegen.py::test_every_suite_kernel_compiles_for_cuda
report
echo "gpu_check: $(($(date +%s) - START)) s; report in $OUT/report.md"
