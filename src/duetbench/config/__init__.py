"""Config loading: the thesis `duetbench:` format and the native format."""

from .loader import load_config, loads_config
from .model import Benchmark, ContainerSettings, Experiment, Side

__all__ = ["Benchmark", "ContainerSettings", "Experiment", "Side", "load_config", "loads_config"]
