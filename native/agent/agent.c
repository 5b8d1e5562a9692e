/*
 * kbench-agent: the guest side of kbench's VM target.
 *
 * Started by the initramfs' /init once the virtio modules are loaded. It opens
 * the virtio-serial port named "kbench.0" (found through /sys/class/virtio-ports)
 * and serves requests from the host, one at a time, until told to power off.
 *
 * Wire format (both directions; see src/kbench/targets/vm/protocol.py):
 *   frame  = u32 body_length (LE) + body
 *   body   = u8 kind + field*
 *   field  = u8 tag + u32 length (LE) + bytes
 * Integers carried in fields are i64 little-endian (8 bytes).
 *
 * An exec may name a file to follow (T_FOLLOW): while the command runs, what is
 * appended to it is sent to the host as K_OUTPUT frames, every FOLLOW_PERIOD_MS
 * and once more after the command ended, before the exec's K_RESULT. kbench
 * follows a run's spill (or kbench.ko's samples_live) this way, so that the
 * samples reach the host while they are taken.
 *
 * Statically linked; no dependency beyond libc.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AGENT_VERSION "1"
#define MAX_FRAME (1u << 30) /* 1 GiB */
#define FOLLOW_PERIOD_MS 250
#define FOLLOW_CHUNK (1u << 20)       /* bytes per K_OUTPUT frame */
#define FOLLOW_ROUND_MAX (16u << 20)  /* bytes per periodic read (the rest: next time) */

/* message kinds */
enum {
    K_HELLO = 0x01,
    K_EXEC = 0x10,
    K_READ_FILE = 0x11,
    K_WRITE_FILE = 0x12,
    K_POWEROFF = 0x13,
    K_PING = 0x14,
    K_SIGNAL = 0x15, /* during an exec: signal its process group; never answered */
    K_RESULT = 0x20,
    K_OUTPUT = 0x21, /* during an exec with T_FOLLOW: new bytes of the followed file */
};

/* field tags */
enum {
    T_ARG = 1,
    T_STDIN = 2,
    T_TIMEOUT_MS = 3,
    T_UID = 4,
    T_GID = 5,
    T_CWD = 6,
    T_ENV = 7,
    T_PATH = 8,
    T_DATA = 9,
    T_MODE = 10,
    T_RC = 20,
    T_STDOUT = 21,
    T_STDERR = 22,
    T_TIMED_OUT = 23,
    T_ERROR = 24,
    T_SIGNAL = 25,
    T_FOLLOW = 26,
    T_VERSION = 30,
    T_RELEASE = 31,
    T_UPTIME_MS = 32,
};

struct buf {
    unsigned char *p;
    size_t len, cap;
};

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kbench-agent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p)
        die("out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
}

static void buf_put(struct buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = v & 0xff;
    p[1] = (v >> 8) & 0xff;
    p[2] = (v >> 16) & 0xff;
    p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void field(struct buf *b, uint8_t tag, const void *data, size_t n)
{
    unsigned char hdr[5];
    hdr[0] = tag;
    put_u32(hdr + 1, (uint32_t)n);
    buf_put(b, hdr, 5);
    if (n)
        buf_put(b, data, n);
}

static void field_str(struct buf *b, uint8_t tag, const char *s)
{
    field(b, tag, s, strlen(s));
}

static void field_i64(struct buf *b, uint8_t tag, int64_t v)
{
    unsigned char p[8];
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++)
        p[i] = (u >> (8 * i)) & 0xff;
    field(b, tag, p, 8);
}

static int64_t as_i64(const unsigned char *p, uint32_t n)
{
    uint64_t u = 0;
    for (uint32_t i = 0; i < n && i < 8; i++)
        u |= (uint64_t)p[i] << (8 * i);
    return (int64_t)u;
}

/* ---- port I/O --------------------------------------------------------- */

static int port_fd = -1;

static void write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                poll(&pfd, 1, 100);
                continue;
            }
            die("write to host port: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads exactly n bytes; a disconnected host (read() == 0) is waited out. */
static void read_exact(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            die("read from host port: %s", strerror(errno));
        }
        if (r == 0) { /* host side not connected: wait for it */
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        p += r;
        n -= (size_t)r;
    }
}

