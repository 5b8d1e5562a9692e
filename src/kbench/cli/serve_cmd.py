"""``kbench serve``: the dashboard (series, change points, runs, compare, regressions) in a browser."""

from __future__ import annotations

import click

from kbench.cli.history_options import detection_options, settings_from
from kbench.cli.main import Context, err_console, pass_context, user_errors
from kbench.extras import require


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback makes the dashboard reachable from the network.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@detection_options
@pass_context
def serve_cmd(ctx: Context, host: str, port: int, window: int, max_pvalue: float, raw_values: bool) -> None:
    """Serve a read-only web dashboard over the results database: every series with its change
    points, each run (histogram, CDF, context), two runs side by side, the regression report.
    Every page has a JSON endpoint behind it (/api/...)."""
    require("web", "kbench serve")
    from kbench.web.server import prepare, serve

    settings = settings_from(window, max_pvalue, raw_values)
    with user_errors():
        prepared = prepare(ctx.db_url, host, port, settings)
    if host not in ("127.0.0.1", "localhost", "::1"):
        err_console.print(f"kbench serve: listening on {host}: the dashboard is reachable from other machines "
                          "(read-only, no authentication)", highlight=False, markup=False)
    err_console.print(f"kbench dashboard on {prepared.url} (Ctrl-C stops it)", highlight=False, markup=False)
    with user_errors():
        serve(prepared)
