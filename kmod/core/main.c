// SPDX-License-Identifier: GPL-2.0
/*
 * kbench.ko - time single kernel functions from inside the kernel.
 *
 * This file holds the registry: the built-in benchmarks (benches/list.h), the
 * registration API for other modules, and /sys/kernel/kbench/ itself.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#ifdef CONFIG_X86
#include <asm/tsc.h>
#endif

#include "kbench_core.h"
#include "trace.h"
#include "../benches/benches.h"

#define KBENCH_NAME_MAX		32

struct kobject *kbench_root;
unsigned int kbench_tsc_khz;
unsigned int kbench_tsc_khz_kernel;	/* the kernel's own tsc_khz */

#ifdef CONFIG_X86
/* Allowed gap between the kernel's TSC rate and kbench's measurement (ppm). */
#define KBENCH_TSC_AGREE_PPM	10000U

/*
 * The kernel's rate when the measurement agrees with it within
 * KBENCH_TSC_AGREE_PPM (it is the finer one), else the measurement.
 */
static unsigned int __init kbench_tsc_choose(unsigned int kernel,
					     unsigned int measured)
{
	u64 gap;

	if (!measured)
		return kernel;
	gap = measured > kernel ? measured - kernel : kernel - measured;
	if (gap * 1000000ULL <= (u64)kernel * KBENCH_TSC_AGREE_PPM)
		return kernel;
	pr_info("the kernel's tsc_khz %u is %llu ppm off the TSC's measured rate %u kHz: using %u\n",
		kernel, div64_u64(gap * 1000000ULL, kernel), measured, measured);
	return measured;
}
#endif

static LIST_HEAD(kbench_list);
static DEFINE_MUTEX(kbench_list_lock);	/* protects kbench_list */

static bool kbench_valid(const struct kbench *b)
{
	size_t len, i;

	if (!b || !b->name || !b->description || !b->call)
		return false;
	if (b->nr_params && !b->params)
		return false;
	len = strlen(b->name);
	if (!len || len > KBENCH_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!islower(b->name[i]) && !isdigit(b->name[i]) &&
		    b->name[i] != '_')
			return false;
	for (i = 0; i < b->nr_params; i++) {
		const struct kbench_param *p = &b->params[i];

		if (p->type == KBENCH_PARAM_U64 &&
		    (p->min > p->max || p->value.u64 < p->min ||
		     p->value.u64 > p->max))
			return false;
	}
	return true;
}

static struct kbench_entry *kbench_find(const char *name)
{
	struct kbench_entry *e;

	list_for_each_entry(e, &kbench_list, node)
		if (!strcmp(e->bench->name, name))
			return e;
	return NULL;
}

/**
 * kbench_register - add a benchmark under /sys/kernel/kbench/<name>/
 * @bench: the benchmark; must stay valid until kbench_unregister()
 *
 * Return: 0, -EINVAL for a malformed benchmark (name not [a-z0-9_]+ of at
 * most 32 characters, no call, a parameter named like a common attribute
 * or with its default out of range), -EEXIST if the name is taken, or
 * -ENOMEM.
 */
int kbench_register(struct kbench *bench)
{
	return kbench_register_suffixed(bench, NULL);
}
EXPORT_SYMBOL_GPL(kbench_register);

/**
 * kbench_register_suffixed - kbench_register() under the name + @suffix
 * @bench: the benchmark; its name reads name + @suffix until
 *	kbench_unregister()
 * @suffix: appended to the name ([a-z0-9_]*), or NULL
 *
 * Return: as kbench_register(); -EINVAL also when the name with its suffix
 * is not a valid name.
 */