static void send_msg(uint8_t kind, struct buf *fields)
{
    unsigned char hdr[5];
    size_t body = 1 + (fields ? fields->len : 0);
    put_u32(hdr, (uint32_t)body);
    hdr[4] = kind;
    write_all(port_fd, hdr, 5);
    if (fields && fields->len)
        write_all(port_fd, fields->p, fields->len);
}

__attribute__((format(printf, 1, 2))) static void send_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct buf r = {0};
    field_str(&r, T_ERROR, msg);
    send_msg(K_RESULT, &r);
    free(r.p);
}

/* ---- request parsing -------------------------------------------------- */

struct fieldref {
    uint8_t tag;
    uint32_t len;
    unsigned char *data;
};

struct request {
    uint8_t kind;
    struct fieldref *f;
    size_t nf;
};

static int parse_request(unsigned char *body, size_t n, struct request *rq)
{
    if (n < 1)
        return -1;
    rq->kind = body[0];
    rq->nf = 0;
    rq->f = NULL;
    size_t cap = 0, off = 1;
    while (off < n) {
        if (n - off < 5)
            return -1;
        uint32_t len = get_u32(body + off + 1);
        if (n - off - 5 < len)
            return -1;
        if (rq->nf == cap) {
            cap = cap ? cap * 2 : 16;
            rq->f = realloc(rq->f, cap * sizeof *rq->f);
            if (!rq->f)
                die("out of memory");
        }
        rq->f[rq->nf].tag = body[off];
        rq->f[rq->nf].len = len;
        rq->f[rq->nf].data = body + off + 5;
        rq->nf++;
        off += 5 + len;
    }
    return 0;
}

static struct fieldref *find_field(struct request *rq, uint8_t tag)
{
    for (size_t i = 0; i < rq->nf; i++)
        if (rq->f[i].tag == tag)
            return &rq->f[i];
    return NULL;
}

/* NUL-terminated copy of a field (caller frees). */
static char *field_cstr(const struct fieldref *f)
{
    char *s = malloc(f->len + 1);
    if (!s)
        die("out of memory");
    memcpy(s, f->data, f->len);
    s[f->len] = 0;
    return s;
}

/* ---- exec ------------------------------------------------------------- */

/* A file followed while a command runs (T_FOLLOW). */
struct follow {
    char *path;
    int fd;
    off_t off;
    unsigned char *chunk;
};

/* Send what was appended to the followed file since the last call, at most
 * `limit` bytes (0: all). The file may not exist yet: then nothing. */
