"""Training the networks whose landscapes are compared: recipes of the large-batch literature, on one
process or data-parallel over MPI ranks, with checkpoints a surface job reads and a resume after any
interruption.

    recipes.py      the recipes and their learning-rate schedule (``Recipe``, ``resolve``)
    lars.py         LARS's layer-wise trust ratio
    adaptive.py     big-batch SGD's norm test
    local.py        periodic model averaging, SCAFFOLD's control variates
    augment.py      CIFAR's crop and flip on whole batches
    batchnorm.py    running statistics moved once per step, the same on any number of ranks
    loop.py         the epochs, steps and micro-batches (no MPI, no torch.distributed)
    checkpoints.py  the files of a run and resuming from them
    job.py          a run from start to end (``TrainJob``, ``run_training``)
"""

from .config import TrainJob, TrainRun
from .job import Result, run_training
from .recipes import NAMES as RECIPES
from .recipes import Recipe, resolve

__all__ = ["TrainJob", "TrainRun", "Result", "run_training", "Recipe", "resolve", "RECIPES"]
