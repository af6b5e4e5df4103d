"""Loss surfaces: the grid, directions, the evaluation kernel and its quantities (pure math, no MPI),
and the job that composes them with files and ranks (``surface.job``)."""
