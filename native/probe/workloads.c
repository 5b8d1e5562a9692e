/* kbench-probe: the workloads.
 *
 * Adding a workload = one run function (plus set-up/tear-down if it needs a
 * file or a peer) and one line in kb_workloads[] at the end of this file.
 *
 * Rules for a run function: it performs exactly `n` operations and nothing
 * else (no allocation, no printing, no system call that is not the measured
 * one); every result is consumed (added to a local accumulator that ends in
 * the volatile kb_sink) so the compiler cannot drop the work; failures are
 * counted in c->errors (a predictable branch) and reported as a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

volatile uint64_t kb_sink;
volatile pid_t kb_running_child; /* killed by the signal handler */

#define ERRCHK(c, r)                          \
	do {                                  \
		if (__builtin_expect((r) < 0, 0)) { \
			(c)->errors++;        \
			(c)->last_errno = errno; \
		}                             \
	} while (0)

#define SETUP_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define PARAM_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -2)

/* ------------------------------------------------------------------ */
/* shared helpers                                                      */

static void *alloc_touched(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n ? n : 1))
		return NULL;
	memset(p, 'k', n);
	return p;
}

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case EXT4_SUPER_MAGIC: return "ext2/3/4";
	case TMPFS_MAGIC: return "tmpfs";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	case RAMFS_MAGIC: return "ramfs";
	case NFS_SUPER_MAGIC: return "nfs";
	case 0x65735546: return "fuse";
	case 0x2fc12fc1: return "zfs";
	case 0x01021997: return "9p";
	default: return "other";
	}
}

