"""Provision vigil's dashboards into a running Grafana over its HTTP API, with `grafana-client`.

Three kinds of objects, each created or updated in place, so a second run changes nothing but versions:

- the Prometheus datasource with the fixed uid every panel names (`vigil-prometheus`), pointing at a
  Prometheus URL as *Grafana's server* reaches it;
- the folder `vigil` (uid `vigil`; a folder already titled `vigil` is reused);
- every dashboard of `dashboards/json/` (`overwrite: true`, their stable uids) in that folder.

`provision()` returns what it did per object; every failure (Grafana unreachable, a refused token, a 4xx
or 5xx answer, something that is not Grafana) is a `ProvisionError` with one line that says what to do.
`grafana_target()` checks the URL and reads the token first: never from the command line, and never sent
over plain HTTP to another host unless the caller allows it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from grafana_client import GrafanaApi
from grafana_client.client import GrafanaClientError, GrafanaException, GrafanaUnauthorizedError
from requests.exceptions import Timeout

from vigil.notifier.settings import is_loopback, others_can_read, read_token_file

from .build import DATASOURCE_FILE, DEFAULT_OUTPUT, provisioning

FOLDER_UID = "vigil"
FOLDER_TITLE = "vigil"  # the file provider's folder name too (build.provisioning)
TOKEN_ENV = "VIGIL_GRAFANA_TOKEN"
ROLE_HINT = ("the token needs the Admin role (an Editor may not change datasources), or a role with datasources:create, "
             "datasources:write, folders:create, dashboards:create and dashboards:write")
DEFAULT_TIMEOUT_S = 10.0


class ProvisionError(Exception):
    """Provisioning cannot go on; the message is one line that says why and what to do."""


@dataclass(frozen=True)
class GrafanaTarget:
    url: str  # without a trailing slash
    token: str = ""

    def __repr__(self) -> str:  # never show the token in a traceback or a log line
        return f"GrafanaTarget(url={self.url!r})"


@dataclass(frozen=True)
class Provisioned:
    kind: str  # "datasource", "folder" or "dashboard"
    uid: str
    title: str
    action: str  # "created", "updated", "exists" or "kept (…)"
    url: str = ""  # a dashboard's full URL; the datasource's Prometheus URL

    def line(self) -> str:
        where = f" → {self.url}" if self.url else ""
        return f"{self.kind} {self.uid} ({self.title}): {self.action}{where}"


def grafana_target(url: str, token_file: Path | None = None, insecure: bool = False,
                   environ: dict[str, str] | None = None) -> GrafanaTarget:
    """The checked Grafana URL and its API token (`token_file`, else $VIGIL_GRAFANA_TOKEN)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProvisionError(f"--grafana-url {url!r} is not an http:// or https:// URL of a Grafana server")
    if parts.username or parts.password:
        raise ProvisionError("--grafana-url must not carry a user or password: give an API token with "
                             f"--grafana-token-file or ${TOKEN_ENV}")
    if parts.scheme == "http" and not is_loopback(parts.hostname) and not insecure:
        raise ProvisionError(f"--grafana-url {url} is plain HTTP to another host: the API token would cross the "
                             "network in clear; use https://, or pass --grafana-insecure to accept that")
    if token_file is not None:
        try:
            token = read_token_file(token_file)
        except (OSError, ValueError) as exc:
            raise ProvisionError(f"cannot read --grafana-token-file: {getattr(exc, 'strerror', None) or exc}") from None
        if others_can_read(token_file):
            raise ProvisionError(f"--grafana-token-file {token_file} is readable by other users; make it "
                                 f"owner-only with: chmod 600 {token_file}")
    else:
        token = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
        if not token:
            raise ProvisionError(f"provisioning into Grafana needs an API token: put it in a file given with "
                                 f"--grafana-token-file, or in ${TOKEN_ENV} ({ROLE_HINT})")
    return GrafanaTarget(url.strip().rstrip("/"), token)


def dashboard_files(folder: Path = DEFAULT_OUTPUT / "json") -> dict[str, dict]:
    """{file name: dashboard model} of the checked-in dashboards."""
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def datasource_payload(prometheus_url: str, scrape_interval: str) -> dict:
    """The datasource of the provisioning file, as the API takes it: not the default (it is the user's
    Grafana; the panels name the uid), and not `editable` (a provisioning-file field)."""
    source = dict(provisioning(prometheus_url, scrape_interval)[DATASOURCE_FILE]["datasources"][0])
    source.pop("editable", None)
    return {**source, "isDefault": False}


def provision(target: GrafanaTarget, prometheus_url: str, scrape_interval: str = "15s",
              dashboards: dict[str, dict] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Provisioned]:
    """Create or update the datasource, the folder and every dashboard; what was done, in that order."""
    api = _api(target, timeout_s)
    folders = _probe(api, target)
    done = [_datasource(api, target, datasource_payload(prometheus_url, scrape_interval))]
    folder = _folder(api, target, folders)
    done.append(folder)
    models = dashboard_files() if dashboards is None else dashboards
    done += [_dashboard(api, target, model, folder.uid) for model in models.values()]
    return done


def _api(target: GrafanaTarget, timeout_s: float) -> GrafanaApi:
    parts = urlsplit(target.url)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # GrafanaApi writes host:port as is
    prefix = parts.path.strip("/")  # grafana-client appends "api" right after it: a subpath needs its slash
    return GrafanaApi(auth=target.token, host=host, port=parts.port, protocol=parts.scheme,
                      url_path_prefix=f"{prefix}/" if prefix else "", timeout=timeout_s)


