// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/kbench/ab/: the sides of an A/B run, its knobs, the run
 * itself, its records and its status.  The ABI (with the errno of every
 * misuse) is in docs/sysfs-ABI.md.  Every store parses its whole value
 * first and changes nothing on error; stores get -EBUSY during a run.
 */
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "ab.h"

/* Protects the configuration and the last run's result. */
static DEFINE_MUTEX(kbench_ab_lock);
/* One A/B run at a time: a second reader of `run` gets -EBUSY. */
static DEFINE_MUTEX(kbench_ab_run_lock);

static struct kbench_ab_config kbench_ab_cfg = {
	.blocks = 100,
	.slot_samples = 16,
	.batch = 1,
	.warmup = 1,
	.cpu = -1,
	.order_seed = 1,
};
static struct kbench_ab_result kbench_ab_res = { .failed_side = -1 };
static bool kbench_ab_running;
static bool kbench_ab_dying;	/* kbench.ko is being unloaded */
static struct kobject *kbench_ab_kobj;

static int kbench_ab_cfg_lock(void)
{
	mutex_lock(&kbench_ab_lock);
	if (kbench_ab_running) {
		mutex_unlock(&kbench_ab_lock);
		return -EBUSY;
	}
	return 0;
}

enum kbench_ab_knob {
	AB_BLOCKS,
	AB_SLOT_SAMPLES,
	AB_BATCH,
	AB_WARMUP,
	AB_CPU,
};

struct kbench_ab_knob_attr {
	struct kobj_attribute attr;
	enum kbench_ab_knob knob;
	s64 min;
	s64 max;
};

static s64 kbench_ab_knob_get(enum kbench_ab_knob knob)
{
	const struct kbench_ab_config *c = &kbench_ab_cfg;

	switch (knob) {
	case AB_BLOCKS:
		return c->blocks;
	case AB_SLOT_SAMPLES:
		return c->slot_samples;
	case AB_BATCH:
		return c->batch;
	case AB_WARMUP:
		return c->warmup;
	case AB_CPU:
		return c->cpu;
	}
	return 0;
}

static void kbench_ab_knob_set(enum kbench_ab_knob knob, s64 val)
{
	struct kbench_ab_config *c = &kbench_ab_cfg;

	switch (knob) {
	case AB_BLOCKS:
		c->blocks = val;
		break;
	case AB_SLOT_SAMPLES:
		c->slot_samples = val;
		break;
	case AB_BATCH:
		c->batch = val;
		break;
	case AB_WARMUP:
		c->warmup = val;
		break;
	case AB_CPU:
		c->cpu = val;
		break;
	}
}

static ssize_t ab_knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct kbench_ab_knob_attr *ka = container_of(attr, typeof(*ka), attr);
	s64 val;

	mutex_lock(&kbench_ab_lock);
	val = kbench_ab_knob_get(ka->knob);
	mutex_unlock(&kbench_ab_lock);
	return sysfs_emit(buf, "%lld\n", val);
}

static ssize_t ab_knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	struct kbench_ab_knob_attr *ka = container_of(attr, typeof(*ka), attr);
	s64 val;
	int ret;

	ret = kbench_parse_s64(buf, ka->min, ka->max, &val);
	if (ret)
		return ret;
	if (ka->knob == AB_CPU) {
		ret = kbench_check_cpu(val);
		if (ret)
			return ret;
	}
	ret = kbench_ab_cfg_lock();
	if (ret)
		return ret;
	kbench_ab_knob_set(ka->knob, val);
	mutex_unlock(&kbench_ab_lock);
	return count;
}

#define KBENCH_AB_KNOB(_name, _knob, _min, _max)			\
	static struct kbench_ab_knob_attr ab_knob_##_name = {		\
		.attr = __ATTR(_name, 0600, ab_knob_show, ab_knob_store), \
		.knob = _knob,						\
		.min = _min,						\
		.max = _max,						\
	}

