/* cwalk: minimal C walker, the "floor" for sdu's walk.
 *
 * Build: cc -O2 -pthread -o cwalk bench/cwalk.c
 * Usage: cwalk [--fiemap] [-j N] DIR
 *
 * Per directory: openat(parentfd, name, O_RDONLY|O_DIRECTORY) + getdents64.
 * Per entry: statx(dirfd, name, AT_SYMLINK_NOFOLLOW|AT_STATX_DONT_SYNC,
 *                  TYPE|MODE|NLINK|INO|SIZE|BLOCKS).
 * Sums stx_blocks*512 over every entry (root included, like du -s), counting an
 * inode with nlink>1 (non-directory) once per (dev,ino).
 * --fiemap: additionally opens every regular file with blocks>0 and runs
 * FS_IOC_FIEMAP with a fixed 256-extent buffer until FIEMAP_EXTENT_LAST.
 * -j N (N>1): N threads sharing a LIFO of directory paths (each directory is
 * opened by full path, entries are stat-ed relative to its fd).
 * Prints: "<bytes> bytes <entries> entries [<extents> extents <shared> shared_bytes]".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

#define STX_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_INO | STATX_SIZE | STATX_BLOCKS)
#define NEXTENTS 256
#define DENTBUF (64 * 1024)

static int opt_fiemap;
static int noatime_ok = 1;

/* ---- hardlink set: open addressing on (dev, ino), guarded by a mutex ---- */
struct key { uint64_t dev, ino; };
static struct key *hl_tab;
static size_t hl_cap, hl_len;
static pthread_mutex_t hl_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x;
}
static int hl_insert_nolock(uint64_t dev, uint64_t ino) {
    size_t m = hl_cap - 1, i = mix(dev * 0x9e3779b97f4a7c15ULL ^ ino) & m;
    while (hl_tab[i].ino || hl_tab[i].dev) {
        if (hl_tab[i].dev == dev && hl_tab[i].ino == ino) return 0;
        i = (i + 1) & m;
    }
    hl_tab[i].dev = dev; hl_tab[i].ino = ino; hl_len++;
    return 1;
}
/* returns 1 if first time seen */
static int hl_insert(uint64_t dev, uint64_t ino) {
    pthread_mutex_lock(&hl_mu);
    if ((hl_len + 1) * 2 > hl_cap) {
        size_t oc = hl_cap; struct key *ot = hl_tab;
        hl_cap = oc ? oc * 2 : 1024;
        hl_tab = calloc(hl_cap, sizeof *hl_tab);
        if (!hl_tab) { perror("calloc"); exit(2); }
        hl_len = 0;
        for (size_t i = 0; i < oc; i++)
            if (ot[i].ino || ot[i].dev) hl_insert_nolock(ot[i].dev, ot[i].ino);
        free(ot);
    }
    int r = hl_insert_nolock(dev, ino);
    pthread_mutex_unlock(&hl_mu);
    return r;
}

/* ---- per-thread state ---- */
struct acc {
    uint64_t bytes, entries, extents, shared, errors;
    char dent[DENTBUF];
    struct fiemap *fm;
};

static void acc_init(struct acc *a) {
    memset(a, 0, offsetof(struct acc, dent));
    a->fm = calloc(1, sizeof(struct fiemap) + NEXTENTS * sizeof(struct fiemap_extent));
    if (!a->fm) { perror("calloc"); exit(2); }
}

static void do_fiemap(struct acc *a, int dirfd, const char *name) {
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC;
    int fd = -1;
    if (__atomic_load_n(&noatime_ok, __ATOMIC_RELAXED)) {
        fd = openat(dirfd, name, flags | O_NOATIME);
        if (fd < 0 && errno == EPERM) __atomic_store_n(&noatime_ok, 0, __ATOMIC_RELAXED);
    }
    if (fd < 0) fd = openat(dirfd, name, flags);
    if (fd < 0) { a->errors++; return; }
    struct fiemap *fm = a->fm;
    uint64_t start = 0;
    for (;;) {
        memset(fm, 0, sizeof *fm);
        fm->fm_start = start;
        fm->fm_length = FIEMAP_MAX_OFFSET - start;
        fm->fm_extent_count = NEXTENTS;
        if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) { a->errors++; break; }
        uint32_t n = fm->fm_mapped_extents;
        if (n == 0) break;
        a->extents += n;
        for (uint32_t i = 0; i < n; i++)
            if (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_SHARED)
                a->shared += fm->fm_extents[i].fe_length;
        struct fiemap_extent *last = &fm->fm_extents[n - 1];
        if (last->fe_flags & FIEMAP_EXTENT_LAST) break;
        start = last->fe_logical + last->fe_length;
    }
    close(fd);
}

/* Account one entry; returns 1 if it is a directory. */
static int account(struct acc *a, int dirfd, const char *name) {
    struct statx st;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STX_MASK, &st) < 0) {
        a->errors++;
        return 0;
    }
    a->entries++;
    int isdir = S_ISDIR(st.stx_mode);
    if (!isdir && st.stx_nlink > 1) {
        uint64_t dev = ((uint64_t)st.stx_dev_major << 32) | st.stx_dev_minor;
        if (!hl_insert(dev, st.stx_ino)) return 0;
    }
    a->bytes += st.stx_blocks * 512;
    if (opt_fiemap && S_ISREG(st.stx_mode) && st.stx_blocks > 0) do_fiemap(a, dirfd, name);
    return isdir;
}

