"""``landscape study``: the batch-size study from one command (``workflows.study``)."""

from __future__ import annotations

from ..workflows import study as workflow
from ..workflows.study import EXAMPLE
from ..workflows.study_file import DEFAULTS
from . import boundary


def build_parser(prog: str = "landscape study"):
    p = boundary.ArgumentParser(prog=prog, description=workflow.__doc__.split("\n\n")[0], epilog=EXAMPLE)
    p.add_argument("--config", help="TOML file of the study (its keys: the example at the end of --help)")
    p.add_argument("--out", help=f"training runs, measurements and logs (default: {DEFAULTS['out']})")
    p.add_argument("--figures", help=f"where the scorecard and figures go (default: {DEFAULTS['figures']})")
    p.add_argument("--name", help=f"stem of their names (default: {DEFAULTS['name']})")
    p.add_argument("--jobs", type=int, help=f"trainings at a time, and report ranks (default: {DEFAULTS['jobs']})")
    p.add_argument("--quick", action="store_true", help="2 batch sizes x 2 seeds, 4 epochs, tiny grids (the test)")
    p.add_argument("--traceback", action="store_true", help="show the full traceback of an error")
    return p


def main(argv: list[str], prog: str = "landscape study") -> int:
    given = {k: v for k, v in vars(build_parser(prog).parse_args(argv)).items() if v is not None}
    given.pop("traceback", None)
    workflow.run(given, argv=(*prog.split(), *argv))
    return 0
