"""Generated files checked in beside their generator: write them, or say which ones are stale.

`write_or_check` is the body of a `build [--out DIR] [--check]` command: `files` maps a path relative
to `out` to its text; `owned` is a glob of the files under `out` that only the generator writes, so one
it no longer generates is reported too.
"""

from __future__ import annotations

from pathlib import Path

import click


def stale(out: Path, files: dict[str, str], owned: str | None = None) -> list[str]:
    """Paths under `out` that differ from `files` or are missing, then owned files nobody generates."""
    changed = [path for path, text in sorted(files.items())
               if not (out / path).is_file() or (out / path).read_text(encoding="utf-8") != text]
    extra = sorted(str(p.relative_to(out)) for p in out.glob(owned) if str(p.relative_to(out)) not in files) if owned else []
    return changed + [f"{path} (not generated any more)" for path in extra]


def write(out: Path, files: dict[str, str]) -> list[Path]:
    written = []
    for path, text in sorted(files.items()):
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def write_or_check(out: Path, files: dict[str, str], check_only: bool, command: str, owned: str | None = None) -> None:
    """Write `files` under `out`, or with `check_only` write nothing and fail (exit 1) naming the stale
    ones; `command` is what the user runs to regenerate them."""
    if check_only:
        changed = stale(out, files, owned)
        if changed:
            raise click.ClickException(f"{len(changed)} stale file(s) under {out} (run `{command}`):\n" + "\n".join(changed))
        click.echo(f"OK: {len(files)} files under {out} are up to date")
        return
    try:
        written = write(out, files)
    except OSError as exc:
        raise click.ClickException(f"cannot write under {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {len(written)} files under {out}")
