/*
 * kbench-icount: a qemu TCG plugin that counts the instructions a vCPU
 * executes inside the regions kbench marks.
 *
 * kbench.ko (around each recorded sample's calls) and kbench-probe --mark
 * (around each measured sample's operations) bracket their timed regions with
 * marks: multi-byte NOPs, `nopl disp32(%rax)` (0f 1f 80 + disp32), whose
 * displacement says what they are (docs/instructions.md):
 *
 *   disp32 = 0x4b42_00_OP   ("KB" in its two high bytes)
 *   OP 1  arm: regions count from now on (just before a recorded loop)
 *   OP 2  disarm: the loop ended; a run record follows its regions
 *   OP 3  start of a region      OP 4  end of a region
 *
 * Natively (and under KVM) they are NOPs that touch no memory. At translation
 * this plugin looks at every instruction's bytes; a mark gets a callback of its
 * own, and every block gets one that adds its instruction count to the vCPU's
 * open region, kernel and user apart (by the block's address: the upper half
 * of the address space is the kernel's). A block's count is added when it
 * starts, so a mark corrects for the instructions of its own block that lie
 * on the other side of it: a region holds exactly the instructions executed
 * between its two marks on that vCPU (the marks themselves excluded), provided
 * no exception cuts a block short inside it (TCG delivers interrupts between
 * blocks, so an interrupt's handler is counted whole, in the region it hit).
 *
 * Output (plugin argument out=FILE, appended): 32-byte little-endian records,
 *   u64 user, u64 kernel, u32 vcpu, u32 type, u64 extra
 * type 1: a region (its user and kernel instructions, extra 0);
 * type 2: a disarm (user = regions recorded since the arm, kernel = regions
 *         lost: an end without a start on that vCPU, or a start over an open
 *         region; extra = the arm's serial number).
 * The file is flushed at every disarm, so a host that saw the guest's run end
 * reads every record of it.
 *
 * Written against qemu's documented plugin API (docs/devel/tcg-plugins.rst,
 * API version 1, as in qemu 7.2): Debian ships no plugin header, so the few
 * declarations used are below, in kbench's own words.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plugin API this plugin uses (qemu's documented interface) ---- */

typedef uint64_t kb_plugin_id;
struct qemu_plugin_tb;		/* opaque: a translation block */
struct qemu_plugin_insn;	/* opaque: one instruction of it */
struct kb_qemu_info;		/* opaque here: nothing of it is read */

enum { KB_CB_NO_REGS = 0 };	/* callbacks read no guest register */