static int is_dot(const char *n) {
    return n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0));
}

/* ---- single-threaded recursive walk: openat relative to the parent ---- */
static void walk_rec(struct acc *a, int fd) {
    char *buf = malloc(DENTBUF);
    if (!buf) { perror("malloc"); exit(2); }
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, DENTBUF);
        if (n <= 0) { if (n < 0) a->errors++; break; }
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (void *)(buf + off);
            off += d->d_reclen;
            if (is_dot(d->d_name)) continue;
            if (account(a, fd, d->d_name)) {
                int cfd = openat(fd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0) { a->errors++; continue; }
                walk_rec(a, cfd);
                close(cfd);
            }
        }
    }
    free(buf);
}

/* ---- parallel mode: shared LIFO of directory paths ---- */
static char **q; static size_t qlen, qcap; static int busy;
static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;

static void push(char *p) {
    pthread_mutex_lock(&qmu);
    if (qlen == qcap) { qcap = qcap ? qcap * 2 : 1024; q = realloc(q, qcap * sizeof *q); }
    q[qlen++] = p;
    pthread_cond_signal(&qcv);
    pthread_mutex_unlock(&qmu);
}

static void *worker(void *arg) {
    struct acc *a = arg;
    for (;;) {
        pthread_mutex_lock(&qmu);
        while (qlen == 0 && busy > 0) pthread_cond_wait(&qcv, &qmu);
        if (qlen == 0) { pthread_cond_broadcast(&qcv); pthread_mutex_unlock(&qmu); return NULL; }
        char *path = q[--qlen];
        busy++;
        pthread_mutex_unlock(&qmu);

        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) a->errors++;
        else {
            size_t plen = strlen(path);
            for (;;) {
                long n = syscall(SYS_getdents64, fd, a->dent, DENTBUF);
                if (n <= 0) { if (n < 0) a->errors++; break; }
                for (long off = 0; off < n;) {
                    struct linux_dirent64 *d = (void *)(a->dent + off);
                    off += d->d_reclen;
                    if (is_dot(d->d_name)) continue;
                    if (account(a, fd, d->d_name)) {
                        size_t nl = strlen(d->d_name);
                        char *c = malloc(plen + nl + 2);
                        memcpy(c, path, plen); c[plen] = '/'; memcpy(c + plen + 1, d->d_name, nl + 1);
                        push(c);
                    }
                }
            }
            close(fd);
        }
        free(path);
        pthread_mutex_lock(&qmu);
        busy--;
        if (busy == 0 && qlen == 0) pthread_cond_broadcast(&qcv);
        pthread_mutex_unlock(&qmu);
    }
}

int main(int argc, char **argv) {
    int jobs = 1;
    const char *root = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fiemap")) opt_fiemap = 1;
        else if (!strcmp(argv[i], "-j") && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (!strncmp(argv[i], "-j", 2) && argv[i][2]) jobs = atoi(argv[i] + 2);
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "usage: cwalk [--fiemap] [-j N] DIR\n"); return 2;
        } else root = argv[i];
    }
    if (!root || jobs < 1) { fprintf(stderr, "usage: cwalk [--fiemap] [-j N] DIR\n"); return 2; }

    struct acc *accs = malloc(sizeof(struct acc) * (size_t)jobs);
    for (int i = 0; i < jobs; i++) acc_init(&accs[i]);

    int isdir = account(&accs[0], AT_FDCWD, root);
    if (accs[0].entries == 0) { perror(root); return 1; }
    if (isdir) {
        if (jobs == 1) {
            int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd < 0) { perror(root); return 1; }
            walk_rec(&accs[0], fd);
            close(fd);
        } else {
            push(strdup(root));
            pthread_t *t = malloc(sizeof(pthread_t) * (size_t)jobs);
            for (int i = 0; i < jobs; i++) pthread_create(&t[i], NULL, worker, &accs[i]);
            for (int i = 0; i < jobs; i++) pthread_join(t[i], NULL);
        }
    }
    struct acc tot = {0};
    for (int i = 0; i < jobs; i++) {
        tot.bytes += accs[i].bytes; tot.entries += accs[i].entries;
        tot.extents += accs[i].extents; tot.shared += accs[i].shared; tot.errors += accs[i].errors;
    }
    if (opt_fiemap)
        printf("%llu bytes %llu entries %llu extents %llu shared_bytes\n",
               (unsigned long long)tot.bytes, (unsigned long long)tot.entries,
               (unsigned long long)tot.extents, (unsigned long long)tot.shared);
    else
        printf("%llu bytes %llu entries\n", (unsigned long long)tot.bytes, (unsigned long long)tot.entries);
    if (tot.errors) fprintf(stderr, "cwalk: %llu errors\n", (unsigned long long)tot.errors);
    return tot.errors ? 1 : 0;
}
