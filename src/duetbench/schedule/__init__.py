"""Where and when runs execute: inline on this machine, or on a Dask cluster."""
