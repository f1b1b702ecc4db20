"""``python3 -m condcheck``: the command line without an installed entry point."""
from .cli import main

if __name__ == "__main__":          # worker processes (spawned by the Dask engine) import this module too
    main(prog_name="condcheck")