def _call(target: GrafanaTarget, doing: str, request, *args, missing_ok: bool = False, **kwargs):
    """Run one grafana-client request; its failures become a ProvisionError naming `doing`.
    With `missing_ok`, a 404 answers None."""
    try:
        answer = request(*args, **kwargs)
    except GrafanaUnauthorizedError:
        raise ProvisionError(f"Grafana at {target.url} refused the API token (401 Unauthorized) while trying to "
                             f"{doing}: check --grafana-token-file or ${TOKEN_ENV}") from None
    except Timeout:  # grafana-client 3 lets requests' timeout through
        raise ProvisionError(f"Grafana at {target.url} did not answer in time while trying to {doing}") from None
    except GrafanaClientError as exc:
        if exc.status_code == 404 and missing_ok:
            return None
        if exc.status_code == 403:
            raise ProvisionError(f"Grafana at {target.url} forbids the token to {doing} (403 Forbidden: "
                                 f"{_message(exc)}); {ROLE_HINT}") from None
        raise ProvisionError(f"Grafana at {target.url} refused to {doing}: {exc.status_code} {_message(exc)}") from None
    except GrafanaException as exc:  # 5xx, or the connection failed mid-request
        raise ProvisionError(f"Grafana at {target.url} failed to {doing}: {_message(exc)}") from None
    except OSError as exc:  # grafana-client lets the HTTP library's connection errors through
        raise ProvisionError(f"cannot reach Grafana at {target.url} ({type(exc).__name__}: "
                             f"{_first_line(str(exc))}); is it running, and is the URL right?") from None
    if answer is not None and not isinstance(answer, (dict, list)):
        raise ProvisionError(f"{target.url} does not answer like Grafana's HTTP API (not JSON) while trying to "
                             f"{doing}; is --grafana-url the Grafana server's root URL?")
    return answer


def _probe(api: GrafanaApi, target: GrafanaTarget) -> list:
    """The folders (a request every token that may provision can make): is this Grafana, is the token good?"""
    folders = _call(target, "list folders", api.folder.get_all_folders, missing_ok=True)
    if not isinstance(folders, list):
        raise ProvisionError(f"{target.url} does not answer like Grafana's HTTP API (GET /api/folders: "
                             f"{'404 Not Found' if folders is None else 'not a list'}); is --grafana-url the Grafana "
                             "server's root URL?")
    return folders


def _datasource(api: GrafanaApi, target: GrafanaTarget, payload: dict) -> Provisioned:
    uid, name = payload["uid"], payload["name"]
    existing = _call(target, f"read datasource {uid}", api.datasource.get_datasource_by_uid, uid, missing_ok=True)
    if existing is None:
        _call(target, f"create datasource {uid}", api.datasource.create_datasource, payload)
        return Provisioned("datasource", uid, name, "created", payload["url"])
    if existing.get("readOnly"):  # provisioned from a file on Grafana's side: the API may not change it
        return Provisioned("datasource", uid, existing.get("name", name),
                           "kept (provisioned from a file in Grafana, read-only)", existing.get("url", ""))
    _call(target, f"update datasource {uid}", api.datasource.update_datasource_by_uid, uid, payload)
    return Provisioned("datasource", uid, name, "updated", payload["url"])


def _folder(api: GrafanaApi, target: GrafanaTarget, folders: list) -> Provisioned:
    found = _call(target, f"read folder {FOLDER_UID}", api.folder.get_folder, FOLDER_UID, missing_ok=True)
    if found is None:  # a folder titled "vigil" made otherwise (the file provider, by hand) is reused
        found = next((f for f in folders if isinstance(f, dict) and f.get("title") == FOLDER_TITLE), None)
    if found is not None:
        return Provisioned("folder", found.get("uid", FOLDER_UID), found.get("title", FOLDER_TITLE), "exists")
    made = _call(target, f"create folder {FOLDER_TITLE}", api.folder.create_folder, FOLDER_TITLE, uid=FOLDER_UID)
    return Provisioned("folder", made.get("uid", FOLDER_UID), FOLDER_TITLE, "created")


def _dashboard(api: GrafanaApi, target: GrafanaTarget, model: dict, folder_uid: str) -> Provisioned:
    uid, title = model["uid"], model.get("title", model["uid"])
    body = {"dashboard": {**model, "id": None}, "folderUid": folder_uid, "overwrite": True,
            "message": "vigil dashboards provision"}
    saved = _call(target, f"save dashboard {uid}", api.dashboard.update_dashboard, body) or {}
    action = "created" if saved.get("version") == 1 else "updated"
    return Provisioned("dashboard", saved.get("uid", uid), title, action, _full_url(target, saved.get("url", f"/d/{uid}")))


def _full_url(target: GrafanaTarget, path: str) -> str:
    """Grafana answers a dashboard's path (with its subpath, when served under one); the URL to open it."""
    if not path.startswith("/"):
        return path
    parts = urlsplit(target.url)
    prefix = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{'' if path.startswith(prefix + '/') else prefix}{path}"


def fleet_url(done: list[Provisioned]) -> str | None:
    return next((p.url for p in done if p.kind == "dashboard" and p.uid == "vigil-fleet"), None)


def _message(exc: GrafanaException) -> str:
    response = exc.response
    if isinstance(response, dict) and response.get("message"):
        return _first_line(str(response["message"]))
    return _first_line(str(exc.message or exc))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no reason given"
