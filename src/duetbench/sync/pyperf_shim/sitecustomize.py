"""duetbench's pyperf shim: the sduet handshake for pyperf scripts as they are.

duet run puts this file's directory first on ``PYTHONPATH`` of a side whose
harness is ``pyperf`` or ``pyperformance`` when the run is a synchronous duet
(docs/sync.md, "pyperf scripts as they are"). Python imports ``sitecustomize``
at start-up, in the script's process and in every pyperf worker (pyperf passes
``PYTHONPATH`` to its workers). Then:

* The original ``sitecustomize`` (the next one on ``sys.path``, e.g. Debian's)
  is still run, so the interpreter behaves as without the shim.
* Outside a sduet (``DUET_SYNC_DIR`` unset or empty) nothing else happens.
* In a sduet, when the script imports ``pyperf``, two things are wrapped:
  ``Runner._set_args`` (in the script's process, the pyperf *manager*) adds the
  handshake's variables to ``--inherit-environ``, because pyperf starts its
  workers with a filtered environment; and ``WorkerTask.__init__`` wraps the
  task function that pyperf calls once per warm-up and value, so each of them
  first waits for the coordinator's *go*. The wait is before the function, so
  before the benchmark's own timer starts (pyperf 2.6 to 2.10).
* Every handshake is logged to ``$DUET_OUTPUT_DIR/pyperf-sync.csv``
  (``pid,index,loops,ready_ns,go_ns``: the worker, its n-th handshake, the
  loops of that value, wall-clock ns before *ready* and after *go*).

Standard library only: this runs in the side's interpreter, which need not have
duetbench. The handshake client is ``duetbench/micro/handshake.py``, loaded by
its path relative to this file (the same layout is mounted into containers).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import time

ENV_DIR = "DUET_SYNC_DIR"
#: the variables a pyperf worker needs from its manager's environment
FORWARDED = ("DUET_SYNC_DIR", "DUET_PAIR", "DUET_SYNC_TIMEOUT", "DUET_SYNC_WAIT", "DUET_OUTPUT_DIR")
LOG_NAME = "pyperf-sync.csv"
LOG_HEADER = "pid,index,loops,ready_ns,go_ns\n"
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_PATH = os.path.join(HERE, os.pardir, os.pardir, "micro", "handshake.py")
_CLIENT_MODULE = "_duetbench_pyperf_handshake"
_PATCHED = "_duetbench_pyperf_shim"


class ShimError(RuntimeError):
    """The handshake failed in a pyperf worker; the worker exits and the side fails."""


def _load_client():
    module = sys.modules.get(_CLIENT_MODULE)
    if module is None:
        path = os.path.normpath(CLIENT_PATH)
        if not os.path.isfile(path):
            raise ShimError(f"duetbench pyperf shim: the handshake client {path} is missing")
        spec = importlib.util.spec_from_file_location(_CLIENT_MODULE, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_CLIENT_MODULE] = module
        spec.loader.exec_module(module)
    return module


class _SyncedTask:
    """pyperf's per-value task function behind a handshake; one per WorkerTask."""

    def __init__(self, func, environ) -> None:
        self.func = func
        self.environ = environ
        self.count = 0

    def __call__(self, task, loops):
        client = _load_client()
        try:
            handshake = client.Handshake.from_env(self.environ)
            ready_ns = time.time_ns()
            if handshake is not None:
                handshake.wait()
        except client.HandshakeError as exc:
            pair = self.environ.get("DUET_PAIR", "?")
            raise ShimError(f"duetbench pyperf shim, side {pair}: {exc}") from None
        go_ns = time.time_ns()
        try:
            return self.func(task, loops)
        finally:  # after the timed function: the log costs the measurement nothing
            self._log(loops, ready_ns, go_ns)
            self.count += 1

    def _log(self, loops, ready_ns: int, go_ns: int) -> None:
        out = self.environ.get("DUET_OUTPUT_DIR")
        if not out:
            return
        with open(os.path.join(out, LOG_NAME), "a", encoding="ascii") as fh:
            if fh.tell() == 0:  # the side's workers run one after another: no race
                fh.write(LOG_HEADER)
            fh.write(f"{os.getpid()},{self.count},{loops},{ready_ns},{go_ns}\n")


def patch_pyperf(pyperf_module, environ=None) -> None:
    """Wrap pyperf's manager (environment of the workers) and worker (one handshake per
    warm-up and value). Idempotent."""
    env = os.environ if environ is None else environ
    if getattr(pyperf_module, _PATCHED, False):
        return
    try:
        runner_cls = importlib.import_module(pyperf_module.__name__ + "._runner").Runner
        task_cls = importlib.import_module(pyperf_module.__name__ + "._worker").WorkerTask
        set_args = runner_cls._set_args
        task_init = task_cls.__init__
    except (ImportError, AttributeError) as exc:  # never a silently unsynchronized sduet
        version = getattr(pyperf_module, "__version__", "?")
        raise ShimError(
            f"duetbench pyperf shim: pyperf {version} lacks what the shim wraps ({exc}); "
            "it supports pyperf 2.6 to 2.10 (docs/sync.md, 'pyperf scripts as they are')"
        ) from None

    def _set_args(self, args):
        set_args(self, args)
        if not getattr(args, "worker", False):  # the manager: as if --inherit-environ said so
            inherit = list(getattr(args, "inherit_environ", None) or [])
            inherit += [n for n in FORWARDED if n in env and n not in inherit]
            args.inherit_environ = inherit

    def __init__(self, *args, **kwargs):
        task_init(self, *args, **kwargs)
        if not callable(getattr(self, "task_func", None)):
            raise ShimError("duetbench pyperf shim: pyperf's WorkerTask has no task_func")
        self.task_func = _SyncedTask(self.task_func, env)

    runner_cls._set_args = _set_args
    task_cls.__init__ = __init__
    setattr(pyperf_module, _PATCHED, True)


class _PatchingLoader:
    """Runs pyperf's own loader, then patches the module."""

    def __init__(self, inner, finder) -> None:
        self.inner = inner
        self.finder = finder

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        self.inner.exec_module(module)
        patch_pyperf(module, self.finder.environ)
        if self.finder in sys.meta_path:  # done: pyperf stays in sys.modules
            sys.meta_path.remove(self.finder)

    def __getattr__(self, name):  # get_source, get_filename, is_package, ...
        return getattr(self.inner, name)


class _PyperfFinder:
    """A meta path finder that only changes the loader of the top-level ``pyperf``."""

    def __init__(self, environ) -> None:
        self.environ = environ

    def find_spec(self, fullname, path=None, target=None):
        # found specs are not always executed (`python -m pyperf` looks it up first, then
        # imports it): stay on sys.meta_path until the patching loader has run
        if fullname != "pyperf":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None  # not installed: the script's own import fails as usual
        if spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, self)
        return spec


def install(environ=None) -> bool:
    """In a sduet, patch pyperf when it is imported (at once if it already is)."""
    env = os.environ if environ is None else environ
    if not env.get(ENV_DIR):
        return False
    if "pyperf" in sys.modules:
        patch_pyperf(sys.modules["pyperf"], env)
    else:
        sys.meta_path.insert(0, _PyperfFinder(env))
    return True


def _chain() -> None:
    """Run the ``sitecustomize`` this file hides (the next one on ``sys.path``)."""
    here = os.path.normcase(HERE)
    rest = [p for p in sys.path if os.path.normcase(os.path.abspath(p or os.curdir)) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_duetbench_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":
    install()
    _chain()
