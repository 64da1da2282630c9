"""The command line as typed, for the messages that say how to continue."""

from __future__ import annotations


def resume_command(args: object) -> str | None:
    """The command line as typed (``duet ...``), with ``--resume``: what continues an
    interrupted experiment (None when the command line is not known)."""
    import shlex

    argv = getattr(args, "argv", None)
    if argv is None:
        return None
    words = [str(w) for w in argv]
    return shlex.join(["duet", *words, *([] if "--resume" in words else ["--resume"])])
