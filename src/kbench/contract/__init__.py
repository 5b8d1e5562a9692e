"""kbench.contract: the vocabulary every room shares; it imports nothing else of kbench.

- vocabulary   directions (lower/higher is better) and verdict words
- benchmark    Benchmark and ParamSpec: what can be measured, with its parameters
- request      RunRequest: what the user asked to measure, independent of where
- measurement  Measurement: the raw outcome of one run (header, columns in order)
- series       MetricSeries: one metric's values with its unit and direction

Import the module you need (``from kbench.contract.request import RunRequest``): this
package re-exports nothing, so the light ones stay light.
"""
