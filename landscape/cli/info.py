"""``landscape info FILE...``: what a surface or direction file holds — grid, quantities, progress,
value ranges, identity, run records — and who wrote it (landscape or the reference code).
``--json`` prints the same as one JSON object per file."""

from __future__ import annotations

import argparse

from ..workflows import info as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  landscape info demo_out/cnn_bs16_2d.h5
  landscape info demo_out/cnn_bs16_2d.directions.h5 --json
"""


PARAMS = (workflow.InfoParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape info") -> argparse.ArgumentParser:
    return parser_for(workflow.InfoParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape info") -> int:
    workflow.run(workflow.InfoParams.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
    return 0
