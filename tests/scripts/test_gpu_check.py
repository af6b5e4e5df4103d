"""scripts/gpu_check.sh, the GPU checks in one run, cannot run here for real (no GPU); its commands are
checked at toy sizes on the CPU (GPU_CHECK_SMOKE), and its time budget, which keeps the whole run
under 8 minutes on a lent GPU machine, with a budget too small for its steps."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.sh"


def _check(**env) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [str(SCRIPT)],
        env={**os.environ, "PY": sys.executable, "GPU_CHECK_SMOKE": "1", **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, time.monotonic() - started


@pytest.mark.slow
def test_its_three_steps_run_at_toy_sizes_on_the_cpu():
    done, _ = _check()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "speed-up over the reference settings" in done.stdout  # the benchmark's table
    assert "wrote " in done.stdout and "final.pt" in done.stdout  # the training's checkpoint
    assert done.stdout.startswith("CPU smoke run at toy sizes") and "no CUDA device" in done.stdout
    assert done.stdout.rstrip().endswith("all steps ran (CPU smoke run: nothing checked on a GPU)")
    assert "Traceback" not in done.stdout + done.stderr


def test_no_step_runs_past_its_budget():
    done, seconds = _check(GPU_CHECK_SECONDS="12")
    assert done.returncode == 1
    assert "resnet20 benchmark (not run: under 10 s of the 12 s budget left)" in done.stdout, done.stdout
    assert "GPU training (not run: under 10 s of the 12 s budget left)" in done.stdout
    assert seconds < 30, seconds


def test_without_a_gpu_the_real_run_fails_at_once_instead_of_passing_skipped_tests():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    done, seconds = _check(GPU_CHECK_SMOKE="")
    assert done.returncode == 1 and "FAILED: no CUDA device visible to torch" in done.stdout, done.stdout
    assert "== GPU tests" not in done.stdout
