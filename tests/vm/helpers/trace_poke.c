// SPDX-License-Identifier: GPL-2.0
/*
 * trace_poke: guest-side helper of the tracepoint and log tests.
 *
 *   trace_poke getppid N           call getppid() N times; prints "calls=N"
 *   trace_poke write PATH VALUE    write VALUE to PATH; prints "errno=E"
 *   trace_poke nocap-write PATH VALUE
 *                                  the same without CAP_SYS_ADMIN (still uid 0)
 *   trace_poke read PATH           read PATH to EOF; prints "errno=E bytes=N"
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int write_value(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	int err = 0;

	if (fd < 0) {
		err = errno;
	} else {
		if (write(fd, value, strlen(value)) < 0)
			err = errno;
		close(fd);
	}
	printf("errno=%d\n", err);
	return 0;
}

static int drop_sys_admin(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2];

	if (syscall(SYS_capget, &hdr, caps))
		return -1;
	caps[0].effective &= ~(1U << CAP_SYS_ADMIN);
	caps[0].permitted &= ~(1U << CAP_SYS_ADMIN);
	return syscall(SYS_capset, &hdr, caps);
}

static int read_file(const char *path)
{
	static char buf[1 << 16];
	long total = 0, n;
	int fd = open(path, O_RDONLY);
	int err = 0;

	if (fd < 0) {
		err = errno;
	} else {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
		if (n < 0)
			err = errno;
		close(fd);
	}
	printf("errno=%d bytes=%ld\n", err, total);
	return 0;
}

int main(int argc, char **argv)
{
	long i, n;

	if (argc == 3 && !strcmp(argv[1], "getppid")) {
		n = atol(argv[2]);
		for (i = 0; i < n; i++)
			syscall(SYS_getppid);
		printf("calls=%ld\n", n);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "write"))
		return write_value(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "nocap-write")) {
		if (drop_sys_admin())
			return 3;
		return write_value(argv[2], argv[3]);
	}
	if (argc == 3 && !strcmp(argv[1], "read"))
		return read_file(argv[2]);
	fprintf(stderr, "usage: trace_poke getppid N | write PATH VALUE | nocap-write PATH VALUE | read PATH\n");
	return 2;
}