static void follow_read(struct follow *f, size_t limit)
{
    size_t sent = 0;

    if (!f->path)
        return;
    if (f->fd < 0) {
        f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        if (f->fd < 0)
            return;
    }
    if (!f->chunk && !(f->chunk = malloc(FOLLOW_CHUNK)))
        return;
    while (!limit || sent < limit) {
        ssize_t r = pread(f->fd, f->chunk, FOLLOW_CHUNK, f->off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        struct buf b = {0};
        field(&b, T_DATA, f->chunk, (size_t)r);
        send_msg(K_OUTPUT, &b);
        free(b.p);
        f->off += r;
        sent += (size_t)r;
    }
}

static void follow_end(struct follow *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->chunk);
    free(f->path);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/*
 * A frame from the host while a command runs: only K_SIGNAL is expected (the host's
 * Ctrl-C or SIGTERM); its signal goes to the command's process group.
 */
static void exec_host_frame(pid_t pid)
{
    unsigned char hdr[4];
    read_exact(port_fd, hdr, 4);
    uint32_t n = get_u32(hdr);
    if (n == 0 || n > MAX_FRAME)
        die("bad frame length %u from host", n);
    unsigned char *body = malloc(n);
    if (!body)
        die("out of memory for a %u-byte frame", n);
    read_exact(port_fd, body, n);
    struct request rq = {0};
    if (parse_request(body, n, &rq) == 0 && rq.kind == K_SIGNAL) {
        struct fieldref *fs = find_field(&rq, T_SIGNAL);
        int64_t sig = fs ? as_i64(fs->data, fs->len) : SIGINT;
        /* Before the child's setsid() its group does not exist yet: signal the child. */
        if (sig > 0 && sig < NSIG && kill(-pid, (int)sig) < 0)
            kill(pid, (int)sig);
    } else {
        fprintf(stderr, "kbench-agent: ignored a request sent while a command runs\n");
    }
    free(rq.f);
    free(body);
}

static void do_exec(struct request *rq)
{
    size_t argc = 0, envc = 0;
    for (size_t i = 0; i < rq->nf; i++) {
        argc += rq->f[i].tag == T_ARG;
        envc += rq->f[i].tag == T_ENV;
    }
    if (argc == 0) {
        send_error("exec: empty argv");
        return;
    }
    char **argv = calloc(argc + 1, sizeof *argv);
    char **envp = calloc(envc + 4, sizeof *envp);
    size_t ai = 0, ei = 0;
    for (size_t i = 0; i < rq->nf; i++) {
        if (rq->f[i].tag == T_ARG)
            argv[ai++] = field_cstr(&rq->f[i]);
        else if (rq->f[i].tag == T_ENV)
            envp[ei++] = field_cstr(&rq->f[i]);
    }
    if (envc == 0) {
        envp[ei++] = strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin");
        envp[ei++] = strdup("HOME=/root");
        envp[ei++] = strdup("TERM=dumb");
    }
    struct fieldref *fin = find_field(rq, T_STDIN);
    struct fieldref *ft = find_field(rq, T_TIMEOUT_MS);
    struct fieldref *fu = find_field(rq, T_UID);
    struct fieldref *fg = find_field(rq, T_GID);
    struct fieldref *fc = find_field(rq, T_CWD);
    struct fieldref *ff = find_field(rq, T_FOLLOW);
    struct follow follow = {.path = ff ? field_cstr(ff) : NULL, .fd = -1};
    int64_t timeout_ms = ft ? as_i64(ft->data, ft->len) : -1;
    int64_t uid = fu ? as_i64(fu->data, fu->len) : -1;
    int64_t gid = fg ? as_i64(fg->data, fg->len) : -1;
    char *cwd = fc ? field_cstr(fc) : strdup("/");

    int pin[2], pout[2], perr[2];
    if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC)) {
        send_error("exec: pipe: %s", strerror(errno));
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        send_error("exec: fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        setsid();
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        dup2(perr[1], 2);
        signal(SIGPIPE, SIG_DFL);
        if (gid >= 0 || uid >= 0) {
            gid_t g = (gid_t)(gid >= 0 ? gid : uid);
            if (setgroups(0, NULL) || setgid(g)) {
                dprintf(2, "kbench-agent: setgid(%u): %s\n", (unsigned)g, strerror(errno));
                _exit(126);
            }
        }
        if (uid >= 0 && setuid((uid_t)uid)) {
            dprintf(2, "kbench-agent: setuid(%u): %s\n", (unsigned)uid, strerror(errno));
            _exit(126);
        }
        if (chdir(cwd)) {
            dprintf(2, "kbench-agent: chdir(%s): %s\n", cwd, strerror(errno));
            _exit(126);
        }
        environ = envp;
        execvp(argv[0], argv);
        dprintf(2, "kbench-agent: exec %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    /* fewer, larger reads for big outputs (raw samples): 1 MiB pipes */
    fcntl(pout[0], F_SETPIPE_SZ, 1 << 20);
    fcntl(pin[1], F_SETPIPE_SZ, 1 << 20);
    set_nonblock(pin[1]);
    set_nonblock(pout[0]);
    set_nonblock(perr[0]);

    struct buf out = {0}, err = {0};
    size_t in_off = 0, in_len = fin ? fin->len : 0;
    int in_fd = pin[1];
    if (in_len == 0) {
        close(in_fd);
        in_fd = -1;
    }
    int out_fd = pout[0], err_fd = perr[0];
    int status = 0, exited = 0, timed_out = 0;
    int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    int64_t drain_deadline = -1;
    int64_t next_follow = now_ms() + FOLLOW_PERIOD_MS;
    int watch_host = 1; /* the host may send K_SIGNAL while the command runs */

    while (!exited || out_fd >= 0 || err_fd >= 0) {
        if (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                exited = 1;
                /* a leftover grandchild may hold the pipes: give it a moment */
                drain_deadline = now_ms() + 2000;
                if (in_fd >= 0) {
                    close(in_fd);
                    in_fd = -1;
                }
            }
        }
        int64_t now = now_ms();
        if (!timed_out && deadline >= 0 && now >= deadline) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        if (exited && drain_deadline >= 0 && now >= drain_deadline)
            break;
        if (!exited && now >= next_follow) {
            follow_read(&follow, FOLLOW_ROUND_MAX);
            next_follow = now_ms() + FOLLOW_PERIOD_MS;
        }
        struct pollfd pfd[4];
        int n = 0;
        if (watch_host && !exited)
            pfd[n++] = (struct pollfd){.fd = port_fd, .events = POLLIN};
        if (in_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = in_fd, .events = POLLOUT};
        if (out_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
        if (err_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = err_fd, .events = POLLIN};
        int wait = 50; /* also the period at which the child is reaped */
        if (n)
            poll(pfd, n, wait);
        else
            poll(NULL, 0, 10);
        for (int i = 0; i < n; i++) {
            if (!pfd[i].revents)
                continue;
            int fd = pfd[i].fd;
            if (fd == port_fd) {
                if (pfd[i].revents & POLLIN)
                    exec_host_frame(pid);
                else /* host side not connected: stop watching for this command */
                    watch_host = 0;
                continue;
            }
            if (fd == in_fd) {
                ssize_t w = write(fd, fin->data + in_off, in_len - in_off);
                if (w > 0)
                    in_off += (size_t)w;
                if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len ||
                    (pfd[i].revents & (POLLERR | POLLHUP))) {
                    close(in_fd);
                    in_fd = -1;
                }
                continue;
            }
            struct buf *b = fd == out_fd ? &out : &err;
            for (;;) {
                buf_reserve(b, 1 << 20);
                ssize_t r = read(fd, b->p + b->len, b->cap - b->len);
                if (r > 0) {
                    b->len += (size_t)r;
                    continue;
                }
                if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                    close(fd);
                    if (fd == out_fd)
                        out_fd = -1;
                    else
                        err_fd = -1;
                }
                break;
            }
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0)
        close(err_fd);
    if (!exited) { /* pipes closed early by a daemon-like child: wait for it */
        while (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                break;
            if (!timed_out && deadline >= 0 && now_ms() >= deadline) {
                timed_out = 1;
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
            }
            poll(NULL, 0, 10);
        }
    }
    int64_t rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    follow_read(&follow, 0); /* the rest, before the result */
    follow_end(&follow);

    struct buf r = {0};
    field_i64(&r, T_RC, rc);
    field_i64(&r, T_TIMED_OUT, timed_out);
    field(&r, T_STDOUT, out.p, out.len);
    field(&r, T_STDERR, err.p, err.len);
    send_msg(K_RESULT, &r);
    free(r.p);
    free(out.p);
    free(err.p);
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    for (size_t i = 0; envp[i]; i++)
        free(envp[i]);
    free(argv);
    free(envp);
    free(cwd);
}

/* ---- files ------------------------------------------------------------ */

static void do_read_file(struct request *rq)
{
    struct fieldref *fp = find_field(rq, T_PATH);
    if (!fp) {
        send_error("read_file: no path");
        return;
    }
    char *path = field_cstr(fp);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        send_error("read_file %s: %s", path, strerror(errno));
        free(path);
        return;
    }
    struct buf b = {0};
    for (;;) {
        buf_reserve(&b, 1 << 20);
        ssize_t r = read(fd, b.p + b.len, b.cap - b.len);
        if (r > 0) {
            b.len += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            send_error("read_file %s: %s", path, strerror(errno));
            close(fd);
            free(b.p);
            free(path);
            return;
        }
        break;
    }
    close(fd);
    struct buf r = {0};
    field(&r, T_DATA, b.p, b.len);
    send_msg(K_RESULT, &r);
    free(r.p);
    free(b.p);
    free(path);
}

