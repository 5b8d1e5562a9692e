/* kbench-probe scale: the testcases (the will-it-scale model).
 *
 * Adding a testcase = an optional set-up (runs in the task, after pinning and
 * before the start barrier: open per-task files, allocate buffers) plus a loop
 * function, and one line in kb_scale_tests[] at the end of this file.
 *
 * Rules for a loop function: it repeats the operation until *t->stop and after
 * every counted operation publishes the running count with SCALE_PUBLISH (a
 * relaxed store of a register into the task's own cache-line-padded counter:
 * a plain store, no atomic read-modify-write, no fence).  Failures are counted
 * (a predictable branch) and reported by the harness as a warning.  Whatever
 * can be private to a task is (its own file, pipe, mapping), as in
 * will-it-scale, so that in thread mode tasks share only what the testcase
 * means to share (the address space, the file table).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"
#include "scale.h"

#define MEMSIZE (128ul << 20)  /* mmap1, page_fault1/2, malloc1 */
#define RW_BUF 4096            /* read1, write1, lseek1 */
#define RW_FILE (1ul << 20)

#define SETUP_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -1)

#define SCALE_BEGIN(t)                                                 \
	uint64_t *const ctr_ = (t)->ops;                               \
	const volatile uint32_t *const stop_ = (t)->stop;              \
	uint64_t n_ = 0
#define SCALE_RUNNING() (!*stop_)
#define SCALE_PUBLISH(step)                                            \
	do {                                                           \
		n_ += (step);                                          \
		__atomic_store_n(ctr_, n_, __ATOMIC_RELAXED);          \
	} while (0)
#define FAILCHK(t, r)                                                  \
	do {                                                           \
		if (__builtin_expect((r) < 0, 0)) {                    \
			(*(t)->errors)++;                              \
			*(t)->last_errno = errno;                      \
		}                                                      \
	} while (0)

/* ------------------------------------------------------------------ */
/* helpers                                                             */

/* A per-task file DIR/kbench-probe.HARNESSPID.scale.TEST.IDX, created O_EXCL
 * and unlinked at once (the task keeps it open; nothing to clean up). */
static int task_file(struct kb_scale_task *t, const char *test, char *err, size_t errlen)
{
	char path[4096];
	int n = snprintf(path, sizeof path, "%s/kbench-probe.%ld.scale.%s.%d", t->dir, t->harness_pid,
			 test, t->idx);
	if (n < 0 || (size_t)n >= sizeof path)
		return SETUP_FAIL("directory name too long: %s", t->dir);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return SETUP_FAIL("cannot create %s: %s", path, strerror(errno));
	unlink(path);
	return fd;
}

static int write_full(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

void kb_scale_task_release(struct kb_scale_task *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->fd2 >= 0)
		close(t->fd2);
	t->fd = t->fd2 = -1;
	free(t->buf);
	t->buf = NULL;
}

/* ------------------------------------------------------------------ */
/* system calls without state                                          */

static void lp_getppid1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		getppid();
		SCALE_PUBLISH(1);
	}
}

static void lp_sched_yield(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		int r = sched_yield();
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

/* FUTEX_WAKE of a word nobody waits on.  Like will-it-scale, without
 * FUTEX_PRIVATE_FLAG: the kernel computes a shared futex key every time. */
static void lp_futex1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		unsigned int word = 0;
		long r = syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0);
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

static void on_sigusr1(int sig KB_UNUSED)
{
}

static int su_signal1(struct kb_scale_task *t KB_UNUSED, char *err, size_t errlen)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return SETUP_FAIL("sigaction(SIGUSR1): %s", strerror(errno));
	return 0;
}

/* raise(): in thread mode the signal goes to the calling thread. */
static void lp_signal1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		int r = raise(SIGUSR1);
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

/* ------------------------------------------------------------------ */
/* memory                                                              */

/* One page up and back down; each brk() counts (2 per round, as upstream).
 * The base is read after the start barrier so that the harness's own heap
 * (below it) is never released. */