KBENCH_AB_KNOB(blocks, AB_BLOCKS, 1, KBENCH_AB_BLOCKS_MAX);
KBENCH_AB_KNOB(slot_samples, AB_SLOT_SAMPLES, 1, KBENCH_AB_SLOT_SAMPLES_MAX);
KBENCH_AB_KNOB(batch, AB_BATCH, 1, KBENCH_BATCH_MAX);
KBENCH_AB_KNOB(warmup, AB_WARMUP, 0, KBENCH_AB_WARMUP_MAX);
KBENCH_AB_KNOB(cpu, AB_CPU, -1, INT_MAX);	/* and < nr_cpu_ids */

static ssize_t order_seed_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u64 seed;

	mutex_lock(&kbench_ab_lock);
	seed = kbench_ab_cfg.order_seed;
	mutex_unlock(&kbench_ab_lock);
	return sysfs_emit(buf, "%llu\n", seed);
}

static ssize_t order_seed_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	u64 seed;
	int ret;

	ret = kbench_parse_u64(buf, 0, U64_MAX, &seed);
	if (ret)
		return ret;
	ret = kbench_ab_cfg_lock();
	if (ret)
		return ret;
	kbench_ab_cfg.order_seed = seed;
	mutex_unlock(&kbench_ab_lock);
	return count;
}

static struct kobj_attribute order_seed_attr =
	__ATTR(order_seed, 0600, order_seed_show, order_seed_store);

static ssize_t sides_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	unsigned int i;
	int len = 0;

	mutex_lock(&kbench_ab_lock);
	for (i = 0; i < kbench_ab_cfg.nr_sides; i++)
		len += sysfs_emit_at(buf, len, "%s\n", kbench_ab_cfg.lines[i]);
	mutex_unlock(&kbench_ab_lock);
	return len;
}

/*
 * 2..KBENCH_AB_SIDES_MAX lines, one side each; every side must be valid
 * now (its benchmark registered, its values in range).
 */
static ssize_t sides_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	char (*lines)[KBENCH_AB_LINE_MAX];
	char line[KBENCH_AB_LINE_MAX];
	const char *p = buf, *end = buf + count;
	unsigned int nr = 0, i;
	int ret = 0;

	lines = kcalloc(KBENCH_AB_SIDES_MAX, KBENCH_AB_LINE_MAX, GFP_KERNEL);
	if (!lines)
		return -ENOMEM;
	while (p < end && !ret) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = (nl ? nl : end) - p;

		if (!len || len >= sizeof(line) || nr == KBENCH_AB_SIDES_MAX ||
		    memchr(p, '\0', len)) {
			ret = -EINVAL;
			break;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		ret = kbench_ab_check_line(line, lines[nr], KBENCH_AB_LINE_MAX);
		nr++;
		p += len + (nl ? 1 : 0);
	}
	if (!ret && nr < 2)
		ret = -EINVAL;
	if (!ret)
		ret = kbench_ab_cfg_lock();
	if (!ret) {
		for (i = 0; i < nr; i++)
			strscpy(kbench_ab_cfg.lines[i], lines[i],
				KBENCH_AB_LINE_MAX);
		kbench_ab_cfg.nr_sides = nr;
		mutex_unlock(&kbench_ab_lock);
	}
	kfree(lines);
	return ret ? ret : count;
}

static struct kobj_attribute sides_attr = __ATTR(sides, 0600, sides_show,
						 sides_store);

static ssize_t run_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	struct kbench_ab_config *cfg;
	struct kbench_ab_result *res;
	ssize_t ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!mutex_trylock(&kbench_ab_run_lock))
		return -EBUSY;
	cfg = kmalloc(sizeof(*cfg), GFP_KERNEL);
	res = kzalloc(sizeof(*res), GFP_KERNEL);
	if (!cfg || !res) {
		ret = -ENOMEM;
		goto out;
	}
	mutex_lock(&kbench_ab_lock);
	kbench_ab_running = true;
	memcpy(cfg, &kbench_ab_cfg, sizeof(*cfg));
	/* The last run's records go now: the new ones need the room. */
	kvfree(kbench_ab_res.records);
	kbench_ab_res.records = NULL;
	kbench_ab_res.nr_records = 0;
	mutex_unlock(&kbench_ab_lock);

	ret = kbench_ab_run(cfg, res, &kbench_ab_dying, buf);

	mutex_lock(&kbench_ab_lock);
	memcpy(&kbench_ab_res, res, sizeof(*res));
	kbench_ab_running = false;
	mutex_unlock(&kbench_ab_lock);
