#!/bin/bash
# Submit one surface per checkpoint (surface_array.sbatch) and the figures once all succeeded
# (plot_surfaces.sbatch, --dependency=afterok on the array). Prints the two job ids.
#
#   scripts/slurm/submit_sweep.sh checkpoints.txt [extra sbatch options for both jobs]
#   (checkpoints.txt: one checkpoint path per line, e.g. ls runs/*/model_300.t7 > checkpoints.txt)
# The surfaces' flags come from LANDSCAPE_ARGS or LANDSCAPE_ARGS_FILE, LANDSCAPE_SRUN_MPI sets srun's
# --mpi (see surface_array.sbatch): all exported to the jobs.
set -euo pipefail
list=$(realpath "${1:?usage: submit_sweep.sh CHECKPOINT_LIST [sbatch options]}")
shift
here=$(dirname "$(realpath "$0")")
count=$(grep -c . "$list")
[ "$count" -gt 0 ] || { echo "submit_sweep.sh: $list lists no checkpoint" >&2; exit 2; }
array=$(sbatch --parsable --array=0-$((count - 1)) --export=ALL,CHECKPOINTS="$list" "$@" "$here/surface_array.sbatch")
plot=$(sbatch --parsable --dependency=afterok:"$array" --export=ALL,CHECKPOINTS="$list" "$@" \
  "$here/plot_surfaces.sbatch")
echo "surfaces: job array $array; figures: job $plot (after the array succeeds)"
