"""Everything parallel: the communicator (the only mpi4py user, with the shared work counter), the
round scheduler, stop signals and finding an MPI launcher.  The math never imports from here."""
