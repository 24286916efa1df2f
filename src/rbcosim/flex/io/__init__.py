"""Flexible-body files: structure files (.npz, .mtx), FE importers (readers/), conversions, body files for C programs."""
