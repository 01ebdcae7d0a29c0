"""`vigil notifier serve --workers N`: N uvicorn processes sharing one listening socket and one database.

The design already makes several notifiers on one database safe (dedup keys, leases, row locks), so
each process is a whole notifier: its own store, delivery worker and group commit. uvicorn starts the
processes and builds each one's app with `app_from_env`; what the parent parsed reaches them as JSON in
an environment variable, without the token (each process reads the token file itself).
"""

from __future__ import annotations

import gc
import json
import logging
import os
from pathlib import Path

from fastapi import FastAPI

ENV = "VIGIL_NOTIFIER_WORKER_ARGS"
FACTORY = "vigil.notifier.serve_workers:app_from_env"


def export_args(settings, token_file: Path, log_level: str) -> None:
    """Put what each worker process needs to rebuild `settings` into the environment it inherits."""
    os.environ[ENV] = json.dumps({
        "settings": settings.model_dump(mode="json", exclude={"token"}),
        "token_file": str(token_file), "log_level": log_level})


def freeze_startup_heap() -> None:
    """Leave what the process built at start-up (modules, schemas, the app) out of the cyclic garbage
    collector's passes: a serving process allocates mostly short-lived objects, and each full pass over
    the start-up heap took tens of milliseconds in the middle of the webhook's answers."""
    gc.collect()
    gc.freeze()


def app_from_env() -> FastAPI:
    """The notifier app of one worker process (uvicorn's factory)."""
    from vigil.notifier.app import create_app
    from vigil.notifier.slow_clients import GuardedHttpTools
    from vigil.notifier.log_mask import mask_secrets_in_logs, notifier_secrets
    from vigil.notifier.settings import NotifierSettings, read_token_file
    from vigil.oncall.loader import load_oncall

    args = json.loads(os.environ[ENV])
    settings = NotifierSettings(token=read_token_file(Path(args["token_file"])), **args["settings"])
    logging.basicConfig(level=args["log_level"].upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    oncall = load_oncall(settings.oncall_config)
    mask_secrets_in_logs(notifier_secrets(settings, oncall))
    GuardedHttpTools.configure(settings)  # this process's connections: deadlines and the per-client cap
    app = create_app(settings, oncall)
    freeze_startup_heap()
    return app
