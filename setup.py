"""Package layout only (metadata lives in pyproject.toml).

The design keeps one folder per concern at the top of the repository (`exporters/`, `rules/`, …), but
they install as sub-packages of the one `vigil` namespace (`vigil.exporters`, `vigil.rules`, …), so
nothing but `vigil` lands at the top of a user's site-packages and a `rules/` folder in the current
directory cannot shadow ours. Sub-packages, and data folders, are discovered, so a new one needs no edit
here.
"""

from setuptools import find_namespace_packages, setup

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

# folders that are neither code nor data the installed package reads (image build contexts, the generated
# manifests); oncall/examples ships: `vigil deploy kubernetes build` reads its contacts.yaml
NOT_SHIPPED = ["__pycache__", "*.__pycache__", "images", "images.*", "kubernetes", "kubernetes.*"]

# Data folders (templates/, specs/, json/, ...) are packages too, as setuptools asks ("is absent from the
# `packages` configuration"); their files are chosen by pyproject.toml's package-data.
packages = []
for folder, name in FOLDERS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=NOT_SHIPPED)]

setup(packages=packages, package_dir={name: folder for folder, name in FOLDERS.items()})
