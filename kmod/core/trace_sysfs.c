// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/kbench/trace/: control, status, size, layout, names, log and
 * functions.  The ABI (with the errno of every misuse) is in
 * docs/sysfs-ABI.md.  Every store parses its whole value first and changes
 * nothing on error.
 */
#include <linux/capability.h>
#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kbench_core.h"
#include "trace.h"

static struct kobject *kbench_trace_kobj;

static const char * const kbench_log_state_names[] = {
	[KBENCH_LOG_IDLE] = "idle",
	[KBENCH_LOG_LOGGING] = "logging",
	[KBENCH_LOG_FINALIZED] = "finalized",
};

/* The value without its one optional trailing newline; 0 if too long. */
static size_t kbench_trace_value_len(const char *buf, size_t max)
{
	size_t len = strnlen(buf, max + 2);

	if (len && buf[len - 1] == '\n')
		len--;
	return len > max ? 0 : len;
}

/*
 * Decimal digits only (one trailing newline allowed): -EINVAL for anything
 * else, -ERANGE for a negative number or one above @max.
 */
static int kbench_trace_parse_ulong(const char *buf, unsigned long max,
				    unsigned long *val)
{
	size_t len = strlen(buf), first, i;
	int ret;

	if (len && buf[len - 1] == '\n')
		len--;
	first = buf[0] == '-' ? 1 : 0;
	if (len <= first)
		return -EINVAL;
	for (i = first; i < len; i++)
		if (!isdigit(buf[i]))
			return -EINVAL;
	if (first)
		return -ERANGE;
	ret = kstrtoul(buf, 10, val);
	if (ret)
		return ret;
	return *val > max ? -ERANGE : 0;
}

static ssize_t control_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct kbench_log_status st;

	mutex_lock(&kbench_trace_lock);
	kbench_log_get_status(&st);
	mutex_unlock(&kbench_trace_lock);
	return sysfs_emit(buf, "%s\n", kbench_log_state_names[st.state]);
}

static ssize_t control_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	bool reset = sysfs_streq(buf, "reset");
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!reset && !sysfs_streq(buf, "finalize"))
		return -EINVAL;
	mutex_lock(&kbench_trace_lock);
	if (reset)
		ret = kbench_log_reset();
	else
		kbench_log_finalize();
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t status_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct kbench_log_status st;

	mutex_lock(&kbench_trace_lock);
	kbench_log_get_status(&st);
	mutex_unlock(&kbench_trace_lock);
	return sysfs_emit(buf,
			  "state=%s layout=%s size=%lu room=%lu keys=%u entries=%lu overflow=%lu invalid_keys=%lu foreign_stops=%lu generation=%lu entry_bytes=%zu tsc_khz=%u\n",
			  kbench_log_state_names[st.state],
			  st.percpu ? "percpu" : "shared", st.size, st.room, st.keys,
			  st.entries, st.overflow, st.invalid_keys,
			  st.foreign_stops, st.generation,
			  sizeof(struct kbench_log_entry), kbench_tsc_khz);
}

static ssize_t size_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct kbench_log_status st;

	mutex_lock(&kbench_trace_lock);
	kbench_log_get_status(&st);
	mutex_unlock(&kbench_trace_lock);
	return sysfs_emit(buf, "%lu\n", st.size);
}

static ssize_t size_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	unsigned long entries;
	int ret;

	ret = kbench_trace_parse_ulong(buf, KBENCH_LOG_ENTRIES_MAX, &entries);
	if (ret)
		return ret;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_resize(entries);
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t layout_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct kbench_log_status st;

	mutex_lock(&kbench_trace_lock);
	kbench_log_get_status(&st);
	mutex_unlock(&kbench_trace_lock);
	return sysfs_emit(buf, "%s\n", st.percpu ? "percpu" : "shared");
}

