"""``landscape demo``: the small- vs large-batch demo (``workflows.demo``)."""

from __future__ import annotations

from ..workflows import demo as workflow
from .params import parsed, parser_for

PARAMS = (workflow.DemoParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape demo"):
    return parser_for(workflow.DemoParams, prog, "example: make demo   (= landscape demo --ranks 2)")


def main(argv: list[str], prog: str = "landscape demo") -> int:
    workflow.run(workflow.DemoParams.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
    return 0