/* Create (O_EXCL) the workload's file in `dir` ("" = $TMPDIR or /tmp). */
static int make_path(struct kb_ctx *c, const char *suffix, char *err, size_t errlen)
{
	const char *dir = kb_pstr(c, "dir");
	if (!dir[0]) {
		dir = getenv("TMPDIR");
		if (!dir || !dir[0])
			dir = "/tmp";
	}
	int n = snprintf(c->path, sizeof c->path, "%s/kbench-probe.%d.%s%s", dir, (int)getpid(),
			 c->wl->name, suffix);
	if (n < 0 || (size_t)n >= sizeof c->path)
		return PARAM_FAIL("dir=%s is too long", dir);
	int fd = open(c->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return SETUP_FAIL("cannot create %s: %s", c->path, strerror(errno));
	c->path_made = 1;
	struct statfs sfs;
	const char *fs = fstatfs(fd, &sfs) == 0 ? fs_name((long)sfs.f_type) : "unknown";
	jb_kstr(&c->setup, "path", c->path);
	jb_kstr(&c->setup, "dir", dir);
	jb_kstr(&c->setup, "filesystem", fs);
	return fd;
}

#define DD_BLOCK (1ll << 20)
#define DD_DEFAULT (10ll << 20)

/* File-backed workloads: create the file as `file_setup` says.
 * small: file_size (0 = one operation's bytes) written by the probe with write()
 *        calls of one operation's size;
 * dd:    file_size (0 = 10 MiB) written in 1 MiB blocks of zeros, as libMicro's
 *        bench script makes its file with `dd if=/dev/zero bs=1024k count=10`;
 * empty: an empty file (file_size 0 = one operation's bytes still bounds writes).
 * Then optionally fsync (the page cache starts clean). */
static int file_prepare(struct kb_ctx *c, long long opbytes, int rw, char *err, size_t errlen)
{
	const char *how = kb_pstr(c, "file_setup");
	long long fsz = kb_pint(c, "file_size");
	int dd = strcmp(how, "dd") == 0, empty = strcmp(how, "empty") == 0;
	if (fsz == 0)
		fsz = dd ? DD_DEFAULT : opbytes;
	if (!rw && empty)
		return PARAM_FAIL("file_setup=empty: %s needs data to read", c->wl->name);
	if (!rw && fsz < opbytes)
		return PARAM_FAIL("file_size=%lld is smaller than one read (%lld bytes)", fsz, opbytes);
	kb_pset_int(c, "file_size", fsz);
	int fd = make_path(c, "", err, errlen);
	if (fd < 0)
		return fd;
	c->fd = fd;
	c->file_size = fsz;
	long long block = dd ? DD_BLOCK : opbytes;
	char desc[256];
	if (!empty) {
		char *b = alloc_touched((size_t)block);
		if (!b)
			return SETUP_FAIL("out of memory");
		if (dd)
			memset(b, 0, (size_t)block);
		for (long long done = 0; done < fsz; done += block) {
			long long len = fsz - done < block ? fsz - done : block;
			if (kb_write_all(fd, b, (size_t)len) < 0) {
				free(b);
				return SETUP_FAIL("cannot write %s: %s", c->path, strerror(errno));
			}
		}
		free(b);
		snprintf(desc, sizeof desc,
			 dd ? "dd: %lld bytes of zeros written in %lld-byte blocks (like dd if=/dev/zero bs=1M)"
			    : "small: %lld bytes written by kbench-probe with write() in %lld-byte calls",
			 fsz, block);
	} else {
		snprintf(desc, sizeof desc, "empty: created empty, grows to the write bound (%lld bytes)",
			 fsz);
	}
	jb_kstr(&c->setup, "created_by", desc);
	jb_kint(&c->setup, "file_size", fsz);
	int do_fsync = kb_pint(c, "fsync") != 0;
	if (do_fsync && fsync(fd) < 0)
		return SETUP_FAIL("fsync %s: %s", c->path, strerror(errno));
	jb_kbool(&c->setup, "fsync_after_setup", do_fsync);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return SETUP_FAIL("lseek %s: %s", c->path, strerror(errno));
	c->off = 0;
	return 0;
}

static void file_teardown(struct kb_ctx *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	/* the file itself is unlinked by kb_cleanup() */
}

/* Keep helpers (pipe peer, futex thread) off the measuring CPU when it is
 * pinned and there is another CPU, unless helper_cpu names one. */
static void helper_affinity(struct kb_ctx *c, pid_t tid, char *desc, size_t desclen)
{
	long long want = kb_pint(c, "helper_cpu");
	cpu_set_t set;
	CPU_ZERO(&set);
	if (want >= 0) {
		CPU_SET((int)want, &set);
		if (sched_setaffinity(tid, sizeof set, &set) == 0)
			snprintf(desc, desclen, "pinned to CPU %lld", want);
		else
			snprintf(desc, desclen, "pinning to CPU %lld failed: %s", want, strerror(errno));
		return;
	}
	if (c->pinned_cpu >= 0 && sched_getaffinity(0, sizeof set, &set) == 0) {
		/* the measuring thread's mask is just its CPU now: use the process's
		 * original CPUs from sysconf instead */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (ncpu > 1) {
			CPU_ZERO(&set);
			for (long i = 0; i < ncpu && i < CPU_SETSIZE; i++)
				if (i != c->pinned_cpu)
					CPU_SET((int)i, &set);
			if (sched_setaffinity(tid, sizeof set, &set) == 0) {
				snprintf(desc, desclen, "any CPU except the measuring CPU %d",
					 c->pinned_cpu);
				return;
			}
		}
		CPU_ZERO(&set);
		for (long i = 0; i < ncpu && i < CPU_SETSIZE; i++)
			CPU_SET((int)i, &set);
		sched_setaffinity(tid, sizeof set, &set);
		snprintf(desc, desclen, "unpinned (only one CPU)");
		return;
	}
	snprintf(desc, desclen, "unpinned");
}

/* ------------------------------------------------------------------ */
/* the workloads                                                       */

static void wl_noop(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		acc += i;
		__asm__ __volatile__("" : "+r"(acc)); /* one opaque step per operation */
	}
	kb_sink += acc;
}

/*
 * `steps` of dependent arithmetic (an LCG step: multiply and add, about four
 * cycles): each needs the previous result, and the count is only known at run
 * time, so the compiler can neither drop nor shorten the chain.  Used to make a
 * variant of a workload that does a known amount more work per operation.  On
 * x86 an lfence follows a non-empty chain: otherwise the CPU runs a short chain
 * in the shadow of the next system call and the added cost is not proportional
 * to the steps (measured: 1 step cost nothing, 10 steps 0.2 ns each).
 */
static inline uint64_t spin_steps(uint64_t x, long long steps)
{
	if (steps <= 0)
		return x;
	for (long long s = 0; s < steps; s++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ __volatile__("" : "+r"(x)); /* keep each step a step */
	}
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("lfence" ::: "memory");
#endif
	return x;
}

static int su_getppid(struct kb_ctx *c, char *err KB_UNUSED, size_t errlen KB_UNUSED)
{
	c->size = kb_pint(c, "spin");
	jb_kint(&c->setup, "spin_steps_per_op", c->size);
	return 0;
}

static void wl_getppid(struct kb_ctx *c, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	long long steps = c->size;
	for (uint64_t i = 0; i < n; i++)
		acc = spin_steps(acc + (uint64_t)getppid(), steps);
	kb_sink += acc;
}

