// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/kbench/<bench>/: the common attributes of every benchmark,
 * its own parameters, and the binary samples of the last run.  The ABI is
 * described in docs/sysfs-ABI.md.
 *
 * Every store parses the whole value first and changes nothing on error:
 * -EINVAL for text that is not a value of the right kind, -ERANGE for a
 * value outside the attribute's range, -EBUSY while a run is in progress.
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/ctype.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kbench_core.h"

#define KBENCH_INPUT_MAX	64	/* longest address or prefix accepted */

static struct kbench_entry *to_entry(struct kobject *kobj)
{
	return container_of(kobj, struct kbench_entry, kobj);
}

/*
 * Is @buf a decimal integer as docs/sysfs-ABI.md writes one?  An optional
 * '-', then digits without a leading zero (a lone 0 is fine), then at most
 * one newline.  No '+', no spaces, no 0x, nothing after the number.
 */
static int kbench_check_decimal(const char *buf)
{
	const char *p = buf;

	if (*p == '-')
		p++;
	if (!isdigit(*p))
		return -EINVAL;
	if (*p == '0' && isdigit(p[1]))
		return -EINVAL;
	while (isdigit(*p))
		p++;
	if (*p == '\n')
		p++;
	return *p ? -EINVAL : 0;
}

/*
 * Decimal integer in [min, max].  Negative numbers, and numbers too large
 * for 64 bits, are out of range rather than malformed.
 */
int kbench_parse_s64(const char *buf, s64 min, s64 max, s64 *val)
{
	int ret = kbench_check_decimal(buf);

	if (ret)
		return ret;
	/* Well-formed: only the size of the number can be wrong. */
	if (kstrtos64(buf, 10, val))
		return -ERANGE;
	if (*val < min || *val > max)
		return -ERANGE;
	return 0;
}

int kbench_parse_u64(const char *buf, u64 min, u64 max, u64 *val)
{
	int ret = kbench_check_decimal(buf);
	s64 negative;

	if (ret)
		return ret;
	if (buf[0] == '-') {
		/* "-0" is zero; any other negative number is out of range. */
		if (kstrtos64(buf, 10, &negative) || negative)
			return -ERANGE;
		*val = 0;
	} else if (kstrtou64(buf, 10, val)) {
		return -ERANGE;
	}
	if (*val < min || *val > max)
		return -ERANGE;
	return 0;
}

/* A cpu knob's value: -1 (any CPU) or an online CPU. */
int kbench_check_cpu(s64 cpu)
{
	if (cpu >= (s64)nr_cpu_ids)
		return -ERANGE;
	if (cpu >= 0 && !cpu_online(cpu))
		return -EINVAL;
	return 0;
}

/* Take the configuration lock unless a run is in progress. */
static int kbench_cfg_lock(struct kbench_entry *e)
{
	mutex_lock(&e->lock);
	if (e->running) {
		mutex_unlock(&e->lock);
		return -EBUSY;
	}
	return 0;
}

/* Integer knobs of struct kbench_config. */
enum kbench_knob {
	KNOB_LOOP_COUNT,
	KNOB_WARMUP,
	KNOB_BATCH,
	KNOB_CPU,
	KNOB_IRQS_OFF,
	KNOB_PREEMPT_OFF,
	KNOB_HISTOGRAM,
	KNOB_DATASET_SIZE,
	KNOB_COUNTERS,
};

struct kbench_knob_attr {
	struct kobj_attribute attr;
	enum kbench_knob knob;
	s64 min;
	s64 max;
};

static s64 kbench_knob_get(const struct kbench_config *cfg,
			   enum kbench_knob knob)
{
	switch (knob) {
	case KNOB_LOOP_COUNT:
		return cfg->loop_count;
	case KNOB_WARMUP:
		return cfg->warmup;
	case KNOB_BATCH:
		return cfg->batch;
	case KNOB_CPU:
		return cfg->cpu;
	case KNOB_IRQS_OFF:
		return cfg->irqs_off;
	case KNOB_PREEMPT_OFF:
		return cfg->preempt_off;
	case KNOB_HISTOGRAM:
		return cfg->histogram;
	case KNOB_DATASET_SIZE:
		return cfg->dataset_size;
	case KNOB_COUNTERS:
		return cfg->counters;
	}
	return 0;
}

