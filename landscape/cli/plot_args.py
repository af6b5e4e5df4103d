"""What the plot commands' entry points share: their flags parsed into the command's parameters and run."""

from __future__ import annotations

from .params import parsed


def main_of(build_parser, run, params):
    """A plot command's ``main``: its flags, parsed into ``params`` (a ``workflows.plots`` class), to ``run``."""

    def main(argv: list[str], prog: str) -> int:
        run(params.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
        return 0

    return main
