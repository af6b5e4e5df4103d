# Two commands for a fresh machine (see README.md):
#   make demo   trains the demo networks, computes their surfaces on 2 MPI ranks, draws demo_out/figures/
#   make test   runs the fast tier of the tests (a few minutes, no system packages installed)
# make install only creates the environment (the venv, torch, MPI, this package and its extras).
# make test-all runs every tier, installing the system tools some need (CI: .ci/run).
# Each creates or reuses the virtual environment $(VENV) and installs what it needs:
# torch first (the pinned CPU build; set TORCH=... for another), then MPI from PyPI.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_PIP ?=    # pip options for torch alone, e.g. --index-url https://download.pytorch.org/whl/cpu
PY := $(VENV)/bin/python
STAMP := $(VENV)/.landscape-installed

# The parallel-HDF5 stack: Debian's h5py built against Open MPI (no compiling).
PVENV ?= .venv-phdf5
PPY := $(PVENV)/bin/python
PSTAMP := $(PVENV)/.landscape-installed
# The tests let Python cache compiled modules even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): otherwise each command a test starts compiles the package again.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
OMPI_ROOT := OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1


.PHONY: install lint docs demo study figures test test-slow test-mpi test-faults test-browser test-more test-all \
	test-slurm test-phdf5 tools clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(TORCH_PIP) "$(TORCH)"
	$(PY) -m pip install -q mpi4py mpich
	$(PY) -m pip install -q -e ".[digits,mnist1d,test,lint]"
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m landscape demo

# The figures README.md shows, refreshed on purpose (demo and study write only to demo_out/, study_out/).
figures: $(STAMP)
	scripts/figures.sh

# The batch-size study: MNIST-1D MLPs, 2 arms x 4 batch sizes x 5 seeds, a rescaling control, the scorecard.
study: $(STAMP)
	$(PY) -m landscape study

# strace: the fault-injection test kills jobs before each of their writes.
# chromium and its driver: the export --html test opens the page in a real headless browser.
tools:
	@command -v strace >/dev/null || { command -v apt-get >/dev/null && \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends strace; }; } || \
	  echo "strace not installed: the fault-injection test will be skipped"
	@{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || \
	  { command -v apt-get >/dev/null && { apt-get update -qq && \
	    apt-get install -y -qq --no-install-recommends chromium chromium-driver; }; } || \
	  echo "chromium not installed: the browser test of export --html will be skipped"

# The manual (docs/, mkdocs.yml) into site_out/, strictly: a broken link or reference fails the build.
DSTAMP := $(VENV)/.landscape-docs
$(DSTAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[docs]"
	touch $@
docs: $(DSTAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# ruff (lint and format, pyproject.toml) and import-linter's contracts: no unit imports one above it.
lint: $(STAMP)
	$(VENV)/bin/ruff check landscape tests scripts examples docs/hooks.py
	$(VENV)/bin/ruff format --check landscape tests scripts examples docs/hooks.py
	$(VENV)/bin/lint-imports

# The fast tier: every test without a tier marker (markers: pyproject.toml). Installs no system
# package; a test that needs a tool that is absent skips and says why. Its tests are independent (each in
# its own temporary folder), so they run on every core (pytest-xdist; WORKERS=1 for one process).
WORKERS ?= auto
test: $(STAMP)
	$(PYTEST) -q -n $(WORKERS)

# One tier at a time, for developers.
test-slow: $(STAMP)
	$(PYTEST) -q -n $(WORKERS) -m "slow and not mpi and not faults and not browser"
	$(PYTEST) -q -m "slow and (mpi or faults or browser)"
test-mpi: $(STAMP)
	$(PYTEST) -q -m mpi
test-faults: $(STAMP) tools
	$(PYTEST) -q -m faults
test-browser: $(STAMP) tools
	$(PYTEST) -q -m browser

# Every tier but the fast one (CI runs make test first).  The slow tests that launch no MPI job and
# inject no fault run on every core, as the fast tier does (12:56 instead of 18:49 on the 2-core VM,
# 2026-12-07); the MPI, fault and browser tests, which time ranks and kills, one at a time.
test-more: $(STAMP) tools
	$(PYTEST) -q -n $(WORKERS) -m "slow and not mpi and not faults and not browser"
	$(PYTEST) -q -m "mpi or faults or browser"
	$(MAKE) test-slurm test-phdf5

test-all: test test-more

# The sbatch scripts on a one-node Slurm that the tests start (Debian's slurm and munge; root).
test-slurm: $(STAMP)
	$(PYTEST) -q -m slurm

$(PSTAMP): setup.cfg pyproject.toml
	command -v mpiexec.openmpi >/dev/null && /usr/bin/python3 -c "import h5py" 2>/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-h5py-mpi python3-venv; }
	/usr/bin/python3 -m venv --system-site-packages $(PVENV)
	$(PPY) -c "import torch" 2>/dev/null || $(PPY) -m pip install -q "$(TORCH)"
	$(PPY) -m pip install -q "numpy<2" pytest pytest-timeout scikit-learn matplotlib
	$(PPY) -m pip install -q --no-deps -e .
	touch $@

# MPI tests again, on parallel HDF5: every rank writes through driver='mpio'.
test-phdf5: $(PSTAMP)
	$(OMPI_ROOT) LANDSCAPE_MPIEXEC="mpiexec.openmpi --oversubscribe" LANDSCAPE_TEST_MPIO=1 \
	  $(PPY) -m pytest -q -p no:cacheprovider -m "not slurm and not gpu and not browser" \
	  tests/surface/test_job_mpi.py tests/surface/test_job_resume.py \
	  tests/parallel/test_stop.py tests/io/test_lock.py tests/parallel/test_comm.py

clean:
	rm -rf demo_out study_out site_out .pytest_cache
