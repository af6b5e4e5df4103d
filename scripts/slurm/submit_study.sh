#!/bin/bash
# A whole batch-size study on a cluster: the training array (train_array.sbatch, one configuration
# per task) and the scorecard once every network is trained (report.sbatch, --dependency=afterok on
# the array).  The same study file drives both: it is a landscape sweep file with a [report] table.
#
#   scripts/slurm/submit_study.sh STUDY.toml [sbatch options for both jobs]
#   e.g. scripts/slurm/submit_study.sh scripts/slurm/study_resnet56.toml --account=PROJECT
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
