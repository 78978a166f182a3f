"""Subcommands of the `evallocal` command line: each module has `register(subparsers)`."""
