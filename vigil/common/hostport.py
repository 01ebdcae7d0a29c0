"""HOST:PORT: one parser for listen addresses (IPv6 in brackets: `[::1]:9095`) and one formatter."""

from __future__ import annotations

from typing import NamedTuple

EXAMPLE = "127.0.0.1:9095 or [::1]:9095"


class HostPort(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        return format_host_port(self.host, self.port)


def parse_host_port(value: str, default_host: str | None = None) -> HostPort:
    """`host:port`, `[ipv6]:port`, or `:port` (then `default_host`, when given); ValueError otherwise."""
    text = str(value).strip()

    def refuse(reason: str) -> ValueError:
        return ValueError(f"{value!r} is not HOST:PORT: {reason} (expected HOST:PORT such as {EXAMPLE})")

    host, sep, port = text.rpartition(":")
    if not sep:
        raise refuse("no ':' between host and port")
    if host.startswith("["):
        if not host.endswith("]"):
            raise refuse("an IPv6 address needs both brackets, like [::1]")
        host = host[1:-1]
        if not host:
            raise refuse("no host in the brackets")
    elif ":" in host:
        raise refuse("an IPv6 address goes in brackets, like [::1]:9095")
    elif "]" in host:
        raise refuse("a stray ']'")
    if not host:
        if default_host is None:
            raise refuse("no host")
        host = default_host
    if not port.isascii() or not port.isdigit():
        raise refuse(f"the port {port!r} is not a number" if port else "no port")
    if not 1 <= int(port) <= 65535:
        raise refuse(f"the port {int(port)} is not in 1..65535")
    return HostPort(host, int(port))


def format_host_port(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets (as URLs and listen flags want it)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def http_url(host: str, port: int, path: str = "") -> str:
    """`http://host:port/path`, with an IPv6 address in brackets."""
    return f"http://{format_host_port(host, port)}{path}"