static void kbench_knob_set(struct kbench_config *cfg, enum kbench_knob knob,
			    s64 val)
{
	switch (knob) {
	case KNOB_LOOP_COUNT:
		cfg->loop_count = val;
		break;
	case KNOB_WARMUP:
		cfg->warmup = val;
		break;
	case KNOB_BATCH:
		cfg->batch = val;
		break;
	case KNOB_CPU:
		cfg->cpu = val;
		break;
	case KNOB_IRQS_OFF:
		cfg->irqs_off = val;
		break;
	case KNOB_PREEMPT_OFF:
		cfg->preempt_off = val;
		break;
	case KNOB_HISTOGRAM:
		cfg->histogram = val;
		break;
	case KNOB_DATASET_SIZE:
		cfg->dataset_size = val;
		break;
	case KNOB_COUNTERS:
		cfg->counters = val;
		break;
	}
}

static ssize_t knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct kbench_knob_attr *ka = container_of(attr, typeof(*ka), attr);
	struct kbench_entry *e = to_entry(kobj);
	s64 val;

	mutex_lock(&e->lock);
	val = kbench_knob_get(&e->cfg, ka->knob);
	mutex_unlock(&e->lock);
	return sysfs_emit(buf, "%lld\n", val);
}

static ssize_t knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct kbench_knob_attr *ka = container_of(attr, typeof(*ka), attr);
	struct kbench_entry *e = to_entry(kobj);
	s64 val;
	int ret;

	ret = kbench_parse_s64(buf, ka->min, ka->max, &val);
	if (ret)
		return ret;
	if (ka->knob == KNOB_CPU) {
		ret = kbench_check_cpu(val);
		if (ret)
			return ret;
	}
	if (ka->knob == KNOB_IRQS_OFF && val &&
	    (e->bench->flags & KBENCH_F_NO_IRQS_OFF))
		return -EOPNOTSUPP;
	ret = kbench_cfg_lock(e);
	if (ret)
		return ret;
	kbench_knob_set(&e->cfg, ka->knob, val);
	mutex_unlock(&e->lock);
	return count;
}

#define KBENCH_KNOB(_name, _knob, _min, _max)				\
	static struct kbench_knob_attr knob_##_name = {			\
		.attr = __ATTR(_name, 0600, knob_show, knob_store),	\
		.knob = _knob,						\
		.min = _min,						\
		.max = _max,						\
	}

KBENCH_KNOB(loop_count, KNOB_LOOP_COUNT, 1, KBENCH_LOOP_COUNT_MAX);
KBENCH_KNOB(warmup, KNOB_WARMUP, 0, KBENCH_WARMUP_MAX);
KBENCH_KNOB(batch, KNOB_BATCH, 1, KBENCH_BATCH_MAX);
KBENCH_KNOB(cpu, KNOB_CPU, -1, INT_MAX);	/* and < nr_cpu_ids */
KBENCH_KNOB(irqs_off, KNOB_IRQS_OFF, 0, 1);
KBENCH_KNOB(preempt_off, KNOB_PREEMPT_OFF, 0, 1);
KBENCH_KNOB(histogram, KNOB_HISTOGRAM, 0, 1);
KBENCH_KNOB(dataset_size, KNOB_DATASET_SIZE, 1, KBENCH_DATASET_MAX);
KBENCH_KNOB(counters, KNOB_COUNTERS, 0, 1);

static ssize_t seed_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	u64 seed;

	mutex_lock(&e->lock);
	seed = e->cfg.seed;
	mutex_unlock(&e->lock);
	return sysfs_emit(buf, "%llu\n", seed);
}