static void lp_brk1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const long pg = sysconf(_SC_PAGESIZE);
	char *base = sbrk(0);
	while (SCALE_RUNNING()) {
		int r = brk(base + pg);
		FAILCHK(t, r);
		r = brk(base);
		FAILCHK(t, r);
		SCALE_PUBLISH(2);
	}
}

static void lp_mmap1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		void *p = mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (__builtin_expect(p == MAP_FAILED, 0)) {
			FAILCHK(t, -1);
			continue;
		}
		munmap(p, MEMSIZE);
		SCALE_PUBLISH(1);
	}
}

static void lp_malloc1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		void *p = malloc(MEMSIZE);
		if (__builtin_expect(!p, 0)) {
			FAILCHK(t, -1);
			continue;
		}
		__asm__ __volatile__("" : : "r"(p) : "memory"); /* keep the pair */
		free(p);
		SCALE_PUBLISH(1);
	}
}

/* Map 128 MiB (fd < 0: anonymous; else the task's file, MAP_PRIVATE), write
 * one byte in every page (one counted op per page = one page fault), unmap. */
static void fault_loop(struct kb_scale_task *t, int fd)
{
	SCALE_BEGIN(t);
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	const int flags = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_PRIVATE;
	while (SCALE_RUNNING()) {
		volatile char *p = mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, flags, fd, 0);
		if (__builtin_expect(p == MAP_FAILED, 0)) {
			FAILCHK(t, -1);
			continue;
		}
		for (size_t i = 0; i < MEMSIZE; i += pg) {
			p[i] = 0;
			SCALE_PUBLISH(1);
		}
		munmap((void *)p, MEMSIZE);
	}
}

static void lp_page_fault1(struct kb_scale_task *t)
{
	fault_loop(t, -1);
}

static int su_page_fault2(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "page_fault2", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (ftruncate(fd, (off_t)MEMSIZE) < 0)
		return SETUP_FAIL("ftruncate to %lu bytes: %s", MEMSIZE, strerror(errno));
	return 0;
}

static void lp_page_fault2(struct kb_scale_task *t)
{
	fault_loop(t, t->fd);
}

/* ------------------------------------------------------------------ */
/* files and pipes                                                     */

static void lp_open1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const char *path = t->path;
	while (SCALE_RUNNING()) {
		int fd = open(path, O_RDWR);
		FAILCHK(t, fd);
		if (fd >= 0)
			close(fd);
		SCALE_PUBLISH(1);
	}
}

static int su_pipe1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return SETUP_FAIL("pipe: %s", strerror(errno));
	t->fd = p[0];
	t->fd2 = p[1];
	return 0;
}

/* 1 byte written into the task's own pipe then read back: one op. */
static void lp_pipe1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int rfd = t->fd, wfd = t->fd2;
	while (SCALE_RUNNING()) {
		char c = 0;
		ssize_t r;
		do
			r = write(wfd, &c, 1);
		while (r < 0 && errno == EINTR);
		FAILCHK(t, r);
		do
			r = read(rfd, &c, 1);
		while (r < 0 && errno == EINTR);
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

/* A private 1 MiB file of zeros; the offset is left at its end, as upstream. */
static int su_read1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "read1", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (!(t->buf = calloc(1, RW_FILE)))
		return SETUP_FAIL("out of memory");
	if (write_full(fd, t->buf, RW_FILE) < 0)
		return SETUP_FAIL("writing the 1 MiB file: %s", strerror(errno));
	return 0;
}

/* read() 4 KiB; at the end of the file (read returns 0, also an op) seek to 0. */
static void lp_read1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	char *buf = t->buf;
	while (SCALE_RUNNING()) {
		ssize_t r = read(fd, buf, RW_BUF);
		FAILCHK(t, r);
		if (r == 0)
			lseek(fd, 0, SEEK_SET);
		SCALE_PUBLISH(1);
	}
}

static int su_write1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "write1", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (!(t->buf = calloc(1, RW_BUF)))
		return SETUP_FAIL("out of memory");
	return 0;
}

