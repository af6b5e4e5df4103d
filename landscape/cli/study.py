"""``landscape study``: the batch-size study from one command (``workflows.study``)."""

from __future__ import annotations

from ..workflows import study as workflow
from .params import parsed, parser_for

PARAMS = (workflow.StudyParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape study"):
    return parser_for(workflow.StudyParams, prog, workflow.EXAMPLE)


def main(argv: list[str], prog: str = "landscape study") -> int:
    workflow.run(workflow.StudyParams.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
    return 0