static ssize_t seed_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct kbench_entry *e = to_entry(kobj);
	u64 seed;
	int ret;

	ret = kbench_parse_u64(buf, 0, U64_MAX, &seed);
	if (ret)
		return ret;
	ret = kbench_cfg_lock(e);
	if (ret)
		return ret;
	e->cfg.seed = seed;
	mutex_unlock(&e->lock);
	return count;
}

static struct kobj_attribute seed_attr = __ATTR(seed, 0600, seed_show,
						seed_store);

static ssize_t cpus_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	ssize_t len;

	mutex_lock(&e->lock);
	if (e->cfg.cpus_all)
		len = sysfs_emit(buf, "all\n");
	else
		len = sysfs_emit(buf, "%*pbl\n", cpumask_pr_args(&e->cfg.cpus));
	mutex_unlock(&e->lock);
	return len;
}

/* One CPU number of a CPU list: digits without a leading zero. */
static int kbench_parse_cpu(const char **pos, unsigned long *cpu)
{
	const char *p = *pos;
	unsigned long v = 0;
	bool huge = false;

	if (!isdigit(*p) || (*p == '0' && isdigit(p[1])))
		return -EINVAL;
	for (; isdigit(*p); p++) {
		if (v > (ULONG_MAX - 9) / 10)
			huge = true;
		else
			v = v * 10 + (*p - '0');
	}
	*cpu = huge ? ULONG_MAX : v;
	*pos = p;
	return 0;
}

/*
 * A CPU list as docs/sysfs-ABI.md writes one: "N" or "N-M" items joined by
 * single commas, at most one trailing newline.  -EINVAL for anything else
 * (spaces, "ALL", empty items, N > M), -ERANGE for a well-formed list with a
 * CPU at or above nr_cpu_ids, however many digits it has.
 */
static int kbench_parse_cpulist(const char *buf, struct cpumask *mask)
{
	const char *p = buf;
	int range = 0;

	cpumask_clear(mask);
	for (;;) {
		unsigned long first, last, cpu;
		int ret = kbench_parse_cpu(&p, &first);

		if (ret)
			return ret;
		last = first;
		if (*p == '-') {
			p++;
			ret = kbench_parse_cpu(&p, &last);
			if (ret)
				return ret;
			if (last < first)
				return -EINVAL;
		}
		if (last >= nr_cpu_ids)
			range = -ERANGE;
		else
			for (cpu = first; cpu <= last; cpu++)
				cpumask_set_cpu(cpu, mask);
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	return range;
}

static ssize_t cpus_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct kbench_entry *e = to_entry(kobj);
	cpumask_var_t mask;
	bool all;
	int ret;

	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	all = sysfs_streq(buf, "all");
	if (!all) {
		ret = kbench_parse_cpulist(buf, mask);
		if (ret)
			goto out;
		ret = -EINVAL;
		if (cpumask_empty(mask) ||
		    !cpumask_subset(mask, cpu_online_mask))
			goto out;
	}
	ret = kbench_cfg_lock(e);
	if (ret)
		goto out;
	e->cfg.cpus_all = all;
	if (!all)
		cpumask_copy(&e->cfg.cpus, mask);
	mutex_unlock(&e->lock);
	ret = count;
out:
	free_cpumask_var(mask);
	return ret;
}

static struct kobj_attribute cpus_attr = __ATTR(cpus, 0600, cpus_show,
						cpus_store);

static ssize_t run_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	return kbench_run(to_entry(kobj), false, buf);
}

static ssize_t run_parallel_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return kbench_run(to_entry(kobj), true, buf);
}

static struct kobj_attribute run_attr = __ATTR(run, 0400, run_show, NULL);
static struct kobj_attribute run_parallel_attr =
	__ATTR(run_parallel, 0400, run_parallel_show, NULL);

static const char * const kbench_result_names[] = {
	[KBENCH_RESULT_NONE] = "none",
	[KBENCH_RESULT_OK] = "ok",
	[KBENCH_RESULT_INTERRUPTED] = "interrupted",
	[KBENCH_RESULT_ERROR] = "error",
};