out:
	kfree(cfg);
	kfree(res);
	mutex_unlock(&kbench_ab_run_lock);
	return ret;
}

static struct kobj_attribute run_attr = __ATTR(run, 0400, run_show, NULL);

static const char * const kbench_ab_result_names[] = {
	[KBENCH_RESULT_NONE] = "none",
	[KBENCH_RESULT_OK] = "ok",
	[KBENCH_RESULT_INTERRUPTED] = "interrupted",
	[KBENCH_RESULT_ERROR] = "error",
};

static ssize_t status_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	const struct kbench_ab_result *res = &kbench_ab_res;
	unsigned int i;
	int len;

	mutex_lock(&kbench_ab_lock);
	len = sysfs_emit(buf,
			 "state=%s result=%s error=%d failed_side=%d count=%u sides=%u blocks=%u slots=%u slot_samples=%u batch=%u disturbed_slots=%u record_bytes=%zu tsc_khz=%u\n",
			 kbench_ab_running ? "running" : "idle",
			 kbench_ab_result_names[res->result], res->error,
			 res->failed_side, res->nr_records, res->nr_sides,
			 res->blocks, res->slots, res->slot_samples, res->batch,
			 res->disturbed_slots, sizeof(struct kbench_ab_record),
			 kbench_tsc_khz);
	for (i = 0; i < res->nr_sides; i++)
		len += sysfs_emit_at(buf, len,
				     "side%u bench=%s count=%u disturbed=%u overhead_sample=%llu\n",
				     i, res->sides[i].bench[0] ?
				     res->sides[i].bench : "-",
				     res->sides[i].count,
				     res->sides[i].disturbed,
				     res->sides[i].overhead);
	mutex_unlock(&kbench_ab_lock);
	return len;
}

static struct kobj_attribute status_attr = __ATTR(status, 0400, status_show,
						  NULL);

static ssize_t samples_read(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf, loff_t pos,
			    size_t count)
{
	size_t bytes;
	ssize_t ret;

	mutex_lock(&kbench_ab_lock);
	bytes = (size_t)kbench_ab_res.nr_records *
		sizeof(struct kbench_ab_record);
	if (kbench_ab_running) {
		ret = -EBUSY;
	} else if (pos < 0 || pos >= bytes) {
		ret = 0;
	} else {
		ret = min_t(size_t, count, bytes - pos);
		memcpy(buf, (u8 *)kbench_ab_res.records + pos, ret);
	}
	mutex_unlock(&kbench_ab_lock);
	return ret;
}

static struct bin_attribute samples_attr = {
	.attr = { .name = "samples", .mode = 0400 },
	.read = samples_read,
};

static struct attribute *kbench_ab_attrs[] = {
	&sides_attr.attr,
	&ab_knob_blocks.attr.attr,
	&ab_knob_slot_samples.attr.attr,
	&ab_knob_batch.attr.attr,
	&ab_knob_warmup.attr.attr,
	&ab_knob_cpu.attr.attr,
	&order_seed_attr.attr,
	&run_attr.attr,
	&status_attr.attr,
	NULL,
};

static struct bin_attribute *kbench_ab_bin_attrs[] = {
	&samples_attr,
	NULL,
};

static const struct attribute_group kbench_ab_group = {
	.attrs = kbench_ab_attrs,
	.bin_attrs = kbench_ab_bin_attrs,
};

int kbench_ab_init(struct kobject *root)
{
	int ret;

	kbench_ab_kobj = kobject_create_and_add("ab", root);
	if (!kbench_ab_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kbench_ab_kobj, &kbench_ab_group);
	if (ret) {
		kobject_put(kbench_ab_kobj);
		kbench_ab_kobj = NULL;
	}
	return ret;
}

/*
 * Abort a run in progress, then remove the directory: removing it waits
 * for the reader of `run`, whose thread stops at its next slot.
 */
void kbench_ab_exit(void)
{
	WRITE_ONCE(kbench_ab_dying, true);
	kobject_put(kbench_ab_kobj);
	kbench_ab_kobj = NULL;
	kvfree(kbench_ab_res.records);
	kbench_ab_res.records = NULL;
}
