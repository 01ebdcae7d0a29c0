"""What the image tests read from deploy/images/Dockerfile (parsed with dockerfile-parse) and the pins
of deploy/images/constraints.txt: the tested venv's versions of vigil's dependency closure.

Regenerate the pins after a dependency changes: `.venv/bin/python tests/deploy_images_support.py > deploy/images/constraints.txt`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from importlib.metadata import distribution
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "deploy" / "images" / "Dockerfile"
CONSTRAINTS = REPO / "deploy" / "images" / "constraints.txt"
EXTRAS = ("postgres", "k8s")  # the extras the runtime stage installs
# final stage (docker build --target) -> image name, and the vigil commands the image runs: its CMD and
# the one other command docs/deploy.md names for it
IMAGES = {"exporter": "vigil-exporter", "services": "vigil-services"}
COMMANDS = {"exporter": [("exporter", "gpu"), ("exporter", "node")],
            "services": [("notifier", "serve"), ("aiops", "serve")]}


@dataclass
class Stage:
    name: str
    base: str
    parent: Stage | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, value)

    def values(self, instruction: str, inherited: bool = True) -> list[str]:
        own = [value for name, value in self.lines if name == instruction]
        return (self.parent.values(instruction) if inherited and self.parent else []) + own

    def last(self, instruction: str) -> str | None:
        found = self.values(instruction)
        return found[-1] if found else None

    def args(self) -> dict[str, str]:
        return dict(value.split("=", 1) for value in self.values("ARG"))

    def commands(self) -> list[list[str]]:
        """This stage's own RUN lines as commands (split at &&), ${ARG}s replaced by their defaults."""
        out = []
        for value in self.values("RUN", inherited=False):
            for name, default in self.args().items():
                value = value.replace("${%s}" % name, default)
            words = shlex.split(value)
            command: list[str] = []
            for word in [*words, "&&"]:
                if word == "&&":
                    out.append(command)
                    command = []
                else:
                    command.append(word)
        return out

    def exec_form(self, instruction: str) -> list[str]:
        return json.loads(self.last(instruction))


def stages(path: Path = DOCKERFILE) -> dict[str, Stage]:
    from dockerfile_parse import DockerfileParser

    found: dict[str, Stage] = {}
    current = None
    for item in DockerfileParser(path=str(path)).structure:
        if item["instruction"] == "FROM":
            base, _, name = item["value"].partition(" AS ")
            current = found[name.strip()] = Stage(name.strip(), base.strip(), found.get(base.strip()))
        elif current is not None and item["instruction"] != "COMMENT":
            current.lines.append((item["instruction"], item["value"]))
    return found


def closure(root: str = "vigil", extras: tuple[str, ...] = EXTRAS) -> dict[str, str]:
    """{distribution: installed version} of everything `root[extras]` needs, here (this Python, this platform)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pinned, seen, todo = {}, set(), [(root, tuple(extras))]
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in seen:
            continue
        seen.add((canonicalize_name(name), wanted))
        dist = distribution(name)
        pinned[canonicalize_name(dist.metadata["Name"])] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in ("", *wanted)):
                todo.append((req.name, tuple(sorted(req.extras))))
    pinned.pop(canonicalize_name(root))
    return pinned


def constraints_text() -> str:
    header = ["# vigil[%s]'s dependencies at the versions the tests ran with (pip install --constraint)." % ",".join(EXTRAS),
              "# Generated: .venv/bin/python tests/deploy_images_support.py > deploy/images/constraints.txt"]
    return "\n".join([*header, *(f"{name}=={version}" for name, version in sorted(closure().items()))]) + "\n"


if __name__ == "__main__":
    print(constraints_text(), end="")
