/* kbench-probe: marks of the measured samples for instruction counters (--mark).
 *
 * Each measured sample's operations are bracketed twice:
 * - callgrind's collection is switched on just before them and off just after
 *   (client requests, when valgrind's header was there at build time): kbench
 *   runs the probe under `valgrind --tool=callgrind --collect-atstart=no`;
 * - on x86-64, kbench's emulator marks (multi-byte NOPs, as kbench.ko's,
 *   kmod/core/marks.h) for its qemu TCG plugin: arm before the measured loop,
 *   start and stop around each sample's operations, disarm after the loop.
 * Natively both are a few instructions that change nothing; they are compiled
 * into the marked loops only (loop.c), so an unmarked run is unchanged. */
#ifndef KB_MARKS_H
#define KB_MARKS_H

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define KB_HAVE_CALLGRIND 1
#endif
#endif
#ifndef KB_HAVE_CALLGRIND
#define KB_HAVE_CALLGRIND 0
#endif

#define KB_MARK_ARM 1
#define KB_MARK_DISARM 2
#define KB_MARK_START 3
#define KB_MARK_STOP 4

#if defined(__x86_64__)
#define KB_EMULATOR_MARKS 1
#define kb_emulator_mark(op)                                                          \
	__asm__ volatile(".byte 0x0f, 0x1f, 0x80\n\t.long 0x4b420000 + %c0" : : "i"(op) \
			 : "memory")
#else
#define KB_EMULATOR_MARKS 0
#define kb_emulator_mark(op) __asm__ volatile("" : : : "memory")
#endif

static inline __attribute__((always_inline)) void kb_mark_collect(void)
{
#if KB_HAVE_CALLGRIND
	CALLGRIND_TOGGLE_COLLECT;
#endif
}

/* Just before a sample's operations, and just after them. */
#define kb_mark_on()                          \
	do {                                  \
		kb_mark_collect();            \
		kb_emulator_mark(KB_MARK_START); \
	} while (0)
#define kb_mark_off()                        \
	do {                                 \
		kb_emulator_mark(KB_MARK_STOP); \
		kb_mark_collect();           \
	} while (0)

#endif
