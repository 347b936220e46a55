"""turnspec.kernels."""