static void wl_sched_yield(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += (uint64_t)sched_yield();
	kb_sink += acc;
}

/* clock_gettime through the vDSO (falls back to the system call inside the
 * vDSO when the clocksource cannot be read from user space). */
static int su_clock_gettime(struct kb_ctx *c, char *err KB_UNUSED, size_t errlen KB_UNUSED)
{
	const char *clk = kb_pstr(c, "clock");
	c->iarg = strcmp(clk, "realtime") == 0 ? CLOCK_REALTIME
		  : strcmp(clk, "monotonic_raw") == 0 ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
	jb_kbool(&c->setup, "vdso_mapped", getauxval(AT_SYSINFO_EHDR) != 0);
	char cs[64] = "unknown";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fgets(cs, sizeof cs, f))
			cs[strcspn(cs, "\n")] = 0;
		fclose(f);
	}
	jb_kstr(&c->setup, "clocksource", cs);
	return 0;
}

static void wl_clock_gettime(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	struct timespec ts;
	clockid_t id = c->iarg;
	for (uint64_t i = 0; i < n; i++) {
		clock_gettime(id, &ts);
		acc += (uint64_t)ts.tv_nsec;
	}
	kb_sink += acc;
}

static int su_read_devzero(struct kb_ctx *c, char *err, size_t errlen)
{
	c->size = kb_pint(c, "size");
	c->fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (c->fd < 0)
		return SETUP_FAIL("cannot open /dev/zero: %s", strerror(errno));
	if (!(c->buf = alloc_touched((size_t)c->size)))
		return SETUP_FAIL("out of memory");
	jb_kstr(&c->setup, "path", "/dev/zero");
	return 0;
}

static void wl_read(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	int fd = c->fd;
	void *buf = c->buf;
	size_t size = (size_t)c->size;
	for (uint64_t i = 0; i < n; i++) {
		ssize_t r = read(fd, buf, size);
		ERRCHK(c, r);
		acc += (uint64_t)r;
	}
	kb_sink += acc;
}

/* pread: `size` bytes at offsets that walk through the file and wrap to 0. */
static int su_pread(struct kb_ctx *c, char *err, size_t errlen)
{
	c->size = kb_pint(c, "size");
	int r = file_prepare(c, c->size, 0, err, errlen);
	if (r < 0)
		return r;
	if (!(c->buf = alloc_touched((size_t)c->size)))
		return SETUP_FAIL("out of memory");
	c->iarg = (int)kb_pint(c, "drop_cache");
	if (fdatasync(c->fd) < 0 && c->iarg)
		return SETUP_FAIL("fdatasync %s: %s", c->path, strerror(errno));
	if (!c->iarg) {
		/* make sure every page is cached: read the file once */
		for (long long o = 0; o < c->file_size; o += c->size)
			if (pread(c->fd, c->buf, (size_t)c->size, o) < 0)
				return SETUP_FAIL("pread %s: %s", c->path, strerror(errno));
		jb_kstr(&c->setup, "cache", "warm: read once after set-up");
	} else {
		jb_kstr(&c->setup, "cache",
			"cold: posix_fadvise(POSIX_FADV_DONTNEED) on the whole file before every "
			"sample, outside the timed region");
	}
	return 0;
}

