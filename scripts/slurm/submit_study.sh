#!/bin/bash
# A whole batch-size study on a cluster: the training array (train_array.sbatch, one configuration
# per task) and the scorecard once every network is trained (report.sbatch, --dependency=afterok on
# the array).  The same study file drives both: it is a landscape sweep file with a [report] table.
#
#   scripts/slurm/submit_study.sh STUDY.toml [sbatch options for both jobs]
#   e.g. scripts/slurm/submit_study.sh scripts/slurm/study_resnet56.toml --account=PROJECT
#
# GPU nodes: the sbatch options go to both jobs, so one rank per GPU for the training and the scorecard:
#   scripts/slurm/submit_study.sh study.toml --account=PROJECT --partition=gpu --gpus-per-task=1
# landscape train and landscape report default to --device auto (each rank takes a GPU Slurm binds to
# it, the CPU where none is).  To insist on CUDA (an error, not a CPU run, where no GPU is bound), put
#   device = "cuda"
# in the study file's [train] and [report] tables, or export LANDSCAPE_ARGS="--device cuda" (or a
# LANDSCAPE_ARGS_FILE), which both jobs receive: train_array.sbatch passes it through landscape sweep
# to landscape train, report.sbatch to landscape report.  LANDSCAPE_SRUN_MPI reaches both as well.
#
# Prints the two job ids.  After a failure, resubmitting skips the finished networks and measurements.
set -euo pipefail
config=$(realpath "${1:?usage: submit_study.sh STUDY_TOML [sbatch options]}")
shift
here=$(dirname "$(realpath "$0")")
LANDSCAPE=${LANDSCAPE:-landscape}
count=$($LANDSCAPE sweep --config "$config" --list | grep -c .)
array=$(sbatch --parsable --array=0-$((count - 1)) --export=ALL,SWEEP_CONFIG="$config" "$@" "$here/train_array.sbatch")
report=$(sbatch --parsable --dependency=afterok:"${array%%;*}" --export=ALL,STUDY_CONFIG="$config" "$@" \
  "$here/report.sbatch")
echo "training: job array ${array%%;*} ($count networks); scorecard: job ${report%%;*} (after the array succeeds)"
