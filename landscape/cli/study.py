"""``landscape study``: the batch-size study from one command (``workflows.study``)."""

from __future__ import annotations

from ..workflows import study as workflow
from ..workflows.study import EXAMPLE
from . import boundary


def build_parser(prog: str = "landscape study"):
    p = boundary.ArgumentParser(prog=prog, description=workflow.__doc__.split("\n\n")[0], epilog=EXAMPLE)
    p.add_argument("--config", help="TOML file of the study (see below)")
    p.add_argument("--out", help="training runs, measurements and logs (default: study_out)")
    p.add_argument("--figures", help="where the scorecard and figures go (default: figures)")
    p.add_argument("--name", help="stem of their names (default: study)")
    p.add_argument("--jobs", type=int, help="trainings at a time, and report ranks (default: 2)")
    p.add_argument("--quick", action="store_true", help="2 batch sizes x 2 seeds, 4 epochs, tiny grids (the test)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape study") -> int:
    given = {k: v for k, v in vars(build_parser(prog).parse_args(argv)).items() if v is not None}
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
