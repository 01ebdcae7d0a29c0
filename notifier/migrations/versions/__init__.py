"""One module per schema revision (a package only so that the revisions ship in the wheel)."""
