"""The `skillgate` command: `main` parses the arguments; one module per command group."""

from gateway.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
