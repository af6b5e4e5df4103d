"""A command's parameters as one frozen dataclass: each field its type, default, help text and flag.

``option(default, help, ...)`` declares a field; a command's ``Params`` subclass lists them and checks
their values in ``__post_init__`` (through ``checks``).  From that one class ``cli.params`` builds the
command's argparse parser and ``api`` its Python function, so a parameter has one default, one help
text and one spelling everywhere, and ``record()`` is what an output file records as the settings.

``Params.of(given)`` builds the parameters from a dict of the values given (the parsed flags, or the
API's keywords): a name the command does not take is refused by name, a required one missing too.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import types
import typing
from dataclasses import MISSING, dataclass, field

from ..errors import ConfigError, UsageError

REQUIRED = MISSING  # the default of a parameter that must be given


def option(
    default=REQUIRED,
    help: str = "",  # noqa: A002 - argparse's name for it
    *,
    flag: str | None = None,
    aliases: tuple[str, ...] = (),
    positional: bool = False,
    nargs: str | None = None,
    metavar: str | None = None,
    choices: tuple | None = None,
    shown: str | None = None,
    switches: tuple[tuple[str, object, str], ...] = (),
    const=None,
    cli: bool = True,
    api: bool = True,
    group: str | None = None,
    parse=None,
):
    """A parameter: its default (``REQUIRED`` when it must be given), its help text, and on the command
        line its flag (``--<name>`` unless given), the reference code's other spellings (``aliases``), or a
        positional argument; ``shown``: the default as the help text says it, where the value itself would
        not tell (``None`` meaning "the checkpoint's own"); ``switches``: flags that each set one value, one of
        them at most (``("--log", True, help), ("--linear", False, help)`` for a default of "auto");
        ``const``: the value of a flag given without one (``nargs="?"``); ``cli``: false for a parameter of the
        API alone (an object, not a string), ``api``: false for a flag of the command line alone (accepted for
    the reference code's users, meaningless from Python); ``group``: the heading it is listed under in ``--help``;
        ``parse``: how its flag's text becomes the value, where the field's type does not say (``int`` or
        ``auto``)."""
    metadata = {
        "help": help,
        "flag": flag,
        "aliases": aliases,
        "positional": positional,
        "nargs": nargs,
        "metavar": metavar,
        "choices": choices,
        "shown": shown,
        "switches": switches,
        "const": const,
        "cli": cli,
        "api": api,
        "group": group,
        "parse": parse,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("a mutable default: give a tuple")
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Params:
    """The base of every command's parameters."""

    COMMAND: typing.ClassVar[str] = ""
    DESCRIPTION: typing.ClassVar[str] = ""  # what the command does, for its --help and its API function
    GROUPS: typing.ClassVar[tuple[str, ...]] = ()  # the order of the --help headings (fields without one first)

    @classmethod
    def of(cls, given: dict):
        """The parameters from the values given; an unknown or a missing required one is a usage error."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise UsageError(
                f"{unknown[0]}: not a parameter of landscape {cls.COMMAND}; expected one of {', '.join(sorted(names))}"
            )
        for f in dataclasses.fields(cls):
            if f.default is MISSING and f.default_factory is MISSING and given.get(f.name) is None:
                raise ConfigError(f.name, None, "a value (it is required)")
        for name, value in given.items():  # a switch from Python: nesterov="no" is not True
            if value is not None and not isinstance(value, bool) and value_type(cls, name) is bool:
                raise ConfigError(name, value, "True or False", literal=True)
        given = {k: _as_tuple(v) if k in _tuple_fields(cls) else v for k, v in given.items()}
        made = cls(**{k: v for k, v in given.items() if v is not None})  # None: the default
        object.__setattr__(made, "_given", frozenset(k for k, v in given.items() if v is not None))
        return made

    @classmethod
    def given(cls, params):
        """``params`` itself when it is one of these, else ``of`` the dict."""
        return params if isinstance(params, cls) else cls.of(dict(params))

    def explicit(self, name: str) -> bool:
        """Whether ``name`` was given (to ``of``) rather than left at its default; for parameters built
        directly, whether it differs from the default."""
        given = getattr(self, "_given", None)
        if given is not None:
            return name in given
        f = next(f for f in dataclasses.fields(self) if f.name == name)
        return f.default is MISSING or getattr(self, name) != f.default

    def record(self) -> dict:
        """The settings as plain JSON values (tuples as lists), as an output file records them: an object
        given from Python in place of a name (a model, data, a loss) as ``api:<module>.<type>``."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def int_or_auto(text: str):
    """The value of a flag that takes a whole number or ``auto`` (an option's ``parse``)."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value: {text!r} (expected a positive whole number or auto)"
        ) from None


def _as_tuple(value):
    """A list parameter's value as a tuple: one value given alone (``seeds=0``, ``recipes="sgd"``) is a
    list of one; None stays None (the default)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, int, float)) or not hasattr(value, "__iter__"):
        return (value,)
    return tuple(value)


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return f"api:{type(value).__module__}.{type(value).__qualname__}"


def ordered(cls) -> list[dataclasses.Field]:
    """The fields in the order of their ``--help`` headings (``cls.GROUPS``); within one, the required
    fields first, then in declaration order."""
    rank = {None: -1, **{name: i for i, name in enumerate(cls.GROUPS)}}
    return sorted(
        dataclasses.fields(cls),
        key=lambda f: (rank.get(f.metadata.get("group"), len(rank)), f.default is not MISSING),
    )


def default(config, name: str):
    """The default of field ``name`` of the configuration dataclass ``config``: a parameter that fills a
    configuration's field takes its default from there, its one home."""
    return config.__dataclass_fields__[name].default


def required(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.default is MISSING)


def defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not MISSING}


@functools.cache
def _hints(cls) -> dict:
    """The class's type hints, evaluated once (``from __future__ import annotations`` makes them text)."""
    return typing.get_type_hints(cls)


@functools.cache
def _tuple_fields(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if value_type(cls, f.name) in (tuple, list))


def value_type(cls, name: str):
    """The field's type without ``None``: ``int | None`` is ``int``, ``tuple[str, ...]`` is ``tuple``."""
    hint = _hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = args[0] if len(args) == 1 else hint
    return typing.get_origin(hint) or hint


def item_type(cls, name: str):
    """The type of a tuple field's items (``tuple[str, ...]``: ``str``)."""
    hint = _hints(cls)[name]
    for arg in typing.get_args(hint) or ():
        if typing.get_origin(arg) is tuple:
            hint = arg
    args = [a for a in typing.get_args(hint) if a is not Ellipsis and a is not type(None)]
    return args[0] if args else str


__all__ = [
    "Params",
    "REQUIRED",
    "option",
    "default",
    "int_or_auto",
    "ordered",
    "required",
    "defaults",
    "value_type",
    "item_type",
]
