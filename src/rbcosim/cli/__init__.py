"""Command-line interface: one small module per subcommand, each with `add_parser` and `run`."""
