#!/usr/bin/env python3
"""Deterministic corpus generators for scripts/bench.

  gen_tree.py source DIR [--entries N] [--seed S]
      A Linux-source-like tree: ~6% directories (depth <= 8), files whose sizes
      follow a log-normal law close to a kernel tree's (median ~6 KiB, mostly
      1-40 KiB, a tail up to a few MiB, ~1% empty), plus a few hardlinks and
      relative symlinks. Same seed, same tree (names, sizes, bytes).

  gen_tree.py empty DIR --entries N
      N empty files in one directory (os.open/os.close in a loop); prints the
      creation time.

Both print one line of JSON with what was made.
"""
import argparse
import json
import math
import os
import random
import sys
import time

EXTS = [(".c", 46), (".h", 30), (".S", 2), (".txt", 3), (".rst", 5),
        (".yaml", 3), (".py", 1), (".sh", 1), ("", 9)]
SPECIAL = ["Makefile", "Kconfig", "README", "MAINTAINERS", "Kbuild"]
WORDS = ("arch drivers fs net kernel mm include lib sound tools crypto block "
         "security virt usr ipc init scripts samples firmware io_uring rust "
         "gpu drm amd intel nvidia net ethernet wireless usb host gadget core "
         "scsi mmc spi i2c iio input hid media video pci acpi power clk irq "
         "dma tty serial staging misc bluetooth ata nvme md dm bpf sched trace "
         "xfs btrfs ext4 nfs smb cifs ceph f2fs overlayfs fuse proc sysfs "
         "tests selftests docs arm64 x86 riscv powerpc s390 mips boot mach "
         "platform common include uapi asm generic linux soc codecs qcom").split()


def gen_source(root, entries, seed):
    rng = random.Random(seed)
    n_dirs = max(1, round(entries * 0.06))
    n_hard = max(1, entries // 1000)
    n_sym = max(1, entries // 160)
    n_files = entries - n_dirs - n_hard - n_sym

    # Directory tree: each new directory picks a parent, preferring shallow
    # ones (weight 0.6^depth), never deeper than 8.
    dirs = [("", 0)]
    names_in = {0: set()}
    for i in range(1, n_dirs):
        while True:
            p = rng.randrange(len(dirs))
            pdepth = dirs[p][1]
            if pdepth < 8 and rng.random() < 0.6 ** pdepth:
                break
        base = rng.choice(WORDS)
        name = base if base not in names_in[p] else f"{base}{i}"
        names_in[p].add(name)
        path = os.path.join(dirs[p][0], name)
        dirs.append((path, pdepth + 1))
        names_in[len(dirs) - 1] = set()

    # Files per directory: heavy-tailed weights (a few huge directories).
    weights = [rng.paretovariate(1.3) for _ in dirs]
    blob = rng.randbytes(8 << 20)
    ext_names = [e for e, _ in EXTS]
    ext_w = [w for _, w in EXTS]

    os.makedirs(root, exist_ok=True)
    for path, _ in dirs[1:]:
        os.mkdir(os.path.join(root, path))

    files = []
    total = 0
    targets = rng.choices(range(len(dirs)), weights=weights, k=n_files)
    for i, d in enumerate(targets):
        if rng.random() < 0.02:
            name = f"{rng.choice(SPECIAL)}.{i}"
        else:
            name = f"{rng.choice(WORDS)}_{i}{rng.choices(ext_names, ext_w)[0]}"
        r = rng.random()
        if r < 0.01:
            size = 0
        elif r < 0.997:
            size = int(math.exp(rng.gauss(math.log(6000), 1.15)))
            size = min(size, 1 << 20)
        else:
            size = int(math.exp(rng.uniform(math.log(64 << 10), math.log(4 << 20))))
        rel = os.path.join(dirs[d][0], name)
        fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        off = rng.randrange(0, 4 << 20)
        left = size
        while left > 0:
            chunk = min(left, len(blob) - off)
            os.write(fd, blob[off:off + chunk])
            left -= chunk
            off = 0
        os.close(fd)
        files.append(rel)
        total += size

    for i in range(n_hard):
        src = rng.choice(files)
        d = dirs[rng.randrange(len(dirs))][0]
        os.link(os.path.join(root, src), os.path.join(root, d, f"hardlink_{i}"))
    for i in range(n_sym):
        src = rng.choice(files)
        d = os.path.dirname(src)
        os.symlink(os.path.basename(src), os.path.join(root, d, f"symlink_{i}"))

    return {"dirs": n_dirs, "files": n_files, "hardlinks": n_hard,
            "symlinks": n_sym, "entries": n_dirs + n_files + n_hard + n_sym,
            "apparent_bytes": total, "max_depth": max(dp for _, dp in dirs)}


def gen_empty(root, entries):
    os.makedirs(root, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    t0 = time.monotonic()
    dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for i in range(entries):
        os.close(os.open(f"f{i:07d}", flags, 0o644, dir_fd=dfd))
    os.fsync(dfd)
    os.close(dfd)
    return {"files": entries, "entries": entries + 1,
            "create_seconds": round(time.monotonic() - t0, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["source", "empty"])
    ap.add_argument("dir")
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20240611)
    a = ap.parse_args()
    t0 = time.monotonic()
    info = gen_source(a.dir, a.entries, a.seed) if a.kind == "source" else gen_empty(a.dir, a.entries)
    info["seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(info))


if __name__ == "__main__":
    sys.exit(main())
