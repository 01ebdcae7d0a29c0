"""`python -m vigil.cli`: how the stack starts its children (`python -P -m vigil.cli …`)."""

from vigil.cli import main

if __name__ == "__main__":
    main()