static void bt_pread(struct kb_ctx *c)
{
	if (c->iarg)
		posix_fadvise(c->fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void wl_pread(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	int fd = c->fd;
	void *buf = c->buf;
	long long size = c->size, fsz = c->file_size, off = c->off;
	for (uint64_t i = 0; i < n; i++) {
		ssize_t r = pread(fd, buf, (size_t)size, off);
		ERRCHK(c, r);
		acc += (uint64_t)r;
		off += size;
		if (off + size > fsz)
			off = 0;
	}
	c->off = off;
	kb_sink += acc;
}

/* write / writev: sequential writes from the file position.  Before a sample
 * (outside the timed region) the position goes back to 0 when this sample would
 * pass file_size; a sample itself never seeks, so the file may grow to one
 * sample's bytes when that is more than file_size. */
static int su_write(struct kb_ctx *c, char *err, size_t errlen)
{
	c->size = kb_pint(c, "size");
	int r = file_prepare(c, c->size, 1, err, errlen);
	if (r < 0)
		return r;
	if (!(c->buf = alloc_touched((size_t)c->size)))
		return SETUP_FAIL("out of memory");
	jb_kstr(&c->setup, "position",
		"sequential; back to 0 between samples when the next sample would pass file_size");
	return 0;
}

static void bt_rewind(struct kb_ctx *c)
{
	long long opbytes = c->size * (c->iarg > 0 ? c->iarg : 1);
	if (c->off + c->batch * opbytes > c->file_size && c->off) {
		lseek(c->fd, 0, SEEK_SET);
		c->off = 0;
	}
}

static void wl_write(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	int fd = c->fd;
	const void *buf = c->buf;
	size_t size = (size_t)c->size;
	for (uint64_t i = 0; i < n; i++) {
		ssize_t r = write(fd, buf, size);
		ERRCHK(c, r);
		acc += (uint64_t)r;
	}
	c->off += (long long)(n * size);
	kb_sink += acc;
}

#define IOV_MAX_KB 1024
static int su_writev(struct kb_ctx *c, char *err, size_t errlen)
{
	c->size = kb_pint(c, "size");
	c->iarg = (int)kb_pint(c, "iovcnt");
	int r = file_prepare(c, c->size * c->iarg, 1, err, errlen);
	if (r < 0)
		return r;
	struct iovec *iov = calloc((size_t)c->iarg, sizeof *iov);
	char *data = alloc_touched((size_t)(c->size * c->iarg));
	if (!iov || !data)
		return SETUP_FAIL("out of memory");
	for (int i = 0; i < c->iarg; i++) {
		iov[i].iov_base = data + (size_t)i * (size_t)c->size;
		iov[i].iov_len = (size_t)c->size;
	}
	c->buf = iov;
	c->priv = data;
	jb_kstr(&c->setup, "position",
		"sequential; back to 0 between samples when the next sample would pass file_size");
	return 0;
}

static void td_writev(struct kb_ctx *c)
{
	free(c->priv);
	c->priv = NULL;
	file_teardown(c);
}

static void wl_writev(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	int fd = c->fd, cnt = c->iarg;
	const struct iovec *iov = c->buf;
	for (uint64_t i = 0; i < n; i++) {
		ssize_t r = writev(fd, iov, cnt);
		ERRCHK(c, r);
		acc += (uint64_t)r;
	}
	c->off += (long long)n * c->size * cnt;
	kb_sink += acc;
}

/* open_close and stat use an empty file made in `dir`. */
static int su_pathfile(struct kb_ctx *c, char *err, size_t errlen)
{
	int fd = make_path(c, "", err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	jb_kstr(&c->setup, "created_by", "empty file created by kbench-probe");
	return 0;
}

static void wl_open_close(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	const char *path = c->path;
	for (uint64_t i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY);
		ERRCHK(c, fd);
		acc += (uint64_t)fd;
		acc += (uint64_t)close(fd);
	}
	kb_sink += acc;
}

static void wl_stat(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	struct stat st;
	const char *path = c->path;
	for (uint64_t i = 0; i < n; i++) {
		int r = stat(path, &st);
		ERRCHK(c, r);
		acc += (uint64_t)st.st_ino;
	}
	kb_sink += acc;
}

static int su_mmap(struct kb_ctx *c, char *err KB_UNUSED, size_t errlen KB_UNUSED)
{
	c->size = kb_pint(c, "size");
	c->iarg = (int)kb_pint(c, "touch");
	c->off = sysconf(_SC_PAGESIZE);
	jb_kstr(&c->setup, "mapping", "anonymous, private, PROT_READ|PROT_WRITE");
	return 0;
}

static void wl_mmap_munmap(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	size_t size = (size_t)c->size, page = (size_t)c->off;
	int touch = c->iarg;
	for (uint64_t i = 0; i < n; i++) {
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (__builtin_expect(p == MAP_FAILED, 0)) {
			c->errors++;
			c->last_errno = errno;
			continue;
		}
		if (touch)
			for (size_t o = 0; o < size; o += page)
				((volatile char *)p)[o] = 1;
		acc += (uint64_t)(uintptr_t)p;
		acc += (uint64_t)munmap(p, size);
	}
	kb_sink += acc;
}

/* pipe_roundtrip: a forked peer echoes one byte; one operation = one round trip. */
static int su_pipe(struct kb_ctx *c, char *err, size_t errlen)
{
	int to[2], from[2];
	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		return SETUP_FAIL("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return SETUP_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		close(to[1]);
		close(from[0]);
		char b;
		for (;;) {
			ssize_t r = read(to[0], &b, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0 || write(from[1], &b, 1) != 1)
				_exit(0);
		}
	}
	close(to[0]);
	close(from[1]);
	c->fd = from[0];
	c->fd2 = to[1];
	c->iarg = (int)pid;
	char desc[128];
	helper_affinity(c, pid, desc, sizeof desc);
	jb_kint(&c->setup, "peer_pid", pid);
	jb_kstr(&c->setup, "peer", "forked process echoing 1 byte over a second pipe");
	jb_kstr(&c->setup, "peer_cpu", desc);
	return 0;
}

static void td_pipe(struct kb_ctx *c)
{
	if (c->fd2 >= 0)
		close(c->fd2); /* the peer reads EOF and exits */
	if (c->fd >= 0)
		close(c->fd);
	c->fd = c->fd2 = -1;
	if (c->iarg > 0) {
		int st;
		while (waitpid((pid_t)c->iarg, &st, 0) < 0 && errno == EINTR)
			;
		c->iarg = 0;
	}
}

static void wl_pipe_roundtrip(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	uint64_t acc = 0;
	int rfd = c->fd, wfd = c->fd2;
	char b = 'k';
	for (uint64_t i = 0; i < n; i++) {
		ssize_t w = write(wfd, &b, 1);
		ssize_t r = read(rfd, &b, 1);
		ERRCHK(c, w);
		ERRCHK(c, r);
		acc += (uint64_t)(w + r);
	}
	kb_sink += acc;
}

/* futex_wake_wait: a helper thread; one operation = set the word to 1 and
 * wake the helper, then wait until the helper set it back to 0 and woke us. */
struct futex_pp {
	int word; /* 1: helper's turn, 0: main's turn */
	int stop;
	pthread_t thr;
	int started;
	pid_t tid;
};

static long futex(int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void *futex_helper(void *arg)
{
	struct futex_pp *f = arg;
	__atomic_store_n(&f->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (;;) {
		while (__atomic_load_n(&f->word, __ATOMIC_ACQUIRE) == 0) {
			if (__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
				return NULL;
			futex(&f->word, FUTEX_WAIT, 0);
		}
		if (__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
			return NULL;
		__atomic_store_n(&f->word, 0, __ATOMIC_RELEASE);
		futex(&f->word, FUTEX_WAKE, 1);
	}
}

static int su_futex(struct kb_ctx *c, char *err, size_t errlen)
{
	struct futex_pp *f = calloc(1, sizeof *f);
	if (!f)
		return SETUP_FAIL("out of memory");
	c->priv = f;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the measuring thread */
	int r = pthread_create(&f->thr, NULL, futex_helper, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return SETUP_FAIL("pthread_create: %s", strerror(r));
	f->started = 1;
	while (!__atomic_load_n(&f->tid, __ATOMIC_ACQUIRE))
		sched_yield();
	char desc[128];
	helper_affinity(c, f->tid, desc, sizeof desc);
	jb_kstr(&c->setup, "peer", "thread in the same process, private futex word");
	jb_kstr(&c->setup, "peer_cpu", desc);
	return 0;
}

static void td_futex(struct kb_ctx *c)
{
	struct futex_pp *f = c->priv;
	if (!f)
		return;
	if (f->started) {
		__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&f->word, 2, __ATOMIC_RELEASE);
		futex(&f->word, FUTEX_WAKE, 1);
		pthread_join(f->thr, NULL);
	}
	free(f);
	c->priv = NULL;
}

static void wl_futex(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	struct futex_pp *f = c->priv;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		__atomic_store_n(&f->word, 1, __ATOMIC_RELEASE);
		acc += (uint64_t)futex(&f->word, FUTEX_WAKE, 1);
		while (__atomic_load_n(&f->word, __ATOMIC_ACQUIRE) == 1)
			futex(&f->word, FUTEX_WAIT, 1);
	}
	kb_sink += acc;
}

/* command: one sample = spawn + exec + wait4 of one command. */
struct cmd_state {
	char **argv;
	char *copy;
	int use_path;  /* execvp-style PATH search */
	int use_fork;  /* fork() instead of posix_spawn (vfork-style clone) */
	int devnull, outfd;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	long long runs;
	int last_status;     /* exit status, or -signal */
	int errfd;           /* the executions' stderr: a memory file, emptied between samples (-1: none) */
	char last_stderr[512]; /* the last line a failed execution wrote there */
};

extern char **environ;

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

static void read_last_line(int fd, char *out, size_t len);

static int su_command(struct kb_ctx *c, char *err, size_t errlen)
{
	const char *cmd = kb_pstr(c, "cmd");
	int shell = (int)kb_pint(c, "shell");
	struct cmd_state *s = calloc(1, sizeof *s);
	if (!s)
		return SETUP_FAIL("out of memory");
	c->priv = s;
	s->devnull = s->outfd = s->errfd = -1;
	if (!cmd[0] || strspn(cmd, " \t\n") == strlen(cmd))
		return PARAM_FAIL("cmd is empty");
	s->copy = strdup(cmd);
	size_t words = 4;
	for (const char *p = cmd; *p; p++)
		words += (*p == ' ' || *p == '\t');
	s->argv = calloc(words + 1, sizeof *s->argv);
	if (!s->copy || !s->argv)
		return SETUP_FAIL("out of memory");
	struct jbuf ex;
	jb_init(&ex);
	if (shell) {
		s->argv[0] = "/bin/sh";
		s->argv[1] = "-c";
		s->argv[2] = s->copy;
		jb_raw(&ex, "[\"/bin/sh\",\"-c\",");
		jb_str(&ex, s->copy);
		jb_raw(&ex, "]");
	} else {
		size_t k = 0;
		jb_raw(&ex, "[");
		for (char *save = NULL, *t = strtok_r(s->copy, " \t\n", &save); t;
		     t = strtok_r(NULL, " \t\n", &save)) {
			s->argv[k++] = t;
			jb_comma(&ex);
			jb_str(&ex, t);
		}
		jb_raw(&ex, "]");
		s->use_path = strchr(s->argv[0], '/') == NULL;
	}
	jb_key(&c->setup, "argv");
	jb_raw(&c->setup, ex.s);
	jb_free(&ex);

	s->use_fork = strcmp(kb_pstr(c, "spawn"), "fork") == 0;
	s->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s->devnull < 0)
		return SETUP_FAIL("cannot open /dev/null: %s", strerror(errno));
	s->outfd = strcmp(kb_pstr(c, "output"), "stderr") == 0 ? 2 : s->devnull;
	if (s->outfd != 2) {
		/* A failure is reported with the last line the execution wrote to stderr. */
		s->errfd = (int)syscall(SYS_memfd_create, "kbench-command-stderr", MFD_CLOEXEC);
		if (s->errfd < 0)
			s->errfd = dup(s->devnull);
	}
	posix_spawn_file_actions_init(&s->fa);
	posix_spawn_file_actions_adddup2(&s->fa, s->devnull, 0);
	posix_spawn_file_actions_adddup2(&s->fa, s->outfd, 1);
	if (s->outfd != 2)
		posix_spawn_file_actions_adddup2(&s->fa, s->errfd, 2);
	posix_spawnattr_init(&s->attr);
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigmask(&s->attr, &none);
	posix_spawnattr_setsigdefault(&s->attr, &def);
	posix_spawnattr_setflags(&s->attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	jb_kstr(&c->setup, "spawn",
		s->use_fork ? "fork() + exec + wait4()"
			    : "posix_spawn (vfork-style clone: the probe's own memory size does "
			      "not affect the time) + wait4()");
	jb_kstr(&c->setup, "stdio",
		s->outfd == 2 ? "stdin /dev/null, stdout+stderr to the probe's stderr"
			      : "stdin, stdout /dev/null; stderr to a memory file emptied between samples "
				"(its last line names a failure)");
	return 0;
}

static void td_command(struct kb_ctx *c)
{
	struct cmd_state *s = c->priv;
	if (!s)
		return;
	if (s->devnull >= 0) {
		posix_spawn_file_actions_destroy(&s->fa);
		posix_spawnattr_destroy(&s->attr);
		close(s->devnull);
	}
	if (s->errfd >= 0)
		close(s->errfd);
	free(s->argv);
	free(s->copy);
	free(s);
	c->priv = NULL;
}

static pid_t command_start(struct cmd_state *s)
{
	pid_t pid;
	if (!s->use_fork) {
		int r = s->use_path ? posix_spawnp(&pid, s->argv[0], &s->fa, &s->attr, s->argv, environ)
				    : posix_spawn(&pid, s->argv[0], &s->fa, &s->attr, s->argv, environ);
		if (r) {
			errno = r;
			return -1;
		}
		return pid;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(s->devnull, 0);
		dup2(s->outfd, 1);
		if (s->outfd != 2)
			dup2(s->errfd, 2);
		if (s->use_path)
			execvp(s->argv[0], s->argv);
		else
			execv(s->argv[0], s->argv);
		_exit(127);
	}
	return pid;
}

static void wl_command(struct kb_ctx *c KB_UNUSED, uint64_t n, uint64_t *extra KB_UNUSED)
{
	struct cmd_state *s = c->priv;
	for (uint64_t i = 0; i < n; i++) {
		struct rusage ru;
		memset(&ru, 0, sizeof ru);
		pid_t pid = command_start(s);
		if (pid < 0) {
			c->errors++;
			c->last_errno = errno;
			extra[0] = extra[1] = extra[2] = 0;
			if (c->stop_on_failure)
				break;
			continue;
		}
		kb_running_child = pid;
		int st = 0;
		while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
			;
		kb_running_child = 0;
		s->runs++;
		/* a child ended by our signal handler belongs to a discarded sample */
		if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && !kb_stop) {
			c->errors++;
			c->last_errno = 0;
			s->last_status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
			read_last_line(s->errfd, s->last_stderr, sizeof s->last_stderr);
			if (c->stop_on_failure)
				break; /* the sample is not kept: no more executions for it */
		}
		extra[0] = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
		extra[1] = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
		extra[2] = (uint64_t)ru.ru_maxrss;
	}
}

/* Between samples: empty the stderr file, so that it holds one sample's executions. */
static void bt_command(struct kb_ctx *c)
{
	struct cmd_state *s = c->priv;

	if (s->errfd >= 0 && lseek(s->errfd, 0, SEEK_CUR) > 0) {
		if (ftruncate(s->errfd, 0) == 0)
			lseek(s->errfd, 0, SEEK_SET);
	}
}

/* The last non-empty line of `fd`'s contents up to its offset (at most the last 4 KiB). */
static void read_last_line(int fd, char *out, size_t len)
{
	char tail[4096];
	off_t end = fd >= 0 ? lseek(fd, 0, SEEK_CUR) : -1;

	out[0] = 0;
	if (end <= 0)
		return;
	off_t from = end > (off_t)sizeof tail ? end - (off_t)sizeof tail : 0;
	ssize_t got = pread(fd, tail, (size_t)(end - from), from);
	if (got <= 0)
		return;
	while (got > 0 && (tail[got - 1] == '\n' || tail[got - 1] == '\r'))
		got--;
	ssize_t start = got;
	while (start > 0 && tail[start - 1] != '\n')
		start--;
	size_t n = (size_t)(got - start) < len - 1 ? (size_t)(got - start) : len - 1;
	memcpy(out, tail + start, n);
	out[n] = 0;
}

/* How the last failed execution ended: its exit status, or minus the signal that killed it. */
int kb_command_last_status(const struct kb_ctx *c)
{
	const struct cmd_state *s = c->priv;
	return s ? s->last_status : 0;
}

/* The last line the last failed execution wrote to stderr ("" when none, or output=stderr). */
const char *kb_command_last_stderr(const struct kb_ctx *c)
{
	const struct cmd_state *s = c->priv;
	return s ? s->last_stderr : "";
}

/* ------------------------------------------------------------------ */
/* the table                                                           */

#define PARAMS(...) ((const struct kb_param[]){__VA_ARGS__, {.name = NULL}})
static const struct kb_param no_params[] = {{.name = NULL}};
#define P_INT(n, d, lo, hi, dsc) {.name = n, .type = KB_INT, .def = d, .desc = dsc, .min = lo, .max = hi}
#define P_STR(n, d, ch, dsc) {.name = n, .type = KB_STR, .def = d, .desc = dsc, .choices = ch}
#define P_BOOL(n, d, dsc) {.name = n, .type = KB_BOOL, .def = d, .desc = dsc, .min = 0, .max = 1}
#define GiB (1ll << 30)
#define P_DIR P_STR("dir", "", NULL, "directory for the file (empty: $TMPDIR or /tmp)")
#define P_FILE(autodesc)                                                                         \
	P_STR("file_setup", "small", "small|dd|empty",                                           \
	      "how the file is made: small = written by the probe with write() of one "          \
	      "operation's size; dd = file_size (default 10 MiB) of zeros in 1 MiB blocks, like " \
	      "libMicro's dd bs=1M; empty = created empty"),                                     \
	P_INT("file_size", "0", 0, 64 * GiB, "file size in bytes; 0 = auto: " autodesc),        \
	P_DIR,                                                                                   \
	P_BOOL("fsync", "0", "fsync the file after set-up, so the page cache starts clean")
#define P_HELPER P_INT("helper_cpu", "-1", -1, CPU_SETSIZE - 1, \
		       "CPU of the peer; -1 = any CPU but the measuring one when --cpu is given")

static const char *const command_columns[] = {"ticks", "utime_ns", "stime_ns", "maxrss_kb", NULL};

const struct kb_workload kb_workloads[] = {
	{.name = "getppid",
	 .desc = "getppid() system call (the cheapest real syscall; glibc does not cache it)",
	 .run = wl_getppid, .setup = su_getppid,
	 .params = PARAMS(P_INT("spin", "0", 0, 1000000, "steps of dependent arithmetic (about 4 cycles each) "
				"added to each call: a variant doing a known amount more work"))},
	{.name = "clock_gettime", .desc = "clock_gettime() through the vDSO",
	 .run = wl_clock_gettime, .setup = su_clock_gettime,
	 .params = PARAMS(P_STR("clock", "monotonic", "monotonic|realtime|monotonic_raw", "clock id"))},
	{.name = "read_devzero", .desc = "read() of `size` bytes from /dev/zero",
	 .run = wl_read, .setup = su_read_devzero, .teardown = file_teardown,
	 .params = PARAMS(P_INT("size", "1", 1, 64ll << 20, "bytes per read"))},
	{.name = "pread", .desc = "pread() of `size` bytes from a cached file, offsets walking through the file",
	 .run = wl_pread, .setup = su_pread, .teardown = file_teardown, .between = bt_pread,
	 .params = PARAMS(P_INT("size", "4096", 1, 64ll << 20, "bytes per pread"),
			  P_FILE("small -> size, dd -> 10 MiB"),
			  P_BOOL("drop_cache", "0", "0: page cache warm (file read once in set-up); 1: "
				 "POSIX_FADV_DONTNEED before every sample (cold reads)"))},
	{.name = "write", .desc = "write() of `size` bytes to a file, sequential, bounded by file_size",
	 .run = wl_write, .setup = su_write, .teardown = file_teardown, .between = bt_rewind,
	 .params = PARAMS(P_INT("size", "1024", 1, 64ll << 20, "bytes per write"),
			  P_FILE("small/empty -> size, dd -> 10 MiB"))},
	{.name = "writev_t1k",
	 .desc = "writev() of `iovcnt` x `size` bytes (default 10 x 1 KiB, libMicro writev_t1k) to a file",
	 .run = wl_writev, .setup = su_writev, .teardown = td_writev, .between = bt_rewind,
	 .params = PARAMS(P_INT("size", "1024", 1, 16ll << 20, "bytes per iovec"),
			  P_INT("iovcnt", "10", 1, IOV_MAX_KB, "iovecs per writev"),
			  P_FILE("small/empty -> iovcnt x size, dd -> 10 MiB"))},
	{.name = "open_close", .desc = "open(O_RDONLY) + close() of an existing empty file",
	 .run = wl_open_close, .setup = su_pathfile, .params = PARAMS(P_DIR)},
	{.name = "stat", .desc = "stat() of an existing empty file",
	 .run = wl_stat, .setup = su_pathfile, .params = PARAMS(P_DIR)},
	{.name = "mmap_munmap", .desc = "mmap() of `size` anonymous bytes, optionally touch every page, munmap()",
	 .run = wl_mmap_munmap, .setup = su_mmap,
	 .params = PARAMS(P_INT("size", "4096", 1, 64 * GiB, "bytes per mapping"),
			  P_BOOL("touch", "0", "write one byte in every page before munmap"))},
	{.name = "pipe_roundtrip",
	 .desc = "1-byte ping-pong with a forked process over two pipes (one op = one round trip)",
	 .run = wl_pipe_roundtrip, .setup = su_pipe, .teardown = td_pipe, .params = PARAMS(P_HELPER)},
	{.name = "futex_wake_wait",
	 .desc = "futex wake/wait ping-pong with a second thread (one op = one round trip)",
	 .run = wl_futex, .setup = su_futex, .teardown = td_futex, .params = PARAMS(P_HELPER)},
	{.name = "sched_yield", .desc = "sched_yield() system call",
	 .run = wl_sched_yield, .params = no_params},
	{.name = "command", .desc = "spawn + exec + wait4 of a user command, one execution per sample",
	 .run = wl_command, .setup = su_command, .teardown = td_command, .between = bt_command,
	 .params = PARAMS(P_STR("cmd", "true", NULL, "the command line"),
			  P_BOOL("shell", "1", "1: run via /bin/sh -c CMD; 0: split CMD on blanks and exec it "
				 "directly (PATH search, no quoting)"),
			  P_STR("spawn", "vfork", "vfork|fork",
				"vfork: posix_spawn (vfork-style clone); fork: fork()+exec"),
			  P_STR("output", "null", "null|stderr", "where the command's stdout/stderr go")),
	 .columns = command_columns, .flags = KB_F_BATCH1},
	{.name = "noop", .desc = "an empty operation: measures the sample loop itself (for checking the method)",
	 .run = wl_noop, .params = no_params},
};

const size_t kb_nworkloads = sizeof kb_workloads / sizeof kb_workloads[0];