static ssize_t status_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	unsigned int i;
	int len;

	mutex_lock(&e->lock);
	len = sysfs_emit(buf,
			 "state=%s result=%s error=%d mode=%s count=%u batch=%u overhead_sample=%llu run=%u\n",
			 e->running ? "running" : "idle",
			 kbench_result_names[e->result], e->error,
			 e->parallel ? "parallel" : "single", e->nr_samples,
			 e->batch, e->overhead, e->last_run);
	for (i = 0; i < e->nr_segments; i++)
		len += sysfs_emit_at(buf, len,
				     "cpu%d offset=%u count=%u overhead_sample=%llu\n",
				     e->segments[i].cpu, e->segments[i].offset,
				     e->segments[i].count,
				     e->segments[i].overhead);
	mutex_unlock(&e->lock);
	return len;
}

static struct kobj_attribute status_attr = __ATTR(status, 0400, status_show,
						  NULL);

static ssize_t overhead_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	u64 overhead;

	mutex_lock(&e->lock);
	overhead = e->overhead;
	mutex_unlock(&e->lock);
	return sysfs_emit(buf, "%llu\n", overhead);
}

static struct kobj_attribute overhead_attr = __ATTR(overhead, 0400,
						    overhead_show, NULL);

/* The perf events the last run counted (core/counters.c). */
static ssize_t counter_values_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	int len;

	mutex_lock(&e->lock);
	len = sysfs_emit(buf, "run=%u counted=%d sets=%u\n", e->last_run,
			 e->counts.counted, e->counts.sets);
	len += kbench_counts_format(buf + len, PAGE_SIZE - len, &e->counts,
				    "");
	mutex_unlock(&e->lock);
	return len;
}

static struct kobj_attribute counter_values_attr =
	__ATTR(counter_values, 0400, counter_values_show, NULL);

static ssize_t tsc_khz_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", kbench_tsc_khz);
}

static struct kobj_attribute tsc_khz_attr = __ATTR(tsc_khz, 0400,
						   tsc_khz_show, NULL);

static ssize_t description_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", to_entry(kobj)->bench->description);
}

static struct kobj_attribute description_attr =
	__ATTR(description, 0400, description_show, NULL);

static const char * const kbench_param_type_names[] = {
	[KBENCH_PARAM_U64] = "u64",
	[KBENCH_PARAM_IPV4_PREFIX] = "ipv4_prefix",
	[KBENCH_PARAM_IPV6_PREFIX] = "ipv6_prefix",
};

static int kbench_param_emit(char *buf, int at, const struct kbench_param *p)
{
	switch (p->type) {
	case KBENCH_PARAM_U64:
		return sysfs_emit_at(buf, at, "%llu", p->value.u64);
	case KBENCH_PARAM_IPV4_PREFIX:
		return sysfs_emit_at(buf, at, "%pI4/%u", &p->value.ipv4.addr,
				     p->value.ipv4.plen);
	case KBENCH_PARAM_IPV6_PREFIX:
		return sysfs_emit_at(buf, at, "%pI6c/%u", &p->value.ipv6.addr,
				     p->value.ipv6.plen);
	}
	return 0;
}

/* One line per benchmark parameter: name, type, value, range, text. */
static ssize_t params_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct kbench_entry *e = to_entry(kobj);
	struct kbench *b = e->bench;
	unsigned int i;
	int len = 0;

	mutex_lock(&e->lock);
	for (i = 0; i < b->nr_params; i++) {
		const struct kbench_param *p = &b->params[i];

		len += sysfs_emit_at(buf, len, "name=%s type=%s value=",
				     p->name, kbench_param_type_names[p->type]);
		len += kbench_param_emit(buf, len, p);
		if (p->type == KBENCH_PARAM_U64)
			len += sysfs_emit_at(buf, len, " min=%llu max=%llu",
					     p->min, p->max);
		len += sysfs_emit_at(buf, len, " description=%s\n",
				     p->description);
	}
	mutex_unlock(&e->lock);
	return len;
}

static struct kobj_attribute params_attr = __ATTR(params, 0400, params_show,
						  NULL);

