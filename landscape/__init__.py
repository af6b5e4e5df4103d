"""landscape: filter-normalized loss surfaces of trained networks, computed by MPI ranks into one HDF5 file."""

__version__ = "0.2.0"