/* write() 4 KiB; back to offset 0 after 1 MiB (the file stays 1 MiB). */
static void lp_write1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	const char *buf = t->buf;
	size_t size = 0;
	while (SCALE_RUNNING()) {
		ssize_t r = write(fd, buf, RW_BUF);
		FAILCHK(t, r);
		if (r > 0)
			size += (size_t)r;
		if (size >= RW_FILE) {
			size = 0;
			lseek(fd, 0, SEEK_SET);
		}
		SCALE_PUBLISH(1);
	}
}

static int su_lseek1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int r = su_write1(t, err, errlen);
	if (r < 0)
		return r;
	if (write_full(t->fd, t->buf, RW_BUF) < 0)
		return SETUP_FAIL("writing the file: %s", strerror(errno));
	return 0;
}

static void lp_lseek1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	while (SCALE_RUNNING()) {
		off_t r = lseek(fd, 0, SEEK_SET);
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

static int su_lock1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "lock1", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	return 0;
}

/* fcntl(F_SETLKW) write lock of byte 0, then unlock; each fcntl counts
 * (2 per round, as upstream).  POSIX locks belong to the process: in thread
 * mode each task still has its own file, so they never contend. */
static void lp_lock1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	while (SCALE_RUNNING()) {
		struct flock lk;
		memset(&lk, 0, sizeof lk);
		lk.l_type = F_WRLCK;
		lk.l_whence = SEEK_SET;
		lk.l_start = 0;
		lk.l_len = 1;
		int r = fcntl(fd, F_SETLKW, &lk);
		FAILCHK(t, r);
		lk.l_type = F_UNLCK;
		r = fcntl(fd, F_SETLKW, &lk);
		FAILCHK(t, r);
		SCALE_PUBLISH(2);
	}
}

/* ------------------------------------------------------------------ */
/* more of will-it-scale's testcases (futex2 ... read2)                */

/* FUTEX_WAIT for a value the word does not hold: the kernel looks the
 * futex up, compares and returns EAGAIN at once (the expected outcome,
 * not a failure).  Shared key, as futex1. */
static void lp_futex2(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	while (SCALE_RUNNING()) {
		unsigned int word = 0;
		long r = syscall(SYS_futex, &word, FUTEX_WAIT, 1, NULL, NULL, 0);
		if (r == 0 || errno != EAGAIN)
			FAILCHK(t, -1);
		SCALE_PUBLISH(1);
	}
}

/* The task's own sparse 128 MiB file, mapped privately and unmapped. */
static int su_mmap2(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "mmap2", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (ftruncate(fd, (off_t)MEMSIZE) < 0)
		return SETUP_FAIL("ftruncate to %lu bytes: %s", MEMSIZE, strerror(errno));
	return 0;
}

static void lp_mmap2(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	while (SCALE_RUNNING()) {
		void *p = mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (__builtin_expect(p == MAP_FAILED, 0)) {
			FAILCHK(t, -1);
			continue;
		}
		munmap(p, MEMSIZE);
		SCALE_PUBLISH(1);
	}
}

static int su_dup1(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = task_file(t, "dup1", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	return 0;
}

/* dup() + close() of the task's own file's descriptor: in thread mode the
 * tasks share one descriptor table. */
static void lp_dup1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	while (SCALE_RUNNING()) {
		int r = dup(fd);
		FAILCHK(t, r);
		if (r >= 0)
			close(r);
		SCALE_PUBLISH(1);
	}
}

/* The one file every task of pread3 and read2 opens: the harness's
 * KB_SCALE_F_PATH file of task 0 (scale.c names them DIR/kbench-probe.
 * HARNESSPID.scale.TEST.IDX, made before any task starts and removed when
 * the harness ends). */
