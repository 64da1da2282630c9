"""The version of duetbench, in a module of its own so any module can name it
without importing the package's __init__ (which would make an import cycle)."""

__version__ = "0.1.0"
