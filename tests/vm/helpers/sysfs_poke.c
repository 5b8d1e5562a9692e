// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs_poke: exact-errno sysfs accesses for the kbench.ko tests, run in the guest.
 *
 *   sysfs_poke writes CASEFILE     one case per line: PATH<TAB>KIND<TAB>HEX
 *                                  KIND: data (write the bytes), badaddr (write from an
 *                                  unmapped address), empty (a zero-length write).
 *                                  Prints: INDEX<TAB>ERRNO<TAB>RET<TAB>HEX_BEFORE<TAB>HEX_AFTER
 *   sysfs_poke alarm-read PATH MS  read PATH with a SIGALRM (handler, no SA_RESTART)
 *                                  after MS ms; prints "errno=N bytes=M"
 *   sysfs_poke nocap-read PATH     drop CAP_SYS_ADMIN (stay uid 0), then read PATH;
 *                                  prints "errno=N"
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static void hex(const unsigned char *buf, long len)
{
	long i;

	for (i = 0; i < len; i++)
		printf("%02x", buf[i]);
	if (len == 0)
		printf("-");
}

static long read_all(const char *path, unsigned char *buf, long cap)
{
	int fd = open(path, O_RDONLY);
	long n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

static int unhex(const char *text, unsigned char *out)
{
	int n = 0;

	while (text[0] && text[1] && text[0] != '\n') {
		unsigned int byte;

		sscanf(text, "%2x", &byte);
		out[n++] = (unsigned char)byte;
		text += 2;
	}
	return n;
}

static int do_writes(const char *casefile)
{
	static char line[20000];
	static unsigned char data[10000], before[8192], after[8192];
	FILE *in = fopen(casefile, "r");
	int index = 0;

	if (!in) {
		perror(casefile);
		return 2;
	}
	while (fgets(line, sizeof(line), in)) {
		char *path = strtok(line, "\t"), *kind = strtok(NULL, "\t"), *payload = strtok(NULL, "\t\n");
		long nb, na, ret;
		int fd, err = 0, len;

		if (!path || !kind)
			continue;
		len = payload && strcmp(payload, "-") ? unhex(payload, data) : 0;
		nb = read_all(path, before, sizeof(before));
		fd = open(path, O_WRONLY);
		if (fd < 0) {
			ret = -1;
			err = errno;
		} else {
			if (!strcmp(kind, "badaddr"))
				ret = syscall(SYS_write, fd, (void *)8, 16);
			else if (!strcmp(kind, "empty"))
				ret = write(fd, data, 0);
			else
				ret = write(fd, data, len);
			if (ret < 0)
				err = errno;
			close(fd);
		}
		na = read_all(path, after, sizeof(after));
		printf("%d\t%d\t%ld\t", index++, err, ret);
		hex(before, nb > 0 ? nb : 0);
		printf("\t");
		hex(after, na > 0 ? na : 0);
		printf("\n");
	}
	fclose(in);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int alarm_read(const char *path, long ms)
{
	static unsigned char buf[65536];
	struct sigaction sa;
	struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };
	long n;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: the read must fail with EINTR */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	n = read_all(path, buf, sizeof(buf));
	printf("errno=%ld bytes=%ld\n", n < 0 ? -n : 0, n > 0 ? n : 0);
	return 0;
}

static int nocap_read(const char *path)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2];
	unsigned char buf[4096];
	long n;

	if (syscall(SYS_capget, &hdr, caps))
		return 3;
	caps[0].effective &= ~(1U << CAP_SYS_ADMIN);
	caps[0].permitted &= ~(1U << CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &hdr, caps))
		return 3;
	n = read_all(path, buf, sizeof(buf));
	printf("errno=%ld\n", n < 0 ? -n : 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "writes"))
		return do_writes(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "alarm-read"))
		return alarm_read(argv[2], atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "nocap-read"))
		return nocap_read(argv[2]);
	fprintf(stderr, "usage: sysfs_poke writes CASEFILE | alarm-read PATH MS | nocap-read PATH\n");
	return 2;
}
