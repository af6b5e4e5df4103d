"""Files: the HDF5 schema (the only place its names are defined), surface and direction files,
run records, the job's lock, the parallel writer, checkpoints and the reference code's formats."""
