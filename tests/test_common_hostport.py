"""One HOST:PORT parser for every listen flag, IPv6 in brackets included; bad values are clean usage errors."""

from __future__ import annotations

import socket

import pytest
import requests
from click.testing import CliRunner

from cli_support import all_commands, command
from exporters_nvml_support import free_ports, run_until_ready, stop
from vigil.cli import main
from vigil.common.click_types import HostPort
from vigil.common.hostport import format_host_port, http_url, parse_host_port


@pytest.mark.parametrize("text, default_host, expected", [
    ("127.0.0.1:9095", None, ("127.0.0.1", 9095)),
    ("localhost:1", None, ("localhost", 1)),
    ("[::1]:9095", None, ("::1", 9095)),
    ("[fe80::1%eth0]:65535", None, ("fe80::1%eth0", 65535)),
    (":9101", "0.0.0.0", ("0.0.0.0", 9101)),
])
def test_host_port_and_bracketed_ipv6(text, default_host, expected):
    assert parse_host_port(text, default_host) == expected


@pytest.mark.parametrize("text, reason", [
    ("nowhere", "no ':' between host and port"),
    ("9095", "no ':' between host and port"),
    (":9095", "no host"),
    ("host:", "no port"),
    ("host:http", "the port 'http' is not a number"),
    ("host:99999", "the port 99999 is not in 1..65535"),
    ("host:0", "the port 0 is not in 1..65535"),
    ("::1:9095", "an IPv6 address goes in brackets, like [::1]:9095"),
    ("[::1:9095", "an IPv6 address needs both brackets, like [::1]"),
    ("[]:9095", "no host in the brackets"),
    ("host]:9095", "a stray ']'"),
])
def test_bad_addresses_say_what_is_wrong(text, reason):
    with pytest.raises(ValueError) as caught:
        parse_host_port(text)
    assert str(caught.value) == (f"{text!r} is not HOST:PORT: {reason} "
                                 "(expected HOST:PORT such as 127.0.0.1:9095 or [::1]:9095)")


def test_addresses_are_written_back_with_brackets_for_ipv6():
    assert format_host_port("::1", 9095) == "[::1]:9095" == str(parse_host_port("[::1]:9095"))
    assert format_host_port("127.0.0.1", 9095) == "127.0.0.1:9095"
    assert http_url("::1", 9600, "/-/ready") == "http://[::1]:9600/-/ready"


# every flag that takes HOST:PORT: (command path, other required arguments, flag)
LISTEN_FLAGS = [
    (("notifier", "serve"), ["--token-file", "t", "--oncall-config", "o"], "--listen"),
    (("exporter", "gpu"), [], "--listen"),
    (("exporter", "gpu"), [], "--control-listen"),
    (("exporter", "node"), [], "--listen"),
    (("aiops", "serve"), ["--model-dir", "m"], "--listen"),
]
IDS = [f"{' '.join(p)} {f}" for p, _, f in LISTEN_FLAGS]


@pytest.mark.parametrize("path, args, flag", LISTEN_FLAGS, ids=IDS)
def test_every_listen_flag_takes_ipv6_in_brackets(path, args, flag):
    ctx = command(path).make_context(path[-1], [*args, flag, "[::1]:9200"])
    assert ctx.params[flag.lstrip("-").replace("-", "_")] == ("::1", 9200)


@pytest.mark.parametrize("path, args, flag", LISTEN_FLAGS, ids=IDS)
@pytest.mark.parametrize("bad", ["nowhere", "host:99999", "::1:9200"])
def test_a_bad_address_is_a_usage_error_naming_the_flag(path, args, flag, bad):
    result = CliRunner().invoke(main, [*path, *args, flag, bad])
    assert result.exit_code == 2, result.output
    assert "Usage:" in result.output and f"Invalid value for '{flag}': '{bad}' is not HOST:PORT" in result.output
    assert "Traceback" not in result.output


def test_the_table_lists_every_listen_flag():
    found = {(path, opt) for path, cmd in all_commands() for param in cmd.params if isinstance(param.type, HostPort)
             for opt in param.opts if opt.startswith("--")}
    assert found == {(path, flag) for path, _, flag in LISTEN_FLAGS}


def ipv6_loopback() -> bool:
    with socket.socket(socket.AF_INET6) as probe:
        try:
            probe.bind(("::1", 0))
        except OSError:
            return False
    return True


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_listen_address_is_served_not_only_parsed():
    base = free_ports(2)
    proc = run_until_ready(["--backend", "sim", "--sim-nodes", "1", "--sim-gpus", "1", "--listen", f"[::1]:{base}",
                            "--control-listen", f"[::1]:{base + 1}"], f"http://[::1]:{base}/metrics")
    try:
        assert 'vigil_gpu_up{' in requests.get(f"http://[::1]:{base}/metrics", timeout=5).text
        chaos = requests.get(f"http://[::1]:{base + 1}/chaos", timeout=5).json()
        assert [node["url"] for node in chaos["nodes"]] == [f"http://[::1]:{base}/metrics"]
    finally:
        stop(proc)
