"""``kbench kmod new NAME``: a module with one benchmark, ready to edit and build."""

from __future__ import annotations

import re
from pathlib import Path

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,30}$")

TEMPLATE = """\
// SPDX-License-Identifier: GPL-2.0
/*
 * {name}: a kbench benchmark in its own module (made by `kbench kmod new`).
 *
 * Edit {name}_call(): it is the timed code, called `batch` times per sample.
 * Build and run it in a Debian kernel under qemu:
 *   kbench run kfunc.{name} --kernel deb:6.1.0-56-amd64 --module {name}.c
 *
 * KBENCH_TRACE_START(3)/KBENCH_TRACE_STOP(3) time one region where it runs:
 * the run's report then shows key 3's distribution and the tracepoints' own
 * overhead.  A STOP logs only if its START ran since the last STOP of the
 * key, so a region can be timed along one path of an if (see kbench.h).
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "kbench.h"

/* The tracepoint key of the summing loop (0 .. trace_keys - 1). */
#define SUM_KEY 3

static struct kbench_param {name}_params[] = {{
	{{
		.name = "len",
		.description = "bytes summed per call",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 16,
		.value.u64 = 64,
	}},
}};

struct {name}_state {{
	u8 *buf;
	u64 len;
	u64 sink;
}};

/* Untimed: allocate and fill the inputs from the reproducible dataset. */
static int {name}_setup(struct kbench_ctx *ctx)
{{
	struct {name}_state *st = kzalloc(sizeof(*st), GFP_KERNEL);
	u64 i;

	if (!st)
		return -ENOMEM;
	st->len = {name}_params[0].value.u64;
	st->buf = kmalloc(st->len, GFP_KERNEL);
	if (!st->buf) {{
		kfree(st);
		return -ENOMEM;
	}}
	for (i = 0; i < st->len; i++)
		st->buf[i] = (u8)ctx->dataset[i % ctx->dataset_size];
	ctx->priv = st;
	return 0;
}}

/* Timed: must not sleep when ctx->atomic (irqs_off/preempt_off runs). */
static void {name}_call(struct kbench_ctx *ctx, u32 i)
{{
	struct {name}_state *st = ctx->priv;
	u64 sum = ctx->dataset[i];
	u64 k;

	KBENCH_TRACE_START(SUM_KEY);
	for (k = 0; k < st->len; k++)
		sum += st->buf[k];
	KBENCH_TRACE_STOP(SUM_KEY);
	st->sink += sum;
}}

static int {name}_report(struct kbench_ctx *ctx, char *buf, size_t size)
{{
	struct {name}_state *st = ctx->priv;

	return scnprintf(buf, size, " sink=%llu", st->sink);
}}

static void {name}_teardown(struct kbench_ctx *ctx)
{{
	struct {name}_state *st = ctx->priv;

	kfree(st->buf);
	kfree(st);
}}

static struct kbench {name}_bench = {{
	.name = "{name}",
	.description = "sum len bytes (edit {name}.c)",
	.params = {name}_params,
	.nr_params = ARRAY_SIZE({name}_params),
	.setup = {name}_setup,
	.call = {name}_call,
	.report = {name}_report,
	.teardown = {name}_teardown,
	.owner = THIS_MODULE,
}};

static int __init {name}_init(void)
{{
	int ret = KBENCH_TRACE_NAME(SUM_KEY, "sum_loop");

	if (ret)
		return ret;
	return kbench_register(&{name}_bench);
}}

static void __exit {name}_exit(void)
{{
	kbench_unregister(&{name}_bench);
}}

module_init({name}_init);
module_exit({name}_exit);

MODULE_DESCRIPTION("kbench benchmark {name}");
MODULE_LICENSE("GPL");
"""


class ScaffoldError(ValueError):
    """The module name is invalid or the destination already exists."""


def scaffold_module(name: str, directory: Path) -> Path:
    """Write ``directory/name.c``; returns its path. Refuses to overwrite anything."""
    if not NAME_PATTERN.match(name):
        raise ScaffoldError(
            f"invalid benchmark name {name!r}: use lower-case letters, digits and _ (a C identifier, ≤ 31 chars)"
        )
    source = directory / f"{name}.c"
    if source.exists():
        raise ScaffoldError(f"{source} already exists; nothing was written")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(source, "x") as out:
            out.write(TEMPLATE.format(name=name))
    except OSError as exc:
        raise ScaffoldError(f"cannot write {source}: {exc.strerror or exc}; nothing was written") from exc
    return source