static void do_write_file(struct request *rq)
{
    struct fieldref *fp = find_field(rq, T_PATH);
    struct fieldref *fd_ = find_field(rq, T_DATA);
    struct fieldref *fm = find_field(rq, T_MODE);
    if (!fp) {
        send_error("write_file: no path");
        return;
    }
    char *path = field_cstr(fp);
    mode_t mode = fm ? (mode_t)as_i64(fm->data, fm->len) : 0644;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        send_error("write_file %s: %s", path, strerror(errno));
        free(path);
        return;
    }
    if (fm)
        fchmod(fd, mode);
    size_t off = 0, n = fd_ ? fd_->len : 0;
    while (off < n) { /* one write() for short data: sysfs attributes want that */
        ssize_t w = write(fd, fd_->data + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            send_error("write_file %s: %s", path, w < 0 ? strerror(errno) : "short write");
            close(fd);
            free(path);
            return;
        }
        off += (size_t)w;
    }
    if (close(fd)) {
        send_error("write_file %s: close: %s", path, strerror(errno));
        free(path);
        return;
    }
    struct buf r = {0};
    field_i64(&r, T_RC, 0);
    send_msg(K_RESULT, &r);
    free(r.p);
    free(path);
}

/* ---- port discovery --------------------------------------------------- */

