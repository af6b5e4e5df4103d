"""The example command lines a command's ``--help`` shows, read out of its epilog and parsed as the
program would parse them: an example that no longer parses is a lie in the manual."""

from __future__ import annotations

import re
import shlex

from landscape.cli.main import COMMANDS
from landscape.cli.params import parsed

LINE = re.compile(r"^(?:mpiexec -n \d+ |srun |.*\(= )?(?:landscape ([a-z0-9-]+)|(plot_surface)(?=\s+--))\s+(.*)$")
COMMENT = re.compile(r"\s{2,}(\(.*\)|#.*)$")  # "  (writes x.vts)", "  # the folder of a sweep"


def examples(epilog: str) -> list[tuple[str, list[str]]]:
    """Each ``landscape <command> ...`` line of ``epilog`` (continuations joined), as (command, argv)."""
    text = re.sub(r"\\\n\s*", " ", epilog or "")
    found = []
    for line in text.splitlines():
        match = LINE.search(line.strip())
        if match is None or line.strip().startswith(("[", "#")) or "flags, without the dashes" in line:
            continue
        command = match.group(1) or "surface"
        rest = COMMENT.sub("", match.group(3)).strip()
        if "(= " in line and rest.endswith(")"):  # "make demo   (= landscape demo --ranks 2)"
            rest = rest[:-1]
        if command not in COMMANDS or rest.startswith(("flags", "flag")):
            continue
        rest = re.sub(r"\$\w+", "0", rest)  # $SLURM_ARRAY_TASK_ID: an index
        found.append((command, shlex.split(rest)))
    return found


def check_examples(module) -> int:
    """Parse every example in ``module``'s ``--help`` with its command's parser and make its parameters
    (their values checked, no file read); returns how many examples there were."""
    shown = examples(module.build_parser().epilog)
    for command, argv in shown:
        other = COMMANDS[command].load()
        given = parsed(other.build_parser(), argv)
        other.PARAMS[0].of(given)
        for name, value in given.items():  # each flag typed is a value the parameters hold as typed
            assert name in {f for f in other.PARAMS[0].__dataclass_fields__}, (command, name)
            assert value is not None, (command, name)
    return len(shown)


__all__ = ["examples", "check_examples"]
