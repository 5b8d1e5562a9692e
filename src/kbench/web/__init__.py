"""The dashboard: a read-only web app over the results store (``kbench serve``).

FastAPI serves HTML pages (Jinja2 templates) and, behind every page, a JSON endpoint
under ``/api``; the pages draw their plots with Plotly, whose plotly.js is vendored in
``static/vendor`` and served from there (nothing is fetched from the network). Install with
``pip install 'kbench-lab[web]'``.
"""