static ssize_t samples_read(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf, loff_t pos,
			    size_t count)
{
	struct kbench_entry *e = to_entry(kobj);
	size_t bytes;
	ssize_t ret;

	mutex_lock(&e->lock);
	bytes = (size_t)e->nr_samples * sizeof(u64);
	if (e->running) {
		ret = -EBUSY;
	} else if (pos < 0 || pos >= bytes) {
		ret = 0;
	} else {
		ret = min_t(size_t, count, bytes - pos);
		memcpy(buf, (u8 *)e->samples + pos, ret);
	}
	mutex_unlock(&e->lock);
	return ret;
}

static struct bin_attribute samples_attr = {
	.attr = { .name = "samples", .mode = 0400 },
	.read = samples_read,
};

/* The samples of the single-CPU run in progress, as they are taken. */
static ssize_t samples_live_read(struct file *file, struct kobject *kobj,
				 struct bin_attribute *attr, char *buf,
				 loff_t pos, size_t count)
{
	struct kbench_entry *e = to_entry(kobj);
	ssize_t ret;

	mutex_lock(&e->lock);
	ret = kbench_live_read(e, buf, pos, count);
	mutex_unlock(&e->lock);
	return ret;
}

static struct bin_attribute samples_live_attr = {
	.attr = { .name = "samples_live", .mode = 0400 },
	.read = samples_live_read,
};

static struct attribute *kbench_entry_attrs[] = {
	&knob_loop_count.attr.attr,
	&knob_warmup.attr.attr,
	&knob_batch.attr.attr,
	&knob_cpu.attr.attr,
	&knob_irqs_off.attr.attr,
	&knob_preempt_off.attr.attr,
	&knob_histogram.attr.attr,
	&knob_dataset_size.attr.attr,
	&knob_counters.attr.attr,
	&seed_attr.attr,
	&cpus_attr.attr,
	&run_attr.attr,
	&run_parallel_attr.attr,
	&status_attr.attr,
	&overhead_attr.attr,
	&counter_values_attr.attr,
	&tsc_khz_attr.attr,
	&description_attr.attr,
	&params_attr.attr,
	NULL,
};

static struct bin_attribute *kbench_entry_bin_attrs[] = {
	&samples_attr,
	&samples_live_attr,
	NULL,
};

static const struct attribute_group kbench_entry_group = {
	.attrs = kbench_entry_attrs,
	.bin_attrs = kbench_entry_bin_attrs,
};

static const struct attribute_group *kbench_entry_groups[] = {
	&kbench_entry_group,
	NULL,
};

/* Benchmark parameters. */

static int kbench_parse_ip_prefix(const char *buf, enum kbench_param_type type,
				  void *addr, u8 *plen)
{
	u8 max = type == KBENCH_PARAM_IPV4_PREFIX ? 32 : 128;
	char s[KBENCH_INPUT_MAX];
	const char *end;
	size_t len;
	char *slash;
	int ok;

	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		len--;
	if (!len || len >= sizeof(s))
		return -EINVAL;
	memcpy(s, buf, len);
	s[len] = '\0';
	slash = strchr(s, '/');
	if (slash)
		*slash = '\0';
	if (type == KBENCH_PARAM_IPV4_PREFIX)
		ok = in4_pton(s, -1, addr, -1, &end);
	else
		ok = in6_pton(s, -1, addr, -1, &end);
	if (!ok || *end)
		return -EINVAL;
	*plen = max;
	if (slash) {
		int ret;

		/* A length is a decimal number like any other, never negative. */
		if (slash[1] == '-')
			return -EINVAL;
		ret = kbench_check_decimal(slash + 1);
		if (ret)
			return ret;
		if (kstrtou8(slash + 1, 10, plen) || *plen > max)
			return -ERANGE;
	}
	return 0;
}

