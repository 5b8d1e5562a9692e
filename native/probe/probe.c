/* kbench-probe: the commands, and what every command shares: errors,
 * warnings, signals and clean-up.  Contract: docs/probe-format.md.
 * Overview of the files: probe.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "scale.h"
#include "timer.h"

volatile sig_atomic_t kb_stop;
struct kb_ctx *kb_active_ctx;
char kb_output_path[4096];
volatile int kb_output_made;

static struct jbuf warnings; /* JSON strings separated by commas */

/* ------------------------------------------------------------------ */
/* errors, warnings, clean-up                                          */

void kb_cleanup(void)
{
	struct kb_ctx *c = kb_active_ctx;
	if (c) {
		kb_active_ctx = NULL;
		if (c->wl && c->wl->teardown)
			c->wl->teardown(c);
		if (c->path_made)
			unlink(c->path);
		c->path_made = 0;
	}
}

void kb_die(int code, const char *fmt, ...)
{
	kb_cleanup();
	if (kb_output_made)
		unlink(kb_output_path);
	va_list ap;
	va_start(ap, fmt);
	fputs("kbench-probe: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

const char *kb_warnings_json(void)
{
	return warnings.s ? warnings.s : "";
}

void kb_warnings_reset(void)
{
	jb_free(&warnings);
	jb_init(&warnings);
}

void kb_warn(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jb_comma(&warnings);
	jb_str(&warnings, msg);
}

/* First signal: stop at the next sample boundary (and end a running command).
 * Second signal: give up at once (after removing the workload's file). */
void kb_on_signal(int sig KB_UNUSED)
{
	if (kb_stop) {
		struct kb_ctx *c = kb_active_ctx;
		if (c && c->path_made)
			unlink(c->path);
		if (kb_output_made)
			unlink(kb_output_path);
		_exit(KB_EXIT_INTERRUPTED);
	}
	kb_stop = 1;
	pid_t child = kb_running_child;
	if (child > 0)
		kill(child, SIGTERM);
}

/* SIGINT and SIGTERM go to `handler`, restarting interrupted system calls or
 * not (a sleep that must return EINTR); SIGPIPE is ignored. */
void kb_install_signals(void (*handler)(int), int restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* ------------------------------------------------------------------ */
/* the commands                                                        */

int main(int argc, char **argv)
{
	if (argc < 2) {
		kb_usage(stderr);
		fputs("kbench-probe: error: no command given\n", stderr);
		return KB_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--list") || !strcmp(cmd, "list")) {
		if (argc > 2)
			kb_die(KB_EXIT_USAGE, "--list takes no arguments");
		return kb_list_workloads();
	}
	if (!strcmp(cmd, "--version")) {
		printf("kbench-probe %s (%s)\n", KB_VERSION, KB_FORMAT);
		return 0;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		kb_usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--selftest-overhead")) {
		/* diagnostic for benchmarks/overhead.py, not part of the contract */
		long long pairs = argc > 2 ? kb_opt_int(cmd, argv[2], 100, KB_MAX_SAMPLES) : 1000000;
		return kb_selftest_overhead(pairs);
	}
	if (!strcmp(cmd, "--list-scale")) {
		if (argc > 2)
			kb_die(KB_EXIT_USAGE, "--list-scale takes no arguments");
		return kb_scale_list();
	}
	if (!strcmp(cmd, "run"))
		return kb_run(argc, argv);
	if (!strcmp(cmd, "sequence"))
		return kb_sequence(argc, argv);
	if (!strcmp(cmd, "scale"))
		return kb_scale_main(argc, argv);
	kb_die(KB_EXIT_USAGE, "unknown command '%s' (expected run, sequence, scale, --list, --list-scale or --version)", cmd);
}
