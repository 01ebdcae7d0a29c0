"""systemd units for bare-metal installs: the exporters of a GPU node and the central vigil services.

Units are data (`units.UNITS`: the command, its defaults and what each unit relaxes of the shared
hardening in `hardening.py`), rendered to unit-file text by `unit_file.render`; `vigil deploy systemd
build` writes them and `deploy/systemd/units/` holds the checked-in copy (docs/deploy.md).
"""

from .units import DEFAULT_VIGIL_BIN, UNITS, render_units

__all__ = ["DEFAULT_VIGIL_BIN", "UNITS", "render_units"]
