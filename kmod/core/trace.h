/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interface of the tracepoints, the log buffer and the function
 * probes (core/trace.c, core/trace_sysfs.c, core/funcs.c).
 */
#ifndef _KBENCH_TRACE_H
#define _KBENCH_TRACE_H

#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/types.h>

#include "kbench.h"

/* Largest log buffer, in entries (512 MiB of 32-byte entries). */
#define KBENCH_LOG_ENTRIES_MAX	(1UL << 24)
/* Functions that can be probed at once (trace/functions). */
#define KBENCH_FUNCS_MAX	16U

enum kbench_log_state {
	KBENCH_LOG_IDLE,	/* never reset */
	KBENCH_LOG_LOGGING,	/* between reset and finalize */
	KBENCH_LOG_FINALIZED,	/* entries readable */
};

struct kbench_log_status {
	enum kbench_log_state state;
	bool percpu;
	unsigned long size;		/* entries in the buffer */
	unsigned long room;		/* per CPU (percpu) or in all (shared) */
	unsigned int keys;
	unsigned long entries;		/* readable, set by finalize */
	unsigned long overflow;		/* not stored for lack of room */
	unsigned long invalid_keys;	/* START/STOP of a key >= keys */
	unsigned long foreign_stops;	/* STOP found another task's START */
	unsigned long generation;	/* resets since load */
};

/*
 * Serialises every change of the log's state, its size and layout, the key
 * names and the function probes, and the read-out.  Never taken by the
 * tracepoints themselves.
 */
extern struct mutex kbench_trace_lock;

/* The task's context switches: a region spanning a switch is flagged. */
static __always_inline unsigned long kbench_switches(struct task_struct *t)
{
	return t->nvcsw + t->nivcsw;
}

/* trace.c: init and exit create and remove /sys/kernel/kbench/trace/. */
int kbench_trace_init(struct kobject *root);
void kbench_trace_exit(void);
/* The callers of these hold kbench_trace_lock. */
int kbench_log_reset(void);
void kbench_log_finalize(void);
int kbench_log_resize(unsigned long entries);
int kbench_log_set_layout(bool percpu);
void kbench_log_get_status(struct kbench_log_status *st);
ssize_t kbench_log_read(char *buf, loff_t pos, size_t count);
ssize_t kbench_trace_names_read(char *buf, loff_t pos, size_t count);
bool kbench_log_is_on(void);

/* trace_sysfs.c */
int kbench_trace_sysfs_add(struct kobject *parent);
void kbench_trace_sysfs_del(void);

/* funcs.c; the callers hold kbench_trace_lock. */
#define KBENCH_FUNC_NAME_MAX	128	/* with the NUL */
int kbench_funcs_add(const char *name);
int kbench_funcs_remove(const char *name);
void kbench_funcs_clear(void);
int kbench_funcs_show(char *buf);

/* entries.c: trace/entries/; the log's reset and finalize drive utilisation. */
int kbench_entries_init(struct kobject *trace_dir);
void kbench_entries_exit(void);
void kbench_util_reset(void);
void kbench_util_finalize(void);

#endif /* _KBENCH_TRACE_H */