static ssize_t param_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct kbench_param_attr *pa = container_of(attr, typeof(*pa), attr);
	struct kbench_entry *e = to_entry(kobj);
	int len;

	mutex_lock(&e->lock);
	len = kbench_param_emit(buf, 0, pa->param);
	mutex_unlock(&e->lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

/*
 * kbench_param_parse - a value of @p's type and range from @buf, as its
 * attribute accepts it (one trailing newline allowed); @p is not changed.
 */
int kbench_param_parse(const struct kbench_param *p, const char *buf,
		       union kbench_param_value *val)
{
	memset(val, 0, sizeof(*val));
	switch (p->type) {
	case KBENCH_PARAM_U64:
		return kbench_parse_u64(buf, p->min, p->max, &val->u64);
	case KBENCH_PARAM_IPV4_PREFIX:
		return kbench_parse_ip_prefix(buf, p->type, &val->ipv4.addr,
					      &val->ipv4.plen);
	case KBENCH_PARAM_IPV6_PREFIX:
		return kbench_parse_ip_prefix(buf, p->type, &val->ipv6.addr,
					      &val->ipv6.plen);
	}
	return -EINVAL;
}

static ssize_t param_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	struct kbench_param_attr *pa = container_of(attr, typeof(*pa), attr);
	struct kbench_param *p = pa->param;
	struct kbench_entry *e = to_entry(kobj);
	union kbench_param_value val;
	int ret;

	ret = kbench_param_parse(p, buf, &val);
	if (ret)
		return ret;
	ret = kbench_cfg_lock(e);
	if (ret)
		return ret;
	p->value = val;
	mutex_unlock(&e->lock);
	return count;
}

static bool kbench_name_taken(const char *name)
{
	struct bin_attribute **b;
	struct attribute **a;

	for (b = kbench_entry_bin_attrs; *b; b++)
		if (!strcmp(name, (*b)->attr.name))
			return true;
	for (a = kbench_entry_attrs; *a; a++)
		if (!strcmp(name, (*a)->name))
			return true;
	return false;
}

static int kbench_params_add(struct kbench_entry *e)
{
	struct kbench *b = e->bench;
	unsigned int i;
	int ret;

	if (!b->nr_params)
		return 0;
	e->param_attrs = kcalloc(b->nr_params, sizeof(*e->param_attrs),
				 GFP_KERNEL);
	if (!e->param_attrs)
		return -ENOMEM;
	for (i = 0; i < b->nr_params; i++) {
		struct kbench_param_attr *pa = &e->param_attrs[i];
		struct kbench_param *p = &b->params[i];

		if (!p->name || kbench_name_taken(p->name) ||
		    p->type > KBENCH_PARAM_IPV6_PREFIX)
			return -EINVAL;
		sysfs_attr_init(&pa->attr.attr);
		pa->attr.attr.name = p->name;
		pa->attr.attr.mode = 0600;
		pa->attr.show = param_show;
		pa->attr.store = param_store;
		pa->param = p;
		ret = sysfs_create_file(&e->kobj, &pa->attr.attr);
		if (ret)
			return ret;
	}
	return 0;
}

static void kbench_entry_release(struct kobject *kobj)
{
	struct kbench_entry *e = to_entry(kobj);

	kvfree(e->samples);
	kfree(e->segments);
	kfree(e->param_attrs);
	kfree(e);
}

const struct kobj_type kbench_entry_ktype = {
	.release = kbench_entry_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = kbench_entry_groups,
};

/* Create /sys/kernel/kbench/<name>/; on failure @e has been freed. */
int kbench_sysfs_add(struct kbench_entry *e)
{
	int ret;

	ret = kobject_init_and_add(&e->kobj, &kbench_entry_ktype, kbench_root,
				   "%s", e->bench->name);
	if (!ret)
		ret = kbench_params_add(e);
	if (ret) {
		kobject_put(&e->kobj);
		return ret;
	}
	kobject_uevent(&e->kobj, KOBJ_ADD);
	return 0;
}

/*
 * Remove the directory: waits for readers and writers inside an attribute
 * (a run in progress sees e->dying and stops at its next chunk), then
 * frees the entry with its last samples.
 */
void kbench_sysfs_del(struct kbench_entry *e)
{
	kobject_del(&e->kobj);
	kobject_put(&e->kobj);
}
