"""Typed dependencies of the routes: the store, the clock, the settings, the metrics, the engine's intake
and the worker, all set on `app.state` by `create_app` (the store and worker once the app starts)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request
from pydantic import StringConstraints

from vigil.notifier.core.clock import Clock
from vigil.notifier.ingest.group_commit import IncidentPlanner
from vigil.notifier.delivery.worker import DeliveryWorker
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store

MAX_LIST = 5000


def _from_state(name: str):
    # async: FastAPI runs a plain `def` dependency in its thread pool, a thread hop per dependency
    async def dependency(request: Request):
        return getattr(request.app.state, name)
    return dependency


StoreDep = Annotated[Store, Depends(_from_state("store"))]
ClockDep = Annotated[Clock, Depends(_from_state("clock"))]
SettingsDep = Annotated[NotifierSettings, Depends(_from_state("settings"))]
MetricsDep = Annotated[NotifierMetrics, Depends(_from_state("metrics"))]
RouteDep = Annotated[IncidentPlanner, Depends(_from_state("route"))]
WorkerDep = Annotated[DeliveryWorker, Depends(_from_state("worker"))]
# `?limit=N` of the list routes: the newest N (default 500)
ListLimit = Annotated[int, Query(ge=1, le=MAX_LIST)]
# a name in a query string (`?team=`, `?to=`): no NUL, which PostgreSQL cannot compare text with (a 500)
QueryName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
