/* kbench-probe scale: the will-it-scale model (N tasks loop a testcase and
 * bump their own counters; a harness samples the counters every interval).
 *
 *   scale.c        command line, task start/stop, sampling, output
 *   scale_tests.c  the testcases: one set-up + one loop function each and one
 *                  line in kb_scale_tests[]
 *
 * Contract: docs/probe-format.md, section "scale".
 */
#ifndef KBENCH_SCALE_H
#define KBENCH_SCALE_H

#include <stddef.h>
#include <stdint.h>

/* Per-task state, private to the task (its own process or thread). */
struct kb_scale_task {
	int idx;                     /* 0 .. tasks-1 */
	int nr_tasks;
	int thread_mode;
	uint64_t *ops;               /* this task's counter (own cache lines) */
	const volatile uint32_t *stop; /* set by the harness: leave the loop */
	uint64_t *errors;            /* failed operations (rare path) */
	int *last_errno;
	const char *dir;             /* directory for per-task files */
	const char *path;            /* a file the harness made for this task (or "") */
	long harness_pid;
	int fd, fd2;
	char *buf;
	uintptr_t addr;
};

typedef int (*kb_scale_setup_fn)(struct kb_scale_task *t, char *err, size_t errlen);
typedef void (*kb_scale_loop_fn)(struct kb_scale_task *t);

#define KB_SCALE_F_PATH 1u /* the harness creates one empty file per task (t->path) */

struct kb_scale_test {
	const char *name;
	const char *desc;
	const char *op;            /* what one counted operation is */
	kb_scale_setup_fn setup;   /* in the task, after pinning, before the barrier; NULL: none */
	kb_scale_loop_fn loop;     /* runs until *stop; publishes the count after every op */
	unsigned flags;
};

extern const struct kb_scale_test kb_scale_tests[];
extern const size_t kb_nscale_tests;

/* Release what set-up took (fds, buffers); used in thread mode. */
void kb_scale_task_release(struct kb_scale_task *t);

/* Entry points from main(). */
int kb_scale_main(int argc, char **argv);
int kb_scale_list(void);

#endif
