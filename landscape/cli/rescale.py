"""``landscape rescale``: a checkpoint's network with one layer's units rescaled without changing the
function it computes (Dinh et al. 2017), for the rescaling control of a sharpness study."""

from __future__ import annotations

import argparse

from ..workflows import rescale as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  landscape rescale --model mnist1d_mlp --dataset mnist1d --model_file runs/b16/final.pt --alpha 4 \\
      --out runs/b16/rescaled.pt
  landscape report runs.csv --out report      (a CSV listing both checkpoints: which measures moved?)
"""


PARAMS = (workflow.RescaleParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape rescale") -> argparse.ArgumentParser:
    return parser_for(workflow.RescaleParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape rescale") -> int:
    workflow.run(workflow.RescaleParams.of(parsed(build_parser(prog), argv)), argv=(*prog.split(), *argv))
    return 0
