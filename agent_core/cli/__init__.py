"""The ``chain-studio`` command: ``main.py`` builds the parser, one module per subcommand."""