static int shared_file(struct kb_scale_task *t, const char *test, char *err, size_t errlen)
{
	char path[4096];
	int n = snprintf(path, sizeof path, "%s/kbench-probe.%ld.scale.%s.%d", t->dir, t->harness_pid,
			 test, 0);
	if (n < 0 || (size_t)n >= sizeof path)
		return SETUP_FAIL("directory name too long: %s", t->dir);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return SETUP_FAIL("cannot open the shared file %s: %s", path, strerror(errno));
	return fd;
}

/* Each task writes its own page of the shared file, at page IDX. */
static int su_pread3(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = shared_file(t, "pread3", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (!(t->buf = calloc(1, RW_BUF)))
		return SETUP_FAIL("out of memory");
	const off_t at = (off_t)t->idx * sysconf(_SC_PAGESIZE);
	if (pwrite(fd, t->buf, RW_BUF, at) != RW_BUF)
		return SETUP_FAIL("writing page %d of the shared file: %s", t->idx, strerror(errno));
	return 0;
}

/* pread() 4 KiB of one file all tasks share, each at its own page. */
static void lp_pread3(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const int fd = t->fd;
	const off_t at = (off_t)t->idx * sysconf(_SC_PAGESIZE);
	char *buf = t->buf;
	while (SCALE_RUNNING()) {
		ssize_t r = pread(fd, buf, RW_BUF, at);
		if (__builtin_expect(r != RW_BUF, 0))
			FAILCHK(t, -1);
		SCALE_PUBLISH(1);
	}
}

/* Every task writes the whole 1 MiB of zeros of the shared file (the same
 * bytes, so the order does not matter) and keeps its own descriptor, its
 * own offset. */
static int su_read2(struct kb_scale_task *t, char *err, size_t errlen)
{
	int fd = shared_file(t, "read2", err, errlen);
	if (fd < 0)
		return fd;
	t->fd = fd;
	if (!(t->buf = calloc(1, RW_FILE)))
		return SETUP_FAIL("out of memory");
	if (pwrite(fd, t->buf, RW_FILE, 0) != (ssize_t)RW_FILE)
		return SETUP_FAIL("writing the 1 MiB shared file: %s", strerror(errno));
	return 0;
}

/* read() 4 KiB of the shared file (read1's loop: rewind at its end). */
static void lp_read2(struct kb_scale_task *t)
{
	lp_read1(t);
}

/* The harness made the task's file (t->path): each round creates it again,
 * closes and removes it. */
static void lp_unlink1(struct kb_scale_task *t)
{
	SCALE_BEGIN(t);
	const char *path = t->path;
	while (SCALE_RUNNING()) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		FAILCHK(t, fd);
		if (fd >= 0)
			close(fd);
		int r = unlink(path);
		FAILCHK(t, r);
		SCALE_PUBLISH(1);
	}
}

/* A directory of the task's own (t->path with ".d"), holding one file. */
static int open2_paths(struct kb_scale_task *t, char *dir, char *file, size_t len)
{
	int n = snprintf(dir, len, "%s.d", t->path);
	int m = snprintf(file, len, "%s.d/f", t->path);
	return n < 0 || m < 0 || (size_t)m >= len ? -1 : 0;
}

static int su_open2(struct kb_scale_task *t, char *err, size_t errlen)
{
	char dir[4096], file[4096];
	if (open2_paths(t, dir, file, sizeof file) < 0)
		return SETUP_FAIL("directory name too long: %s", t->dir);
	if (mkdir(dir, 0700) < 0)
		return SETUP_FAIL("cannot create %s: %s", dir, strerror(errno));
	int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rmdir(dir);
		return SETUP_FAIL("cannot create %s: %s", file, strerror(errno));
	}
	close(fd);
	return 0;
}

/* open(O_RDWR) + close() of the task's file in its own directory (open1's
 * files share one directory); the directory goes when the loop ends. */
static void lp_open2(struct kb_scale_task *t)
{
	char dir[4096], file[4096];
	if (open2_paths(t, dir, file, sizeof file) < 0)
		return;
	{
		SCALE_BEGIN(t);
		while (SCALE_RUNNING()) {
			int fd = open(file, O_RDWR);
			FAILCHK(t, fd);
			if (fd >= 0)
				close(fd);
			SCALE_PUBLISH(1);
		}
	}
	unlink(file);
	rmdir(dir);
}

