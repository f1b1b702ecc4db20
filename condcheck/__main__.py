"""``python3 -m condcheck``: the command line without an installed entry point."""
from .cli import main

main(prog_name="condcheck")
