"""Console passwords: Argon2id hashes (argon2-cffi, its default cost: ~64 MiB, a few tens of ms a check)
kept in the on-call file's `people.<key>.password_hash`; the file never holds a password."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_HASHER = PasswordHasher()
# checked against when the user is unknown, so an unknown name takes as long as a wrong password
_DUMMY = _HASHER.hash("not a password of anyone")


def hash_password(password: str) -> str:
    if not password:
        raise ValueError("the password is empty")
    return _HASHER.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _HASHER.verify(password_hash or _DUMMY, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
