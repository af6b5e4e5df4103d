"""Importing user code named as ``package.module:factory`` or ``path/to/file.py:factory``, and the
factory's keyword arguments (``--model_args``, ``--data_args``: a JSON object).

A plug-in is recorded by where its code is, not by how it was named: a file path is made absolute, and
a module imported from the current folder is recorded as its file's absolute path, so ``report`` or a
resume finds it from any folder.  A file inside a package (folders with ``__init__.py``) is imported
under its package's dotted name, the package's parent folder on ``sys.path``: the file's path gives
both where the code is and the module name, and the package's relative imports keep working.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

from . import checks
from .errors import ConfigError, InputError, UsageError, describe, param

MODEL_ARGS_HELP = (
    "keyword arguments of a plug-in model factory, a JSON object: '{\"width\": 64}' (default: the ones a "
    "landscape train checkpoint records, else none)"
)
DATA_ARGS_HELP = (
    "keyword arguments of a plug-in data set factory, a JSON object: '{\"n\": 512}' (default: the ones a "
    "landscape train checkpoint records for its data set, else none; '{}': none)"
)
ARGS_EXPECTED = "a JSON object of the factory's keyword arguments, e.g. '{\"width\": 64}'"


def is_plugin(spec: str) -> bool:
    return ":" in spec


def factory_args(value, field: str) -> str:
    """``value`` (a JSON object's text, a dict, or nothing) as canonical JSON text, keys sorted; "" for
    none.  The text is what a run records and what a resume compares, so it must not depend on spacing
    or key order."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        try:
            value = checks.json_loads(value)
        except ValueError as exc:
            raise ConfigError(field, value, f"{ARGS_EXPECTED} ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(field, value, ARGS_EXPECTED, literal=True)
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False) if value else ""
    except (TypeError, ValueError):
        raise ConfigError(field, value, f"{ARGS_EXPECTED} of plain values (numbers, strings, lists)") from None


def _package_root(path: str) -> tuple[str, str]:
    """The folder to put on ``sys.path`` and the dotted module name of the file ``path``: its package's
    parent and ``pkg.sub.mod`` inside a package, else its own folder and its stem."""
    folder, name = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(name)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    return folder, ".".join(parts) or stem


def _import_file(path: str, what: str, spec: str):
    root, dotted = _package_root(path)
    try:
        if "." in dotted:  # inside a package: its dotted name, so relative imports work
            if root not in sys.path:
                sys.path.insert(0, root)
            return importlib.import_module(dotted)
        name = "landscape_plugin_" + dotted  # a lone file: a private name that shadows no installed module
        if root not in sys.path:
            sys.path.append(root)  # its neighbours import, after everything installed: they shadow nothing
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == os.path.abspath(path):
            return sys.modules[name]
        loader_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        loader_spec.loader.exec_module(module)
        return module
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code; report it as one line
        raise InputError(f"{what} {spec!r}: importing {path} failed: {describe(exc)}") from None


def _with_current_folder() -> None:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would, so local modules import


def load_object(spec: str, what: str):
    """Return the callable named by ``spec``; every failure is one clear line."""
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise UsageError(f"{what} {spec!r}: expected package.module:factory or path/to/file.py:factory")
    if module_name.endswith(".py"):
        if not os.path.isfile(module_name):
            raise InputError(f"{what} {spec!r}: file {module_name} does not exist")
        module = _import_file(module_name, what, spec)
    else:
        _with_current_folder()
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            raise InputError(f"{what} {spec!r}: cannot import {module_name} ({describe(exc)})") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise InputError(f"{what} {spec!r}: module {module_name} has no attribute {attr!r}") from None
    if not callable(obj):
        raise InputError(f"{what} {spec!r}: {attr} is not callable")
    return obj


def call_factory(spec: str, what: str, args: str = ""):
    """The factory of ``spec`` called with the keyword arguments ``args`` (canonical JSON text, or "")."""
    factory = load_object(spec, what)
    kwargs = json.loads(args) if args else {}
    try:
        return factory(**kwargs)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plug-in's sys.exit must not end the job
        given = f" with {args}" if args else ""
        raise InputError(f"{what} {spec!r}: the factory{given} raised {describe(exc)}") from None


PLUGIN_FIELDS = ("model", "dataset")  # the identity fields that may name a plug-in


def recorded_canonically(identity: dict) -> dict:
    """``identity`` with its plug-ins named as ``canonical`` names them now: a file recorded before
    plug-ins were recorded by their absolute path names them as they were given, from its folder."""
    out = dict(identity)
    for key in PLUGIN_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = canonical(out[key])
    return out


def canonical(spec: str) -> str:
    """The same plug-in however it was named: a file path made absolute, and a module that lives under
    the current folder named by its file's absolute path (an installed package keeps its dotted name).

    Nothing is imported to find it (``importlib.util.find_spec`` of ``a.b`` would run ``a``'s
    ``__init__``): specs read from files are canonicalized before anyone has agreed to run their code.
    The current folder comes first on ``sys.path`` when a plug-in is loaded (``_with_current_folder``),
    so a module found under it is the one that would be imported."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name:
        return spec
    if module_name.endswith(".py"):
        return f"{os.path.abspath(module_name)}:{attr}"
    parts = module_name.split(".")
    if not all(part.isidentifier() for part in parts):
        return spec
    base = os.path.join(os.getcwd(), *parts)
    for origin in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(origin):
            return f"{origin}:{attr}"
    return spec


# --------------------------------------------------------------------------- plug-ins named by files

ALLOW_RECORDED = "allow_recorded_plugins"
ALLOW_RECORDED_HELP = (
    "import a model or data set factory that a file names (a checkpoint's record, a run.json, a manifest) "
    "without naming it yourself: that runs the file's author's code, so only for files you trust "
    "(default: only factories you name with --model/--dataset, or built-in names)"
)


def check_recorded(spec, what: str, source: str, named=(), allowed: bool = False) -> None:
    """A factory that ``source`` (a file) names may be imported only if the user named the same one
    (``named``: the specs given on the command line or in the API call), or allowed every recorded one
    (``allowed``): a file from someone else must not choose which code this process runs.  Built-in
    names are not plug-ins and always pass.  Raises an input error naming the factory, the file and
    how to allow it; nothing is imported."""
    if not isinstance(spec, str) or not is_plugin(spec) or allowed:
        return
    wanted = canonical(spec)
    if any(isinstance(n, str) and is_plugin(n) and canonical(n) == wanted for n in named):
        return
    raise InputError(
        f"{what} {spec!r} is named by {source}, not by you: a factory a file names is not imported "
        f"(it would run that code); give it yourself ({param(what)} {spec}) or pass "
        f"{param(ALLOW_RECORDED)} if you trust the file"
    )