typedef void (*kb_tb_trans_cb)(kb_plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*kb_vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*kb_udata_cb)(kb_plugin_id id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(kb_plugin_id id, kb_tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, kb_vcpu_udata_cb cb,
					  int flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, kb_vcpu_udata_cb cb,
					    int flags, void *userdata);
void qemu_plugin_register_atexit_cb(kb_plugin_id id, kb_udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
int qemu_plugin_n_max_vcpus(void);
void qemu_plugin_outs(const char *text);

#define KB_EXPORT __attribute__((visibility("default")))

/* The API version this plugin was written for; qemu refuses a plugin outside its range. */
KB_EXPORT int qemu_plugin_version = 1;

/* ---- kbench's marks ---- */

#define KB_MARK_LEN 7
#define KB_MARK_MAGIC 0x4b420000u
#define KB_OP_ARM 1u
#define KB_OP_DISARM 2u
#define KB_OP_START 3u
#define KB_OP_STOP 4u

#define KB_REC_REGION 1u
#define KB_REC_DISARM 2u

struct kb_record {
	uint64_t user;
	uint64_t kernel;
	uint32_t vcpu;
	uint32_t type;
	uint64_t extra;
};

struct kb_vcpu {
	uint64_t n[2];		/* the open region's instructions: [0] user, [1] kernel */
	int open;
};

static struct kb_vcpu *vcpus;
static unsigned int nr_vcpus;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int armed;		/* arms not yet disarmed, on any vCPU */
static uint64_t arm_serial;
static uint64_t regions, lost;	/* since the last arm */

/*
 * A block's and a mark's callback data, packed into the pointer: bit 0 the
 * mode (1 kernel), bits 1..3 the mark's operation, the rest an instruction
 * count (a block's size, or a mark's instructions after it in its block).
 */
static void *kb_pack(uint64_t count, unsigned int op, int kernel)
{
	return (void *)(uintptr_t)((count << 4) | ((uint64_t)op << 1) | (uint64_t)(kernel != 0));
}

static uint64_t kb_count(void *p) { return (uint64_t)(uintptr_t)p >> 4; }
static unsigned int kb_op(void *p) { return (unsigned int)(((uintptr_t)p >> 1) & 7u); }
static int kb_kernel(void *p) { return (int)((uintptr_t)p & 1u); }

static struct kb_vcpu *kb_vcpu(unsigned int index)
{
	return index < nr_vcpus ? &vcpus[index] : NULL;
}

static void kb_write(const struct kb_record *rec, int flush)
{
	pthread_mutex_lock(&out_lock);
	if (out) {
		fwrite(rec, sizeof(*rec), 1, out);
		if (flush)
			fflush(out);
	}
	pthread_mutex_unlock(&out_lock);
}

static void kb_block(unsigned int vcpu_index, void *data)
{
	struct kb_vcpu *v = kb_vcpu(vcpu_index);

	if (v && v->open)
		v->n[kb_kernel(data)] += kb_count(data);
}

static void kb_mark(unsigned int vcpu_index, void *data)
{
	struct kb_vcpu *v = kb_vcpu(vcpu_index);
	struct kb_record rec = { 0 };
	int kernel = kb_kernel(data);

	if (!v)
		return;
	switch (kb_op(data)) {
	case KB_OP_ARM:
		pthread_mutex_lock(&out_lock);
		if (armed++ == 0) {
			arm_serial++;
			regions = 0;
			lost = 0;
		}
		pthread_mutex_unlock(&out_lock);
		break;
	case KB_OP_DISARM:
		pthread_mutex_lock(&out_lock);
		if (armed > 0)
			armed--;
		rec.user = regions;
		rec.kernel = lost;
		rec.extra = arm_serial;
		pthread_mutex_unlock(&out_lock);
		rec.vcpu = vcpu_index;
		rec.type = KB_REC_DISARM;
		kb_write(&rec, 1);
		break;
	case KB_OP_START:
		if (!__atomic_load_n(&armed, __ATOMIC_RELAXED))
			break;
		if (v->open)
			__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
		v->open = 1;
		v->n[0] = 0;
		v->n[1] = 0;
		/* this block was added before the mark ran: only what follows it counts */
		v->n[kernel] += kb_count(data);
		break;
	case KB_OP_STOP:
		if (!v->open) {
			if (__atomic_load_n(&armed, __ATOMIC_RELAXED))
				__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
			break;
		}
		/* the whole block was added: take back the mark and what follows it */
		v->n[kernel] -= kb_count(data) + 1;
		v->open = 0;
		rec.user = v->n[0];
		rec.kernel = v->n[1];
		rec.vcpu = vcpu_index;
		rec.type = KB_REC_REGION;
		__atomic_add_fetch(&regions, 1, __ATOMIC_RELAXED);
		kb_write(&rec, 0);
		break;
	default:
		break;
	}
}

/* The operation of a kbench mark, or 0 for any other instruction. */
static unsigned int kb_mark_op(const struct qemu_plugin_insn *insn)
{
	const unsigned char *b;
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != KB_MARK_LEN)
		return 0;
	b = qemu_plugin_insn_data(insn);
	if (!b || b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80)
		return 0;
	disp = (uint32_t)b[3] | (uint32_t)b[4] << 8 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 24;
	if ((disp & 0xffffff00u) != KB_MARK_MAGIC)
		return 0;
	disp &= 0xffu;
	return disp >= KB_OP_ARM && disp <= KB_OP_STOP ? disp : 0;
}

static void kb_translate(kb_plugin_id id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	int kernel = (qemu_plugin_tb_vaddr(tb) >> 63) != 0;

	(void)id;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, kb_block, KB_CB_NO_REGS, kb_pack(n, 0, kernel));
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int op = kb_mark_op(insn);

		if (op)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, kb_mark, KB_CB_NO_REGS,
							       kb_pack(n - i - 1, op, kernel));
	}
}

static void kb_exit(kb_plugin_id id, void *data)
{
	(void)id;
	(void)data;
	pthread_mutex_lock(&out_lock);
	if (out) {
		fclose(out);
		out = NULL;
	}
	pthread_mutex_unlock(&out_lock);
}

KB_EXPORT int qemu_plugin_install(kb_plugin_id id, const struct kb_qemu_info *info, int argc, char **argv)
{
	const char *path = NULL;
	char message[512];
	int i, max;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else {
			snprintf(message, sizeof(message), "kbench-icount: unknown argument '%s' (takes out=FILE)\n",
				 argv[i]);
			qemu_plugin_outs(message);
			return -1;
		}
	}
	if (!path) {
		qemu_plugin_outs("kbench-icount: no output file (out=FILE)\n");
		return -1;
	}
	out = fopen(path, "ab");
	if (!out) {
		snprintf(message, sizeof(message), "kbench-icount: cannot open %s: %s\n", path, strerror(errno));
		qemu_plugin_outs(message);
		return -1;
	}
	max = qemu_plugin_n_max_vcpus();
	nr_vcpus = max > 0 ? (unsigned int)max : 1;
	vcpus = calloc(nr_vcpus, sizeof(*vcpus));
	if (!vcpus) {
		fclose(out);
		out = NULL;
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, kb_translate);
	qemu_plugin_register_atexit_cb(id, kb_exit, NULL);
	return 0;
}