int kbench_register_suffixed(struct kbench *bench, const char *suffix)
{
	struct kbench_entry *e;
	const char *own_name;
	char *name = NULL;
	int ret;

	if (!bench || !bench->name)
		return -EINVAL;
	own_name = bench->name;
	if (suffix && *suffix) {
		name = kasprintf(GFP_KERNEL, "%s%s", bench->name, suffix);
		if (!name)
			return -ENOMEM;
	}
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		kfree(name);
		return -ENOMEM;
	}
	e->own_name = own_name;
	e->suffixed_name = name;
	if (name)
		bench->name = name;
	if (!kbench_valid(bench)) {
		bench->name = own_name;
		kfree(name);
		kfree(e);
		return -EINVAL;
	}
	e->bench = bench;
	mutex_init(&e->run_lock);
	mutex_init(&e->lock);
	e->cfg.loop_count = 10000;
	e->cfg.warmup = 100;
	e->cfg.batch = 1;
	e->cfg.cpu = -1;
	e->cfg.dataset_size = 4096;
	e->cfg.seed = 1;
	e->cfg.cpus_all = true;

	mutex_lock(&kbench_list_lock);
	/* "trace" and "ab" are directories of the core. */
	if (kbench_find(bench->name) || !strcmp(bench->name, "trace") ||
	    !strcmp(bench->name, "ab")) {
		mutex_unlock(&kbench_list_lock);
		bench->name = own_name;
		kfree(name);
		kfree(e);
		return -EEXIST;
	}
	ret = kbench_sysfs_add(e);	/* frees e on failure */
	if (ret) {
		bench->name = own_name;
		kfree(name);
	} else {
		list_add_tail(&e->node, &kbench_list);
	}
	mutex_unlock(&kbench_list_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(kbench_register_suffixed);

/**
 * kbench_entry_get - the registered benchmark called @name, held
 * @name: its name
 *
 * Holds the entry's kobject and the module that registered the benchmark,
 * so neither the entry nor its struct kbench goes away until
 * kbench_entry_put(): unloading that module is refused meanwhile.
 *
 * Return: the entry, or NULL if there is none (or it is being removed).
 */
struct kbench_entry *kbench_entry_get(const char *name)
{
	struct kbench_entry *e;

	mutex_lock(&kbench_list_lock);
	e = kbench_find(name);
	/* Still listed: its module has not reached kbench_unregister(). */
	if (e && (READ_ONCE(e->dying) || !try_module_get(e->bench->owner)))
		e = NULL;
	if (e)
		kobject_get(&e->kobj);
	mutex_unlock(&kbench_list_lock);
	return e;
}

void kbench_entry_put(struct kbench_entry *e)
{
	module_put(e->bench->owner);
	kobject_put(&e->kobj);
}

static void kbench_destroy(struct kbench_entry *e)
{
	struct kbench *bench = e->bench;
	const char *own_name = e->own_name;
	char *suffixed_name = e->suffixed_name;

	/* Stops a run in progress at its next chunk boundary. */
	WRITE_ONCE(e->dying, true);
	kbench_sysfs_del(e);
	/* Registered again, the benchmark gets its suffix again. */
	bench->name = own_name;
	kfree(suffixed_name);
}

/**
 * kbench_unregister - remove a benchmark added by kbench_register()
 * @bench: the benchmark
 *
 * Aborts a run of it in progress and waits until nothing uses @bench.
 */
void kbench_unregister(struct kbench *bench)
{
	struct kbench_entry *e, *found = NULL;

	mutex_lock(&kbench_list_lock);
	list_for_each_entry(e, &kbench_list, node) {
		if (e->bench == bench) {
			found = e;
			list_del(&e->node);
			break;
		}
	}
	mutex_unlock(&kbench_list_lock);
	if (found)
		kbench_destroy(found);
}
EXPORT_SYMBOL_GPL(kbench_unregister);

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", KBENCH_VERSION);
}

static ssize_t top_tsc_khz_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", kbench_tsc_khz);
}

static ssize_t tsc_khz_kernel_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", kbench_tsc_khz_kernel);
}

