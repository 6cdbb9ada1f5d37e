"""One module per `infersweep` subcommand. Each defines `register(subparsers)` that adds its parser and
sets `fn`; the CLI discovers the modules, so adding a command is adding a file."""
