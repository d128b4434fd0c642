"""``python -m envkernel``: the command line."""

from .cli import main

main()