static ssize_t benchmarks_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct kbench_entry *e;
	int len = 0;

	mutex_lock(&kbench_list_lock);
	list_for_each_entry(e, &kbench_list, node)
		len += sysfs_emit_at(buf, len, "%s\n", e->bench->name);
	mutex_unlock(&kbench_list_lock);
	return len;
}

static struct kobj_attribute version_attr = __ATTR(version, 0400,
						   version_show, NULL);
static struct kobj_attribute top_tsc_khz_attr =
	__ATTR(tsc_khz, 0400, top_tsc_khz_show, NULL);
static struct kobj_attribute benchmarks_attr =
	__ATTR(benchmarks, 0400, benchmarks_show, NULL);
static struct kobj_attribute tsc_khz_kernel_attr =
	__ATTR(tsc_khz_kernel, 0400, tsc_khz_kernel_show, NULL);

static struct attribute *kbench_top_attrs[] = {
	&version_attr.attr,
	&top_tsc_khz_attr.attr,
	&tsc_khz_kernel_attr.attr,
	&benchmarks_attr.attr,
	NULL,
};

static const struct attribute_group kbench_top_group = {
	.attrs = kbench_top_attrs,
};

static void kbench_remove_all(void)
{
	struct kbench_entry *e;

	for (;;) {
		mutex_lock(&kbench_list_lock);
		e = list_first_entry_or_null(&kbench_list, struct kbench_entry,
					     node);
		if (e)
			list_del(&e->node);
		mutex_unlock(&kbench_list_lock);
		if (!e)
			break;
		kbench_destroy(e);
	}
}

static int __init kbench_register_builtin(struct kbench *bench)
{
	int ret = kbench_register(bench);

	if (ret)
		pr_err("cannot register %s: %d\n", bench->name, ret);
	return ret;
}

/* Registers benches/list.h in order; stops at the first failure. */
static int __init kbench_register_builtins(void)
{
	int ret = 0;

#define KBENCH_BUILTIN(name) \
	(ret = ret ? ret : kbench_register_builtin(&kbench_##name))
#include "../benches/list.h"
#undef KBENCH_BUILTIN
	return ret;
}

static int __init kbench_init(void)
{
	int ret;

#ifdef CONFIG_X86
	if (!boot_cpu_has(X86_FEATURE_TSC) || !tsc_khz) {
		pr_err("no usable TSC\n");
		return -ENODEV;
	}
	kbench_tsc_khz_kernel = tsc_khz;
	kbench_tsc_khz = kbench_tsc_choose(tsc_khz, kbench_tsc_measure_khz());
#else
	kbench_tsc_khz = 1000000;	/* kbench_cycles() counts ns */
	kbench_tsc_khz_kernel = kbench_tsc_khz;
#endif
	kbench_root = kobject_create_and_add("kbench", kernel_kobj);
	if (!kbench_root)
		return -ENOMEM;
	ret = sysfs_create_group(kbench_root, &kbench_top_group);
	if (ret)
		goto err;
	ret = kbench_trace_init(kbench_root);
	if (ret)
		goto err;
	ret = kbench_register_builtins();
	if (ret)
		goto err_trace;
	ret = kbench_ab_init(kbench_root);
	if (ret)
		goto err_trace;
	return 0;
err_trace:
	kbench_remove_all();
	kbench_trace_exit();
err:
	kobject_put(kbench_root);
	return ret;
}

static void __exit kbench_exit(void)
{
	/* First: an A/B run holds the built-in benchmarks it times. */
	kbench_ab_exit();
	/* Modules using kbench_register() are gone: they depend on us. */
	kbench_remove_all();
	kbench_trace_exit();
	kobject_put(kbench_root);
}

module_init(kbench_init);
module_exit(kbench_exit);

MODULE_DESCRIPTION("kbench: in-kernel micro-benchmarks with raw samples");
MODULE_AUTHOR("kbench developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(KBENCH_VERSION);
