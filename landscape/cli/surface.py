"""``landscape surface`` (alias ``plot_surface``): compute a 1-D or 2-D loss surface.

Flags follow the reference implementation of Li et al. (2018) so its users feel at home.  Each flag
is a field of ``workflows.surface.SurfaceParams`` (filling one field of one configuration, whose default
lives there); this module only parses them.  Under ``mpiexec``/``srun`` the ranks share the points; without a
launcher the same code runs on one process.
"""

from __future__ import annotations

import argparse
import textwrap

from ..errors import exit_codes
from ..parallel import comm as comm_module
from ..parallel.comm import agree
from ..workflows import surface as workflow
from .params import parsed, parser_for

EXAMPLES = """\
examples:
  # 2-D filter-normalized surface of the demo CNN, 2 ranks, figures at the end
  mpiexec -n 2 landscape surface --model digits_cnn --model_file demo_out/cnn_bs16/final.pt \\
      --x=-1:1:51 --y=-1:1:51 --xnorm filter --xignore biasbn --plot

  # 1-D linear interpolation between two checkpoints, BatchNorm statistics too
  landscape surface --model digits_cnn --model_file a.pt --model_file2 b.pt \\
      --x=-0.5:1.5:41 --dir_type states

  # your own model and data: factory() returns an nn.Module / (train, test)
  srun landscape surface --model mypkg.nets:make_net --model_file net.pt \\
      --dataset mypkg.data:load --x=-1:1:21 --y=-1:1:21 --surf_file net.h5

plot_surface is the same program under the reference code's name.  Rerunning the
same command after an interruption computes only the missing points.  Under srun,
add --mpi=pmi2 (or pmix) where the site's default plugin is not the one mpi4py's MPI
speaks.
""" + "\n".join(textwrap.wrap(exit_codes(), 88))


PARAMS = (workflow.SurfaceParams,)  # the parameters whose flags spell its messages


def build_parser(prog: str = "landscape surface") -> argparse.ArgumentParser:
    return parser_for(workflow.SurfaceParams, prog, EXAMPLES)


def main(argv: list[str], prog: str = "landscape surface") -> int:
    world = comm_module.world()
    given = agree(world, lambda: parsed(build_parser(prog), argv))
    result = workflow.run(workflow.SurfaceParams.of(given), argv=(*prog.split(), *argv))
    if world.rank == 0:
        for path in result.figures:
            print(f"wrote {path}")
    return 0
