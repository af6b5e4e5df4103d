"""The package as a whole: how its code is laid out (the layers themselves: import-linter, make lint)."""

import ast
import re
from pathlib import Path

import landscape

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "landscape"
TESTS = ROOT / "tests"
SUPPORT = {"conftest.py", "plugins.py"}  # helpers the tests share


def modules() -> dict[str, Path]:
    return {str(p.relative_to(PACKAGE).with_suffix("")): p for p in PACKAGE.rglob("*.py")}


def test_each_test_file_mirrors_the_module_it_tests():
    """tests/<folder>/test_<module>[_<aspect>].py tests landscape/<folder>/<module>.py (or the package
    <module>/, or the folder's own __init__ as test_<folder>...); tests/slurm/ the scripts of scripts/slurm;
    tests/scripts/test_<name>.py the script scripts/<name>.sh or .py."""
    known = modules()
    orphans = []
    for test in sorted(TESTS.rglob("test_*.py")):
        folder = test.parent.relative_to(TESTS)
        if folder.parts[:1] == ("slurm",):
            assert list((ROOT / "scripts" / "slurm").glob("*.sbatch")), "tests/slurm/ tests scripts/slurm/"
            continue
        if folder.parts[:1] == ("scripts",):
            name = test.stem[len("test_") :]
            if not any((ROOT / "scripts" / f"{name}{ext}").exists() for ext in (".sh", ".py")):
                orphans.append(str(test.relative_to(ROOT)))
            continue
        words = test.stem[len("test_") :].split("_")
        prefixes = ["_".join(words[:n]) for n in range(len(words), 0, -1)]
        package = folder.parts[-1] if folder.parts else "landscape"
        base = "" if str(folder) == "." else f"{folder}/"
        if not any(f"{base}{p}" in known or f"{base}{p}/__init__" in known or p == package for p in prefixes):
            orphans.append(str(test.relative_to(ROOT)))
    assert not orphans, f"test files that mirror no module: {orphans}"


# The modules without a test file of their own name, each with the test file that covers it (and names it):
# a short list, reviewed; a module added to the package gets its own test file instead.
COVERED_ELSEWHERE = {
    "models/blocks.py": "tests/models/test_zoo.py",  # the paper's architectures: every registry model's
    "models/densenet.py": "tests/models/test_zoo.py",  # parameter count, layer list and the reference
    "models/resnet.py": "tests/models/test_zoo.py",  # code's outputs on fixed weights, model by model
    "models/vgg.py": "tests/models/test_zoo.py",
    "version.py": "tests/cli/test_main.py",  # landscape --version prints it
    "train/session.py": "tests/train/test_rows.py",  # two dataclasses: the rows and records tests build them
}


def _owner(test: str, stems: list[str]) -> str | None:
    """The module a test file is named after: the longest stem it is test_<stem> or test_<stem>_<aspect> of
    (test_resnet_imagenet.py tests resnet_imagenet.py, not resnet.py)."""
    named = [s for s in stems if test == f"test_{s}" or test.startswith(f"test_{s}_")]
    return max(named, key=len) if named else None


def test_each_module_has_a_test_file_of_its_name_or_is_listed_as_covered_elsewhere():
    """landscape/<folder>/<module>.py is tested by tests/<folder>/test_<module>[_<aspect>].py, or listed in
    COVERED_ELSEWHERE with the test file that covers it, which must name it."""
    alone, stale = [], []
    for name, path in sorted(modules().items()):
        if path.stem in ("__init__", "__main__"):
            continue
        folder = TESTS / path.parent.relative_to(PACKAGE)
        siblings = [p.stem for p in path.parent.glob("*.py")]
        own = [t for t in folder.glob(f"test_{path.stem}*.py") if _owner(t.stem, siblings) == path.stem]
        listed = COVERED_ELSEWHERE.get(f"{name}.py")
        if own and listed:
            stale.append(f"{name}.py")  # it has its own test file now: off the list
        elif not own and (listed is None or path.stem not in (ROOT / listed).read_text()):
            alone.append(f"{name}.py")
    assert not alone, f"modules with no test file of their name (write one, or list the one that covers it): {alone}"
    assert not stale, f"listed as covered elsewhere but tested by a file of their name: {stale}"
    assert set(COVERED_ELSEWHERE) <= {f"{n}.py" for n in modules()}, "a listed module no longer exists"


def test_torch_internals_are_reached_in_one_module_only():
    private = re.compile(r"torch\._[a-z]|\._forward(_pre)?_hooks|_global_forward")
    users = sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if private.search(p.read_text()))
    assert users == ["landscape/surface/kernels/compiled.py"]


def test_the_package_imports_its_parts_at_the_top_of_modules():
    """An import of another part inside a function hides a dependency (and a cycle); only the package's
    own lazy API (``import landscape`` stays light) does it."""
    inside = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and (sub.level or (sub.module or "").startswith("landscape")):
                        inside.append(f"{name}:{sub.lineno}")
    assert inside == ["__init__:26"], inside


def test_importing_landscape_is_light_and_the_api_is_reached_through_it():
    import subprocess
    import sys

    code = "import sys, landscape; print('torch' in sys.modules); landscape.loss_surface; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr
    assert landscape.__version__


def test_the_pages_name_files_as_they_are():
    """Every file of the code, scripts, tests or examples that README, the manual, BENCHMARKS or the
    changelog names exists (a module that moved must not leave its old name in the docs)."""
    named = re.compile(r"(?<![\w/.])((?:landscape|scripts|tests|examples)/[\w/.*-]*[\w*/])")
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    missing = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in pages
        for path in named.findall(page.read_text())
        if not (any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists())
    ]
    assert not missing, missing


def test_the_code_layout_in_the_manual_names_every_module():
    """docs/contributing.md's layout names every module of the package by its name (a new or renamed
    module must be placed there)."""
    page = (ROOT / "docs" / "contributing.md").read_text()
    layout = page.split("## Code layout", 1)[1].split("```", 2)[1]
    words = set(re.findall(r"[\w.]+", layout))
    unnamed = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.stem not in ("__init__", "__main__") and path.stem not in words and path.name not in words
    ]
    assert not unnamed, unnamed


def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300  # the manual is docs/
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert "docs/curvature.md" in targets and "docs/clusters.md" in targets and "docs/plugins.md" in targets
    broken = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not broken, broken
