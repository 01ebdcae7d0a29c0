"""Console passwords: `vigil oncall hash-password` prints an Argon2id hash that, pasted into the on-call
file, lets that person log in to the console; the file refuses anything else in `password_hash` at its
line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vigil.cli import main
from vigil.notifier.console.passwords import verify_password
from vigil.oncall.loader import OncallConfigError, parse_oncall

PERSON = """people:
  dana:
    password_hash: {hash}
    contacts:
      phone: {{inbox: true, kind: phone}}
"""


def hashed(password: str, confirm: bool = False) -> tuple[int, str]:
    args = ["oncall", "hash-password"] + ([] if confirm else ["--stdin"])
    text = f"{password}\n{password}\n" if confirm else f"{password}\n"
    result = CliRunner().invoke(main, args, input=text)
    return result.exit_code, result.output.strip().splitlines()[-1] if result.output.strip() else ""


def test_the_printed_hash_logs_the_person_in_with_that_password_only():
    code, printed = hashed("tea at four, not before")
    assert code == 0 and printed.startswith("$argon2id$") and "tea" not in printed
    config = parse_oncall(PERSON.format(hash=f'"{printed}"'))
    stored = config.people["dana"].password_hash
    assert verify_password(stored, "tea at four, not before")
    assert not verify_password(stored, "tea at five") and not verify_password(None, "tea at four, not before")
    assert hashed("tea at four, not before")[1] != printed  # salted: the same password hashes differently


def test_asked_twice_on_a_terminal_and_an_empty_password_is_refused():
    code, printed = hashed("pw-typed-twice", confirm=True)
    assert code == 0 and verify_password(printed, "pw-typed-twice")
    code, _ = hashed("")
    assert code == 2


@pytest.mark.parametrize("value", ['"hunter2"', '"$2b$12$abcdefghijklmnopqrstuv"', "12"])
def test_the_oncall_file_refuses_a_password_that_is_not_an_argon2id_hash_at_its_line(value):
    with pytest.raises(OncallConfigError) as refused:
        parse_oncall(PERSON.format(hash=value), "oncall.yaml")
    assert "oncall.yaml:3" in str(refused.value) and "password_hash" in str(refused.value)
