"""A stand-in for Grafana's HTTP API (Grafana itself is neither in Debian nor on PyPI, so it cannot run here).

It serves, on a free loopback port, just the endpoints `grafana-client` calls to provision vigil's
dashboards, with Grafana's status codes and answer shapes (Grafana 11's legacy `/api` routes), and
records every request:

- `GET /api/datasources/uid/:uid` (404 when missing), `POST /api/datasources` (409 when the name is
  taken), `PUT /api/datasources/uid/:uid` (403 on a read-only, file-provisioned one);
- `GET /api/folders`, `GET /api/folders/:uid` (404 when missing), `POST /api/folders` (409 when the uid
  is taken);
- `POST /api/dashboards/db` (400 without a uid or with an unknown folder, 412 on an existing dashboard
  without `overwrite`), answering `{id, uid, url, status, version, slug}`.

Every request needs `Authorization: Bearer <token>` (401 otherwise); a token in `viewer_tokens` may read
but not write (403), like a Viewer's.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from vigil.common.http_server import http_server


@dataclass
class Request:
    method: str
    path: str
    authorization: str
    body: object


@dataclass
class GrafanaState:
    token: str
    viewer_tokens: set[str] = field(default_factory=set)
    subpath: str = ""  # served under a subpath, like root_url = https://host/grafana/ with serve_from_sub_path
    datasources: dict[str, dict] = field(default_factory=dict)  # uid -> datasource
    folders: dict[str, dict] = field(default_factory=dict)  # uid -> folder
    dashboards: dict[str, dict] = field(default_factory=dict)  # uid -> {dashboard, folderUid, version}
    requests: list[Request] = field(default_factory=list)
    next_id: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


class _Handler(BaseHTTPRequestHandler):
    state: GrafanaState

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        state = self.state
        path = self.path.split("?")[0]
        with state.lock:
            state.requests.append(Request(method, path, self.headers.get("Authorization", ""), body))
            if not path.startswith(state.subpath + "/api/"):
                return self._answer(404, {"message": "Not found"})
            route = path[len(state.subpath) + len("/api"):]
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            if token != state.token and token not in state.viewer_tokens:
                return self._answer(401, {"message": "invalid API key", "messageId": "api-key.invalid"})
            if method != "GET" and token != state.token:
                return self._answer(403, {"message": "You'll need additional permissions to perform this action. "
                                                     "Permissions needed: datasources:write"})
            status, answer = self._route(method, route, body)
        self._answer(status, answer)

    def _route(self, method: str, route: str, body):
        state = self.state
        if match := re.fullmatch(r"/datasources/uid/([^/]+)", route):
            found = state.datasources.get(match[1])
            if found is None:
                return 404, {"message": "Data source not found"}
            if method == "GET":
                return 200, found
            if found.get("readOnly"):
                return 403, {"message": "Cannot update read-only data source"}
            found.update({**body, "id": found["id"], "version": found["version"] + 1})
            return 200, {"datasource": found, "id": found["id"], "message": "Datasource updated", "name": found["name"]}
        if route == "/datasources" and method == "POST":
            if any(ds["name"] == body["name"] for ds in state.datasources.values()):
                return 409, {"message": "data source with the same name already exists"}
            made = {**body, "id": state.new_id(), "orgId": 1, "readOnly": False, "version": 1}
            state.datasources[made["uid"]] = made
            return 200, {"datasource": made, "id": made["id"], "message": "Datasource added", "name": made["name"]}
        if route == "/folders" and method == "GET":
            return 200, [{"id": f["id"], "uid": f["uid"], "title": f["title"]} for f in state.folders.values()]
        if route == "/folders" and method == "POST":
            uid = body.get("uid") or f"f{state.next_id}"
            if uid in state.folders:
                return 409, {"message": "a folder with the same uid already exists"}
            state.folders[uid] = {"id": state.new_id(), "uid": uid, "title": body["title"], "version": 1}
            return 200, state.folders[uid]
        if match := re.fullmatch(r"/folders/([^/]+)", route):
            found = state.folders.get(match[1])
            return (200, found) if found else (404, {"message": "folder not found", "status": "not-found"})
        if route == "/dashboards/db" and method == "POST":
            return self._save_dashboard(body)
        return 404, {"message": "Not found"}

    def _save_dashboard(self, body):
        state = self.state
        dashboard, folder = body.get("dashboard") or {}, body.get("folderUid", "")
        uid = dashboard.get("uid")
        if not uid:
            return 400, {"message": "Dashboard uid required"}
        if folder and folder not in state.folders:
            return 400, {"message": "folder not found"}
        old = state.dashboards.get(uid)
        if old is not None and not body.get("overwrite"):
            return 412, {"message": "A dashboard with the same uid already exists", "status": "name-exists"}
        version = old["version"] + 1 if old else 1
        state.dashboards[uid] = {"dashboard": dashboard, "folderUid": folder, "version": version,
                                 "id": old["id"] if old else state.new_id()}
        slug = _slug(dashboard.get("title", uid))
        return 200, {"id": state.dashboards[uid]["id"], "uid": uid, "url": f"{state.subpath}/d/{uid}/{slug}",
                     "status": "success", "version": version, "slug": slug}

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")


class GrafanaStandIn:
    """`with GrafanaStandIn(token) as grafana:` serves on 127.0.0.1, a free port; `grafana.url` is its root."""

    def __init__(self, token: str, **state):
        self.state = GrafanaState(token=token, **state)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = http_server("127.0.0.1", 0, handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.state.subpath}"

    def __enter__(self) -> "GrafanaStandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
