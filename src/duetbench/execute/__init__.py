"""Executing one RunSpec on this host: drivers, the local and container executors."""
