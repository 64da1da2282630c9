"""The container engine's command line: how duet calls podman or docker.

:class:`Engine` builds engine commands; :func:`engine_run` runs one in its own process
group (a half-done ``run`` or ``rm`` is what leaves containers behind, so Ctrl-C waits
for it); the rest turn config values into arguments and engine errors into hints
(docs/containers.md).
"""

from __future__ import annotations

import math
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ExecutorError
from .driver import SHELL_CHARS

ENGINE_TIMEOUT = 120.0  # seconds for one engine command (run, cp, rm...)
PULL_TIMEOUT = 900.0

#: pid 1 of every container: sleeps; on SIGTERM it passes the signal to every other
#: process in the container, waits until they are gone, then exits (the engine's
#: stop timeout SIGKILLs whatever remains).
KEEPALIVE = (
    "trap 'kill -TERM -1 2>/dev/null; while kill -0 -1 2>/dev/null; do sleep 0.05; done; "
    "exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"
)


@dataclass(frozen=True)
class Engine:
    """The engine command (with its global options) and its kind (flags differ)."""

    argv: tuple[str, ...]
    kind: str  # podman | docker

    def __call__(self, *args: str) -> list[str]:
        return [*self.argv, *args]

    def rm(self, *names: str) -> list[str]:
        return (
            self("rm", "-f", "-t", "0", *names)
            if self.kind == "podman"
            else self("rm", "-f", *names)
        )

    def stop(self, grace: float, *names: str) -> list[str]:
        return self("stop", "-t", str(max(0, math.ceil(grace))), *names)


def option_words(options: Any) -> list[str]:
    """Options from the config: a list of strings, each split like a shell would."""
    if not options:
        return []
    if isinstance(options, str):
        options = [options]
    out: list[str] = []
    for o in options:
        out.extend(shlex.split(str(o)))
    return out


def make_engine(settings: dict[str, Any] | None, default_kind: str = "podman") -> Engine:
    """``engine`` (a command, default the executor's name) plus ``global_options``."""
    settings = settings or {}
    argv = shlex.split(settings.get("engine") or default_kind)
    if not argv:
        argv = [default_kind]
    kind = default_kind if default_kind in ("podman", "docker") else "podman"
    for word in argv:
        base = Path(word).name
        if base in ("podman", "docker"):
            kind = base
            break
    return Engine((*argv, *option_words(settings.get("global_options"))), kind)


def container_argv(command: str) -> list[str]:
    """Plain words run directly (PATH lookup in the container); shell syntax through /bin/sh."""
    if SHELL_CHARS.search(command):
        return ["/bin/sh", "-c", command]
    words = shlex.split(command)
    return words or ["/bin/sh", "-c", command]


def tail(text: str, limit: int = 1500) -> str:
    """The end of an engine's output, for a message."""
    text = text.strip()
    return text[-limit:]


def spawn(argv: list[str]) -> subprocess.Popen[str]:
    """An engine command in its own process group, its output (text) piped to us."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )


def engine_run(
    argv: list[str], timeout: float = ENGINE_TIMEOUT, *, shield: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run an engine command in its own process group (a terminal's Ctrl-C does not reach it).

    With ``shield``, a KeyboardInterrupt while it runs is held until it has finished:
    a half-done ``run`` or ``rm`` is what leaves containers behind.
    """
    try:
        proc = spawn(argv)
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc.strerror}")
    return communicate(proc, timeout, shield=shield)


def communicate(
    proc: subprocess.Popen[str], timeout: float, *, shield: bool = True
) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + timeout
    interrupted: BaseException | None = None
    while True:
        try:
            out, err = proc.communicate(timeout=max(0.01, deadline - time.monotonic()))
            break
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err = (err or "") + f"\n(timed out after {timeout:g} s)"
            break
        except KeyboardInterrupt as exc:
            if not shield:
                proc.kill()
                proc.communicate()
                raise
            interrupted = exc
    if interrupted is not None:
        raise interrupted
    return subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err or "")


def engine_hint(stderr: str) -> str:
    """What to change when the engine failed in a way we recognise (else "")."""
    if "setting rlimit" in stderr or "rlimit" in stderr and "permission denied" in stderr.lower():
        return (
            " -- the engine cannot set the default ulimits on this host; add "
            "`run_options: [--ulimit nofile=1024:1024, --ulimit nproc=4096:4096]` or configure "
            "containers.conf (docs/containers.md, 'Sandboxed hosts')"
        )
    if "cgroup" in stderr.lower() and "systemd" in stderr.lower():
        return " -- try `engine_options: [--cgroup-manager=cgroupfs]` (docs/containers.md)"
    return ""


def check_images(engine: Engine, plan: list[Any], images: dict[str, dict[str, str]]) -> None:
    """Every side of ``plan`` (RunSpecs) names an image, and every image is there (pulled
    when missing): ``images`` gets each one's id and working directory. ExecutorError
    before anything runs."""
    problems = []
    wanted: list[str] = []
    for spec in plan:
        for side in spec.sides:
            if not side.image:
                problems.append(
                    f"benchmark '{spec.benchmark}' side {side.pair} has no `image:`; the "
                    f"{engine.kind} executor runs every side in a container (set `image:`, "
                    "or pass --executor local)"
                )
            elif side.image not in wanted:
                wanted.append(side.image)
            if side.workdir and not side.workdir.startswith("/"):
                problems.append(
                    f"benchmark '{spec.benchmark}' side {side.pair}: in a container `workdir` "
                    f"is a path inside the image and must be absolute, not '{side.workdir}'"
                )
    if problems:
        raise ExecutorError("; ".join(dict.fromkeys(problems)))
    for image in wanted:
        if image in images:
            continue
        meta = inspect_image(engine, image)
        if meta is None:
            pull = engine_run(engine("pull", image), PULL_TIMEOUT, shield=False)
            meta = inspect_image(engine, image) if pull.returncode == 0 else None
            if meta is None:
                raise ExecutorError(
                    f"image '{image}' is not available to {' '.join(engine.argv)} and "
                    f"could not be pulled: {tail(pull.stderr, 400) or pull.returncode}. "
                    "Build or load it first (docs/containers.md)."
                )
        images[image] = meta


def inspect_image(engine: Engine, image: str) -> dict[str, str] | None:
    """The image's id and working directory ("/" when unset); None: not there."""
    p = engine_run(
        engine("image", "inspect", "--format", "{{.Id}}\t{{.Config.WorkingDir}}", image),
        shield=False,
    )
    if p.returncode != 0 or not p.stdout.strip():
        return None
    image_id, _, workdir = p.stdout.strip().splitlines()[0].partition("\t")
    return {"id": image_id, "workdir": workdir.strip() or "/"}