static int open_port(const char *name, int wait_s)
{
    int64_t deadline = now_ms() + (int64_t)wait_s * 1000;
    for (;;) {
        DIR *d = opendir("/sys/class/virtio-ports");
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                char p[512], got[256] = {0};
                snprintf(p, sizeof p, "/sys/class/virtio-ports/%s/name", e->d_name);
                int fd = open(p, O_RDONLY);
                if (fd < 0)
                    continue;
                ssize_t r = read(fd, got, sizeof got - 1);
                close(fd);
                if (r > 0 && got[r - 1] == '\n')
                    got[r - 1] = 0;
                if (r > 0 && strcmp(got, name) == 0) {
                    snprintf(p, sizeof p, "/dev/%s", e->d_name);
                    int pfd = open(p, O_RDWR | O_CLOEXEC);
                    if (pfd >= 0) {
                        closedir(d);
                        return pfd;
                    }
                }
            }
            closedir(d);
        }
        if (now_ms() >= deadline)
            return -1;
        poll(NULL, 0, 20);
    }
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "kbench.0";
    signal(SIGPIPE, SIG_IGN);
    port_fd = open_port(name, 30);
    if (port_fd < 0)
        die("no virtio-serial port named %s in /sys/class/virtio-ports "
            "(is virtio_console loaded and qemu started with -device virtserialport,name=%s?)",
            name, name);

    struct utsname u;
    uname(&u);
    struct timespec up;
    clock_gettime(CLOCK_BOOTTIME, &up);
    struct buf h = {0};
    field_str(&h, T_VERSION, AGENT_VERSION);
    field_str(&h, T_RELEASE, u.release);
    field_i64(&h, T_UPTIME_MS, (int64_t)up.tv_sec * 1000 + up.tv_nsec / 1000000);
    send_msg(K_HELLO, &h);
    free(h.p);
    fprintf(stderr, "kbench-agent: ready on port %s\n", name);

    for (;;) {
        unsigned char hdr[4];
        read_exact(port_fd, hdr, 4);
        uint32_t n = get_u32(hdr);
        if (n == 0 || n > MAX_FRAME)
            die("bad frame length %u from host", n);
        unsigned char *body = malloc(n);
        if (!body)
            die("out of memory for a %u-byte frame", n);
        read_exact(port_fd, body, n);
        struct request rq;
        if (parse_request(body, n, &rq)) {
            send_error("malformed request");
        } else {
            switch (rq.kind) {
            case K_EXEC:
                do_exec(&rq);
                break;
            case K_READ_FILE:
                do_read_file(&rq);
                break;
            case K_WRITE_FILE:
                do_write_file(&rq);
                break;
            case K_SIGNAL: /* its command has already ended */
                break;
            case K_PING: {
                struct buf r = {0};
                field_i64(&r, T_RC, 0);
                send_msg(K_RESULT, &r);
                free(r.p);
                break;
            }
            case K_POWEROFF: {
                struct buf r = {0};
                field_i64(&r, T_RC, 0);
                send_msg(K_RESULT, &r);
                free(r.p);
                sync();
                reboot(RB_POWER_OFF);
                die("reboot(RB_POWER_OFF): %s", strerror(errno));
            }
            default:
                send_error("unknown request kind %u", rq.kind);
            }
        }
        free(rq.f);
        free(body);
    }
}
