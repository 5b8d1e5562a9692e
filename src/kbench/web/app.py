"""The dashboard's FastAPI app: HTML pages and, behind each, the JSON endpoint it is drawn from.

Pages and their endpoints:

- ``/``                      series index (sparklines, latest change)    ``/api/series``
- ``/series/{id}``           every run of a series, change points marked ``/api/series/{id}``
- ``/runs/{id}``             one run: histogram, CDF, counters, context   ``/api/runs/{id}``
- ``/runs/{id}/flame.svg``   the flame graph of the run's profile (interactive SVG)
- ``/compare?a=ID&b=ID``     two runs side by side                        ``/api/compare?a=ID&b=ID``
- ``/regressions``           the regression report (``?since=7d``)        ``/api/regressions``

Every response carries ``Server-Timing: app;dur=<ms>`` (the browser's resource timing
shows it), so page speed can be measured where the user sees it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParameter
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine

from kbench.history.changes import DetectionSettings
from kbench.history.load import NoSuchSeries
from kbench.history.since import parse_since
from kbench.report.regression_html import entry_css, fragment
from kbench.report.units import format_value
from kbench.store.db import RunNotFound
from kbench.web import data
from kbench.web.cache import ChangeCache, SeriesSnapshot
from kbench.web.facts import noise_rows, params_text, request_items, usage_text
from kbench.web.page_text import dashboard_templates
from kbench.web.svg import sparkline_svg

HERE = Path(__file__).resolve().parent
MAX_RUN_ID = 2**31 - 1
"""Run ids are INTEGER in the schema, 32 bits on PostgreSQL: a larger id names no run (422,
not a query the database refuses)."""
RunId = Annotated[int, PathParameter(ge=1, le=MAX_RUN_ID, description="a run id")]
RunIdQuery = Annotated[int, Query(ge=1, le=MAX_RUN_ID, description="a run id")]
OptionalRunIdQuery = Annotated[int | None, Query(ge=1, le=MAX_RUN_ID, description="a run id")]


def plotly_js() -> Path:
    """plotly.min.js, vendored with kbench (``static/vendor``: version, origin and licence)."""
    path = HERE / "static" / "vendor" / "plotly.min.js"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: reinstall kbench-lab")
    return path


page_facts = {"noise_rows": noise_rows, "params_text": params_text, "request_items": request_items,
              "usage_text": usage_text}
"""The helpers the run and compare templates format a run's context with (``web/facts.py``)."""


def create_app(engine: Engine, settings: DetectionSettings | None = None) -> FastAPI:
    """The dashboard over ``engine`` (which it only reads)."""
    app = FastAPI(title="kbench dashboard", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    templates = dashboard_templates(HERE / "templates")
    templates.env.globals.update(format_value=format_value, sparkline_svg=sparkline_svg, **page_facts)
    cache = ChangeCache(settings or DetectionSettings())
    snapshot = SeriesSnapshot(engine)
    script = plotly_js()
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def server_timing(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        response.headers["Server-Timing"] = f"app;dur={1000 * (time.perf_counter() - start):.1f}"
        return response

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    @app.exception_handler(NoSuchSeries)
    async def no_series(request: Request, exc: NoSuchSeries) -> Response:
        return _not_found(request, page, str(exc))

    @app.exception_handler(RunNotFound)
    async def no_run(request: Request, exc: RunNotFound) -> Response:
        return _not_found(request, page, str(exc))

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    def plotly_file() -> FileResponse:
        return FileResponse(script, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    # The /api endpoints return JSONResponse themselves: FastAPI's generic encoder takes
    # 0.6 s over a 10,000-point series, json.dumps 0.13 s.
    @app.get("/api/series")
    def api_index() -> JSONResponse:
        return JSONResponse(data.index_data(snapshot, cache))

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", index=data.index_data(snapshot, cache))

    @app.get("/api/series/{sid}")
    def api_series(sid: str) -> JSONResponse:
        return JSONResponse(data.series_data(snapshot, cache, sid))

    @app.get("/series/{sid}", response_class=HTMLResponse)
    def series_page(request: Request, sid: str) -> HTMLResponse:
        return page(request, "series.html", series=data.series_data(snapshot, cache, sid))

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: RunId, metric: str | None = None) -> JSONResponse:
        return JSONResponse(data.run_data(engine, run_id, metric))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: RunId, metric: str | None = None) -> HTMLResponse:
        return page(request, "run.html", run=data.run_data(engine, run_id, metric))

    @app.get("/runs/{run_id}/flame.svg")
    def run_flame(run_id: RunId) -> Response:
        svg = data.flame_svg_of(engine, run_id)
        if svg is None:
            raise HTTPException(status_code=404, detail=f"run {run_id} has no profile")
        return Response(svg, media_type="image/svg+xml")

    @app.get("/api/compare")
    def api_compare(a: RunIdQuery, b: RunIdQuery, metric: str | None = None) -> JSONResponse:
        return JSONResponse(data.compare_data(engine, a, b, metric))

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, a: OptionalRunIdQuery = None, b: OptionalRunIdQuery = None,
                     metric: str | None = None) -> HTMLResponse:
        compared = data.compare_data(engine, a, b, metric) if a is not None and b is not None else None
        return page(request, "compare.html", compared=compared, a=a, b=b, metric=metric)

    @app.get("/api/regressions")
    def api_regressions(since: str | None = None, improvements: bool = False) -> JSONResponse:
        return JSONResponse(data.regression_data(snapshot, cache, _since(since), improvements)[1])

    @app.get("/regressions", response_class=HTMLResponse)
    def regressions_page(request: Request, since: str | None = None, improvements: bool = False) -> HTMLResponse:
        moment = _since(since)
        found, shown, why = data.regression_data(snapshot, cache, moment, improvements)
        kinds = "regressions and improvements" if improvements else "regressions"
        scope = f"in {shown['series_checked']} series ({kinds}" + (f" since {moment:%Y-%m-%d %H:%M} UTC)" if moment
                                                                     else ")")
        metrics = {entry.series.id: entry.series.metric for entry in found.suspected}

        def link(sid: str, run: int | None) -> str:  # a run opens at the metric that changed
            return f"/runs/{run}?metric={quote(metrics.get(sid, ''))}" if run else f"/series/{sid}"

        report = fragment(found, scope, link=link, why=why)
        return page(request, "regressions.html", report=report, since=since or "", improvements=improvements,
                    entry_css=entry_css())

    return app


def _since(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_since(text)
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=f"since: {exc}") from None
    except OverflowError:
        raise HTTPException(status_code=422, detail=f"since: {text!r} is further back than a date can be") from None


def _not_found(request: Request, page: Callable[..., HTMLResponse], message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": message}, status_code=404)
    return page(request, "error.html", status_code=404, message=message)
