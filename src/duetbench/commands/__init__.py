"""One module per `duet` command: ``register(subparsers)`` and ``run(args) -> int``."""