/* ------------------------------------------------------------------ */
/* the table                                                           */

const struct kb_scale_test kb_scale_tests[] = {
	/* name, description, one op, setup, loop, flags */
	{"getppid1", "getppid() in a loop", "one getppid()", NULL, lp_getppid1, 0},
	{"brk1", "brk() one page up and back down", "one brk() (two per round)", NULL, lp_brk1, 0},
	{"mmap1", "mmap() + munmap() of 128 MiB of anonymous memory, untouched",
	 "one mmap+munmap pair", NULL, lp_mmap1, 0},
	{"page_fault1", "anonymous page faults: mmap 128 MiB private anon, write every page, munmap",
	 "one page written (one fault)", NULL, lp_page_fault1, 0},
	{"page_fault2", "file-backed private page faults: mmap 128 MiB of a per-task sparse file "
			"MAP_PRIVATE, write every page, munmap",
	 "one page written (one fault)", su_page_fault2, lp_page_fault2, 0},
	{"malloc1", "malloc() + free() of 128 MiB (glibc serves it with mmap/munmap)",
	 "one malloc+free pair", NULL, lp_malloc1, 0},
	{"futex1", "futex(FUTEX_WAKE) of a word nobody waits on (shared, not private, key)",
	 "one futex()", NULL, lp_futex1, 0},
	{"pipe1", "write then read 1 byte through the task's own pipe",
	 "one write+read pair", su_pipe1, lp_pipe1, 0},
	{"open1", "open(O_RDWR) + close() of the task's own empty file",
	 "one open+close pair", NULL, lp_open1, KB_SCALE_F_PATH},
	{"read1", "read() 4 KiB from the task's own 1 MiB cached file, rewinding at its end",
	 "one read()", su_read1, lp_read1, 0},
	{"write1", "write() 4 KiB to the task's own file, rewinding every 1 MiB",
	 "one write()", su_write1, lp_write1, 0},
	{"lseek1", "lseek(fd, 0, SEEK_SET) on the task's own file", "one lseek()",
	 su_lseek1, lp_lseek1, 0},
	{"signal1", "raise(SIGUSR1) delivered to an empty handler", "one raise() (signal delivered)",
	 su_signal1, lp_signal1, 0},
	{"sched_yield", "sched_yield() in a loop", "one sched_yield()", NULL, lp_sched_yield, 0},
	{"lock1", "fcntl(F_SETLKW) write lock + unlock of byte 0 of the task's own file",
	 "one fcntl() (two per round)", su_lock1, lp_lock1, 0},
	{"futex2", "futex(FUTEX_WAIT) for a value the word does not hold (returns EAGAIN at once)",
	 "one futex()", NULL, lp_futex2, 0},
	{"mmap2", "mmap() + munmap() of the task's own 128 MiB file, private, untouched",
	 "one mmap+munmap pair", su_mmap2, lp_mmap2, 0},
	{"dup1", "dup() + close() of a descriptor of the task's own file", "one dup+close pair",
	 su_dup1, lp_dup1, 0},
	{"pread3", "pread() 4 KiB of one file all tasks share, each at its own page", "one pread()",
	 su_pread3, lp_pread3, KB_SCALE_F_PATH},
	{"read2", "read() 4 KiB of one cached 1 MiB file all tasks share, rewinding at its end",
	 "one read()", su_read2, lp_read2, KB_SCALE_F_PATH},
	{"unlink1", "open(O_CREAT) + close() + unlink() of the task's own file",
	 "one create+close+unlink", NULL, lp_unlink1, KB_SCALE_F_PATH},
	{"open2", "open(O_RDWR) + close() of the task's own file in a directory of its own",
	 "one open+close pair", su_open2, lp_open2, KB_SCALE_F_PATH},
};

const size_t kb_nscale_tests = sizeof kb_scale_tests / sizeof kb_scale_tests[0];