static ssize_t layout_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	bool percpu = sysfs_streq(buf, "percpu");
	int ret;

	if (!percpu && !sysfs_streq(buf, "shared"))
		return -EINVAL;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_set_layout(percpu);
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t functions_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	int len;

	mutex_lock(&kbench_trace_lock);
	len = kbench_funcs_show(buf);
	mutex_unlock(&kbench_trace_lock);
	return len;
}

/* A kallsyms name, optionally "module:name". */
static bool kbench_func_name_valid(const char *name, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && !strchr("_.:", name[i]))
			return false;
	return true;
}

static ssize_t functions_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	char name[KBENCH_FUNC_NAME_MAX];
	size_t len;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	len = kbench_trace_value_len(buf, KBENCH_FUNC_NAME_MAX);
	if (sysfs_streq(buf, "clear")) {
		name[0] = '\0';
	} else {
		if (len < 2 || (buf[0] != '+' && buf[0] != '-') ||
		    !kbench_func_name_valid(buf + 1, len - 1))
			return -EINVAL;
		memcpy(name, buf + 1, len - 1);
		name[len - 1] = '\0';
	}
	mutex_lock(&kbench_trace_lock);
	if (kbench_log_is_on()) {
		ret = -EBUSY;
	} else if (!name[0]) {
		kbench_funcs_clear();
		ret = 0;
	} else if (buf[0] == '+') {
		ret = kbench_funcs_add(name);
	} else {
		ret = kbench_funcs_remove(name);
	}
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t log_read(struct file *file, struct kobject *kobj,
			struct bin_attribute *attr, char *buf, loff_t pos,
			size_t count)
{
	ssize_t ret;

	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_read(buf, pos, count);
	mutex_unlock(&kbench_trace_lock);
	return ret;
}

static ssize_t names_read(struct file *file, struct kobject *kobj,
			  struct bin_attribute *attr, char *buf, loff_t pos,
			  size_t count)
{
	ssize_t ret;

	mutex_lock(&kbench_trace_lock);
	ret = kbench_trace_names_read(buf, pos, count);
	mutex_unlock(&kbench_trace_lock);
	return ret;
}

static struct kobj_attribute control_attr = __ATTR(control, 0600, control_show,
						   control_store);
static struct kobj_attribute status_attr = __ATTR(status, 0400, status_show,
						  NULL);
static struct kobj_attribute size_attr = __ATTR(size, 0600, size_show,
						size_store);
static struct kobj_attribute layout_attr = __ATTR(layout, 0600, layout_show,
						  layout_store);
static struct kobj_attribute functions_attr =
	__ATTR(functions, 0600, functions_show, functions_store);

static struct bin_attribute log_attr = {
	.attr = { .name = "log", .mode = 0400 },
	.read = log_read,
};

static struct bin_attribute names_attr = {
	.attr = { .name = "names", .mode = 0400 },
	.read = names_read,
};

static struct attribute *kbench_trace_attrs[] = {
	&control_attr.attr,
	&status_attr.attr,
	&size_attr.attr,
	&layout_attr.attr,
	&functions_attr.attr,
	NULL,
};

static struct bin_attribute *kbench_trace_bin_attrs[] = {
	&log_attr,
	&names_attr,
	NULL,
};

static const struct attribute_group kbench_trace_group = {
	.attrs = kbench_trace_attrs,
	.bin_attrs = kbench_trace_bin_attrs,
};

int kbench_trace_sysfs_add(struct kobject *parent)
{
	int ret;

	kbench_trace_kobj = kobject_create_and_add("trace", parent);
	if (!kbench_trace_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kbench_trace_kobj, &kbench_trace_group);
	if (!ret)
		ret = kbench_entries_init(kbench_trace_kobj);
	if (ret) {
		kobject_put(kbench_trace_kobj);
		kbench_trace_kobj = NULL;
	}
	return ret;
}

void kbench_trace_sysfs_del(void)
{
	kbench_entries_exit();
	kobject_put(kbench_trace_kobj);
	kbench_trace_kobj = NULL;
}
