/* bench/tree-sweep.c — one sweep of a Btrfs subvolume's tree with
 * BTRFS_IOC_TREE_SEARCH_V2 over a range of inode numbers, all item types,
 * N threads each taking a slice of the range; prints the time, the items
 * and bytes copied, and the count of each item type sdu uses.
 * Build: cc -O2 -o tree-sweep bench/tree-sweep.c -lpthread
 * Run (root): tree-sweep DIR FIRST_INO LAST_INO [THREADS [BUFSIZE]]
 * Env MIN_TRANSID=N: the search's lowest transaction; the kernel skips
 * every tree block older than N unread (btrfs_search_forward), so a
 * snapshot searched above the generation of an older snapshot of the same
 * origin returns only the leaves written since. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <time.h>
#include <pthread.h>
static size_t BUF = 1<<20;
struct arg { int fd; uint64_t lo, hi; uint64_t items, bytes, calls, types[256]; };
static void *run(void *p) {
  struct arg *a = p;
  struct btrfs_ioctl_search_args_v2 *s = malloc(sizeof(*s) + BUF);
  memset(s, 0, sizeof(*s));
  s->key.tree_id = 0;
  s->key.min_objectid = a->lo; s->key.max_objectid = a->hi;
  s->key.min_type = 0; s->key.max_type = 255;
  s->key.min_offset = 0; s->key.max_offset = (uint64_t)-1;
  s->key.min_transid = getenv("MIN_TRANSID") ? strtoull(getenv("MIN_TRANSID"), NULL, 10) : 0; s->key.max_transid = (uint64_t)-1;
  for (;;) {
    s->key.nr_items = (uint32_t)-1; s->buf_size = BUF;
    if (ioctl(a->fd, BTRFS_IOC_TREE_SEARCH_V2, s) < 0) { perror("search"); exit(1); }
    a->calls++;
    uint32_t n = s->key.nr_items; if (!n) break;
    char *b = (char*)s->buf; size_t off = 0;
    struct btrfs_ioctl_search_header *h = NULL;
    for (uint32_t i = 0; i < n; i++) {
      h = (void*)(b + off); off += sizeof(*h) + h->len;
      a->items++; a->bytes += h->len; a->types[h->type]++;
    }
    s->key.min_objectid = h->objectid; s->key.min_type = h->type; s->key.min_offset = h->offset;
    if (s->key.min_offset < (uint64_t)-1) s->key.min_offset++;
    else { s->key.min_offset = 0; if (s->key.min_type < 255) s->key.min_type++; else { s->key.min_type = 0; if (s->key.min_objectid == a->hi) break; s->key.min_objectid++; } }
  }
  return NULL;
}
int main(int argc, char **argv) {
  int fd = open(argv[1], O_RDONLY|O_DIRECTORY);
  uint64_t lo = strtoull(argv[2],0,0), hi = strtoull(argv[3],0,0);
  int nt = argc > 4 ? atoi(argv[4]) : 1;
  if (argc > 5) BUF = strtoull(argv[5],0,0);
  struct arg a[16]; pthread_t t[16];
  struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < nt; i++) { memset(&a[i],0,sizeof a[i]); a[i].fd = fd; a[i].lo = lo + (hi-lo+1)/nt*i; a[i].hi = i==nt-1? hi : lo + (hi-lo+1)/nt*(i+1)-1; pthread_create(&t[i],0,run,&a[i]); }
  uint64_t items=0, bytes=0, calls=0, types[256]={0};
  for (int i = 0; i < nt; i++) { pthread_join(t[i],0); items+=a[i].items; bytes+=a[i].bytes; calls+=a[i].calls; for(int k=0;k<256;k++) types[k]+=a[i].types[k]; }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "%.1f ms items %lu bytes %lu calls %lu | inode %lu iref %lu xattr %lu ditem %lu dindex %lu extent %lu\n",
    (t1.tv_sec-t0.tv_sec)*1e3+(t1.tv_nsec-t0.tv_nsec)/1e6, items, bytes, calls, types[1], types[12], types[24], types[84], types[96], types[108]);
}
