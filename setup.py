"""Package layout only (metadata lives in pyproject.toml).

The design keeps one folder per concern at the top of the repository (`exporters/`, `rules/`, …), but
they install as sub-packages of the one `vigil` namespace (`vigil.exporters`, `vigil.rules`, …), so
nothing but `vigil` lands at the top of a user's site-packages and a `rules/` folder in the current
directory cannot shadow ours. Sub-packages are discovered, so a new one needs no edit here.
"""

from setuptools import find_packages, setup

# folder in the repository -> import name
FOLDERS = {
    "vigil": "vigil",
    "exporters": "vigil.exporters",
    "rules": "vigil.rules",
    "aiops": "vigil.aiops",
    "notifier": "vigil.notifier",
    "oncall": "vigil.oncall",
    "dashboards": "vigil.dashboards",
    "deploy": "vigil.deploy",
}

packages = []
for folder, name in FOLDERS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(where=folder)]

setup(packages=packages, package_dir={name: folder for folder, name in FOLDERS.items()})
