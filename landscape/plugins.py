"""Importing user code named as ``package.module:factory`` or ``path/to/file.py:factory``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from .errors import InputError, UsageError, describe


def is_plugin(spec: str) -> bool:
    return ":" in spec


def load_object(spec: str, what: str):
    """Return the callable named by ``spec``; every failure is one clear line."""
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise UsageError(f"{what} {spec!r}: expected package.module:factory or path/to/file.py:factory")
    if module_name.endswith(".py"):
        if not os.path.isfile(module_name):
            raise InputError(f"{what} {spec!r}: file {module_name} does not exist")
        name = "landscape_plugin_" + os.path.splitext(os.path.basename(module_name))[0]
        try:
            loader_spec = importlib.util.spec_from_file_location(name, module_name)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code; report it as one line
            raise InputError(f"{what} {spec!r}: importing {module_name} failed: {describe(exc)}") from None
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` would, so local modules import
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


def call_factory(spec: str, what: str):
    factory = load_object(spec, what)
    try:
        return factory()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plug-in's sys.exit must not end the job
        raise InputError(f"{what} {spec!r}: the factory raised {describe(exc)}") from None


def canonical(spec: str) -> str:
    """The same plug-in however it was named: a file path made absolute."""
    module_name, sep, attr = spec.rpartition(":")
    if sep and module_name.endswith(".py"):
        return f"{os.path.abspath(module_name)}:{attr}"
    return spec
