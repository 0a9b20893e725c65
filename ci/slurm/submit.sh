#!/bin/sh
# Queue the nightly's array, then its merge-and-gate step once every array task has ended.
set -eu
here=$(dirname "$0")
mkdir -p results/logs
array=$(sbatch --parsable "$here/nightly-array.sbatch")
sbatch --dependency=afterany:"${array%%;*}" "$here/merge-and-gate.sbatch"
