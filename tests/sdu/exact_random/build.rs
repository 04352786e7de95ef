//! The random Btrfs tree of one seed: every operation drawn, done and
//! logged (the log is printed with a failure, so that a case can be read
//! and replayed by hand).

use std::fs::{self, File};
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::util::*;

pub const BLK: u64 = 4096;

/// xorshift64: the seed's stream of choices.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `num` times in `den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn pick_s(&mut self, v: &[String]) -> String {
        self.pick(v).clone()
    }

    pub fn pick<'v, T>(&mut self, v: &'v [T]) -> &'v T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// Whether `p` is `dir` or lies under it ("" is the mount).
pub fn under(p: &str, dir: &str) -> bool {
    dir.is_empty() || p == dir || p.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

pub fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Every directory and non-directory under `root`, by relative path, in
/// name order (snapshots included); not the empty directory that stands
/// for a nested subvolume in a snapshot (inode 2).
pub fn walk_tree(root: &Path) -> (Vec<String>, Vec<String>) {
    fn go(root: &Path, rel: String, dirs: &mut Vec<String>, files: &mut Vec<String>) {
        let md = fs::symlink_metadata(root.join(&rel)).unwrap();
        if !md.is_dir() {
            files.push(rel);
            return;
        }
        if md.ino() == 2 {
            return;
        }
        let mut names: Vec<String> = fs::read_dir(root.join(&rel))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        dirs.push(rel.clone());
        for n in names {
            go(root, join_rel(&rel, &n), dirs, files);
        }
    }
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    go(root, String::new(), &mut dirs, &mut files);
    (dirs, files)
}

/// The signature a cache directory tag starts with.
pub const CACHEDIR_SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";

/// A random tree under construction.
pub struct Build<'a> {
    pub t: Tree<'a>,
    pub rng: Rng,
    /// Writable subvolumes ("" the top-level one).
    pub subvols: Vec<String>,
    /// Read-only subvolumes.
    pub ro: Vec<String>,
    /// Every snapshot still there, read-only or not.
    pub snaps: Vec<String>,
    pub log: Vec<String>,
    /// Files rewritten in place (extents referenced in part).
    pub rewritten: Vec<String>,
    /// The directory a proc is mounted on during the scans, if drawn.
    pub kernfs: Option<String>,
    /// Whether some entry was made unreadable to `nobody`.
    pub unreadable: bool,
    pub has_tag: bool,
    pub compress: bool,
    /// R and M of `intermediate` (R -> N -> M, N deleted).
    pub chain: Option<(String, String)>,
    /// Hard links made: (the file, the new link).
    pub links: Vec<(String, String)>,
    /// What `lock` made unreadable.
    pub locked: Option<String>,
    /// Every snapshot made: (its subvolume, the snapshot).
    pub edges: Vec<(String, String)>,
    n: u32,
}

impl Build<'_> {
    pub fn new(root: &Path, seed: u64, compress: bool) -> Build<'_> {
        Build {
            t: Tree { root },
            rng: Rng::new(seed),
            subvols: vec![String::new()],
            ro: Vec::new(),
            snaps: Vec::new(),
            log: Vec::new(),
            rewritten: Vec::new(),
            kernfs: None,
            unreadable: false,
            has_tag: false,
            compress,
            chain: None,
            links: Vec::new(),
            locked: None,
            edges: Vec::new(),
            n: 0,
        }
    }

    fn name(&mut self, prefix: &str) -> String {
        self.n += 1;
        format!("{prefix}{}", self.n)
    }

    fn abs(&self, rel: &str) -> std::path::PathBuf {
        self.t.root.join(rel)
    }

    /// Every directory and non-directory, by a walk (snapshots included);
    /// not the empty directory that stands for a nested subvolume in a
    /// snapshot (inode 2).
    pub fn walk(&self) -> (Vec<String>, Vec<String>) {
        walk_tree(self.t.root)
    }

    /// The subvolume holding `rel` ("" the top-level one).
    pub fn subvolume_of(&self, rel: &str) -> String {
        let roots = self.subvols.iter().chain(&self.ro);
        roots
            .filter(|r| under(rel, r))
            .max_by_key(|r| r.len())
            .cloned()
            .unwrap_or_default()
    }

    /// The family (a number) of the subvolume holding `rel`: subvolumes
    /// joined by the snapshots made, a deleted one included.
    pub fn family(&self, rel: &str) -> usize {
        let sub = self.subvolume_of(rel);
        let mut names: Vec<&str> = vec![""];
        for (a, b) in &self.edges {
            for n in [a.as_str(), b.as_str()] {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let mut up: Vec<usize> = (0..names.len()).collect();
        fn find(up: &mut [usize], i: usize) -> usize {
            if up[i] == i {
                return i;
            }
            let r = find(up, up[i]);
            up[i] = r;
            r
        }
        let at = |n: &str| names.iter().position(|m| *m == n).unwrap();
        for (a, b) in &self.edges {
            let (x, y) = (find(&mut up, at(a)), find(&mut up, at(b)));
            up[x] = y;
        }
        match names.iter().position(|m| *m == sub) {
            Some(i) => find(&mut up, i),
            // A subvolume never snapshotted: a family of its own.
            None => names.len() + self.subvols.iter().position(|s| *s == sub).unwrap_or(0),
        }
    }

    fn writable(&self, v: Vec<String>) -> Vec<String> {
        v.into_iter()
            .filter(|p| !self.ro.iter().any(|r| under(p, r)))
            .collect()
    }

    fn wdirs(&self) -> Vec<String> {
        self.writable(self.walk().0)
    }

    /// Writable regular files of at least `min` bytes.
    fn wfiles(&self, min: u64) -> Vec<String> {
        self.writable(self.files(min))
    }

    /// Regular files of at least `min` bytes, not cache directory tags.
    fn files(&self, min: u64) -> Vec<String> {
        self.walk()
            .1
            .into_iter()
            .filter(|f| f.rsplit('/').next() != Some("CACHEDIR.TAG"))
            .filter(|f| {
                let md = fs::symlink_metadata(self.abs(f)).unwrap();
                md.is_file() && md.len() >= min
            })
            .collect()
    }

    fn size(&self, rel: &str) -> u64 {
        fs::symlink_metadata(self.abs(rel)).unwrap().len()
    }

    fn sh(&mut self, what: String, cmd: &mut Command) {
        let out = run(cmd);
        if out.code == Some(0) && out.stderr.is_empty() {
            self.log.push(what);
        } else {
            self.log
                .push(format!("{what} (failed: {})", out.stderr.trim()));
        }
    }

    fn xfs_io(&mut self, what: String, file: &str, cmd: String) {
        let mut c = Command::new("xfs_io");
        c.arg("-c").arg(cmd).arg(self.abs(file));
        self.sh(what, &mut c);
    }

    fn bytes(&mut self, len: u64) -> (Vec<u8>, bool) {
        if self.compress && self.rng.chance(1, 2) {
            let seed = self.rng.next() as u32;
            (crate::btrfs::text(len as usize, seed), true)
        } else {
            (fresh_bytes(len), false)
        }
    }

    pub fn dir(&mut self) {
        let dirs = self.wdirs();
        let d = join_rel(&self.rng.pick_s(&dirs), &self.name("d"));
        self.t.dir(&d);
        self.log.push(format!("mkdir {d}"));
    }

    pub fn subvolume(&mut self) {
        let dirs = self.wdirs();
        let v = join_rel(&self.rng.pick_s(&dirs), &self.name("v"));
        crate::btrfs::subvolume(&self.abs(&v));
        self.subvols.push(v.clone());
        self.log.push(format!("subvolume {v}"));
    }

    /// A new file: small (inline, where the mount allows) a quarter of
    /// the time, else up to 64 blocks; compressible text half the time
    /// on a compressed mount.
    pub fn write(&mut self) {
        let dirs = self.wdirs();
        let p = join_rel(&self.rng.pick_s(&dirs), &self.name("f"));
        let len = if self.rng.chance(1, 4) {
            1 + self.rng.below(3000)
        } else {
            BLK * (1 + self.rng.below(64)) + self.rng.below(2) * self.rng.below(BLK)
        };
        let (data, text) = self.bytes(len);
        let mut f = File::create_new(self.abs(&p)).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        self.log.push(format!(
            "write {p} {len}{}",
            if text { " text" } else { "" }
        ));
    }

    /// FICLONE of a whole file into a new one.
    pub fn reflink(&mut self) {
        let files = self.files(0);
        if files.is_empty() {
            return;
        }
        let src = self.rng.pick(&files).clone();
        let dirs = self.wdirs();
        let dst = join_rel(&self.rng.pick_s(&dirs), &self.name("r"));
        let s = File::open(self.abs(&src)).unwrap();
        let d = File::create_new(self.abs(&dst)).unwrap();
        match rustix::fs::ioctl_ficlone(&d, &s) {
            Ok(()) => self.log.push(format!("reflink {src} {dst}")),
            Err(e) => {
                drop(d);
                fs::remove_file(self.abs(&dst)).unwrap();
                self.log.push(format!("reflink {src} {dst} (failed: {e})"));
            }
        }
    }

    /// FICLONERANGE of some whole blocks of a file into a new file or into
    /// a writable one (replacing its blocks there).
    pub fn clone_range(&mut self) {
        let srcs = self.files(BLK);
        if srcs.is_empty() {
            return;
        }
        let src = self.rng.pick(&srcs).clone();
        let blocks = self.size(&src) / BLK;
        let a = self.rng.below(blocks);
        let len = BLK * (1 + self.rng.below((blocks - a).min(16)));
        let targets = self.wfiles(BLK);
        let (dst, doff) = if targets.is_empty() || self.rng.chance(1, 2) {
            let dirs = self.wdirs();
            (join_rel(&self.rng.pick_s(&dirs), &self.name("p")), 0)
        } else {
            let t = self.rng.pick(&targets).clone();
            let off = BLK * self.rng.below(self.size(&t) / BLK + 1);
            (t, off)
        };
        if !self.abs(&dst).exists() {
            File::create_new(self.abs(&dst)).unwrap();
        }
        let cmd = format!(
            "reflink {} {} {doff} {len}",
            self.abs(&src).display(),
            BLK * a
        );
        self.xfs_io(
            format!("clone_range {src} {} {dst} {doff} {len}", BLK * a),
            &dst,
            cmd,
        );
    }

    /// Some blocks of a writable file rewritten in place.
    pub fn rewrite(&mut self) {
        let files = self.wfiles(1);
        if files.is_empty() {
            return;
        }
        let f = self.rng.pick(&files).clone();
        let blocks = self.size(&f).div_ceil(BLK).max(1);
        let off = BLK * self.rng.below(blocks);
        let len = BLK * (1 + self.rng.below(16));
        self.t.overwrite(&f, off, len);
        self.rewritten.push(f.clone());
        self.log.push(format!("rewrite {f} {off} {len}"));
    }

    /// A snapshot of a subvolume (the top-level one a time in four),
    /// read-only half the time.
    pub fn snapshot(&mut self) {
        let dirs = self.wdirs();
        let src = if self.rng.chance(1, 4) {
            String::new()
        } else {
            self.rng.pick(&self.subvols.clone()).clone()
        };
        let dst = join_rel(&self.rng.pick_s(&dirs), &self.name("s"));
        let ro = self.rng.chance(1, 2);
        self.snap(&src, &dst, ro);
    }

    fn snap(&mut self, src: &str, dst: &str, ro: bool) {
        let mut c = Command::new("btrfs");
        c.args(["subvolume", "snapshot"]);
        if ro {
            c.arg("-r");
        }
        run(c.arg(self.abs(src)).arg(self.abs(dst))).assert_ok();
        if ro {
            self.ro.push(dst.to_owned());
        } else {
            self.subvols.push(dst.to_owned());
        }
        self.snaps.push(dst.to_owned());
        self.edges.push((src.to_owned(), dst.to_owned()));
        let src = if src.is_empty() { "." } else { src };
        self.log.push(format!(
            "snapshot{} {src} {dst}",
            if ro { " -r" } else { "" }
        ));
    }

    /// R -> N -> M, then N deleted and cleaned: M's family link to R is
    /// gone (issue case 4).
    pub fn intermediate(&mut self) {
        let dirs = self.wdirs();
        let r = self.rng.pick(&self.subvols.clone()).clone();
        let n = join_rel(&self.rng.pick_s(&dirs), &self.name("n"));
        let m = join_rel(&self.rng.pick_s(&dirs), &self.name("m"));
        self.snap(&r, &n, false);
        let ro = self.rng.chance(1, 2);
        self.snap(&n, &m, ro);
        self.subvols.retain(|s| s != &n);
        self.snaps.retain(|s| s != &n);
        crate::util::btrfs(&["subvolume", "delete", "-C"], &self.abs(&n));
        crate::util::btrfs(&["subvolume", "sync"], self.t.root);
        self.log.push(format!("delete {n}; subvolume sync"));
        self.chain = Some((r, m));
    }

    /// A hard link in the same subvolume, to a rewritten file (one with
    /// bookends) when there is one.
    pub fn hardlink(&mut self) {
        let rewritten = self.writable(self.rewritten.clone());
        let rewritten: Vec<String> = rewritten
            .into_iter()
            .filter(|f| self.abs(f).exists())
            .collect();
        let pool = if rewritten.is_empty() {
            self.wfiles(1)
        } else {
            rewritten
        };
        if pool.is_empty() {
            return;
        }
        let src = self.rng.pick(&pool).clone();
        let dev = fs::symlink_metadata(self.abs(&src)).unwrap().dev();
        let dirs: Vec<String> = if self.rng.chance(1, 2) {
            vec![src.rsplit_once('/').map_or("", |(d, _)| d).to_owned()]
        } else {
            self.wdirs()
                .into_iter()
                .filter(|d| fs::symlink_metadata(self.abs(d)).unwrap().dev() == dev)
                .collect()
        };
        let dst = join_rel(&self.rng.pick_s(&dirs), &self.name("h"));
        fs::hard_link(self.abs(&src), self.abs(&dst)).unwrap();
        self.log.push(format!("link {src} {dst}"));
        self.links.push((src, dst));
    }

    /// A byte copy of a file, then FIDEDUPERANGE of some of its blocks
    /// against the original.
    pub fn dedupe(&mut self) {
        let srcs = self.files(BLK);
        if srcs.is_empty() {
            return;
        }
        let src = self.rng.pick(&srcs).clone();
        let dirs = self.wdirs();
        let dst = join_rel(&self.rng.pick_s(&dirs), &self.name("u"));
        let data = fs::read(self.abs(&src)).unwrap();
        let mut f = File::create_new(self.abs(&dst)).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        let blocks = data.len() as u64 / BLK;
        let a = self.rng.below(blocks);
        let len = BLK * (1 + self.rng.below(blocks - a));
        let off = BLK * a;
        let cmd = format!("dedupe {} {off} {off} {len}", self.abs(&src).display());
        self.xfs_io(
            format!("copy {src} {dst}; dedupe {src} {off} {off} {len} {dst}"),
            &dst,
            cmd,
        );
    }

    /// `fallocate -p` of some blocks of a writable file.
    pub fn punch(&mut self) {
        let files = self.wfiles(BLK);
        if files.is_empty() {
            return;
        }
        let f = self.rng.pick(&files).clone();
        let blocks = self.size(&f) / BLK;
        let off = BLK * self.rng.below(blocks);
        let len = BLK * (1 + self.rng.below(8));
        let mut c = Command::new("fallocate");
        c.args(["-p", "-o", &off.to_string(), "-l", &len.to_string()])
            .arg(self.abs(&f));
        self.sh(format!("fallocate -p -o {off} -l {len} {f}"), &mut c);
    }

    /// `fallocate` (preallocation) over or past the end of a writable file,
    /// keeping its size half the time.
    pub fn prealloc(&mut self) {
        let files = self.wfiles(1);
        if files.is_empty() {
            return;
        }
        let f = self.rng.pick(&files).clone();
        let off = BLK * self.rng.below(self.size(&f).div_ceil(BLK) + 8);
        let len = BLK * (1 + self.rng.below(32));
        let keep = self.rng.chance(1, 2);
        let mut c = Command::new("fallocate");
        if keep {
            c.arg("-n");
        }
        c.args(["-o", &off.to_string(), "-l", &len.to_string()])
            .arg(self.abs(&f));
        let n = if keep { " -n" } else { "" };
        self.sh(format!("fallocate{n} -o {off} -l {len} {f}"), &mut c);
    }

    /// A writable file cut to a size inside its data.
    pub fn truncate(&mut self) {
        let files = self.wfiles(BLK + 1);
        if files.is_empty() {
            return;
        }
        let f = self.rng.pick(&files).clone();
        let to = 1 + self.rng.below(self.size(&f) - 1);
        let file = fs::OpenOptions::new()
            .write(true)
            .open(self.abs(&f))
            .unwrap();
        file.set_len(to).unwrap();
        file.sync_all().unwrap();
        self.log.push(format!("truncate -s {to} {f}"));
    }

    /// Blocks of a writable file cloned into itself: before the source
    /// range (over data) or past the end.
    pub fn self_clone(&mut self) {
        let files = self.wfiles(BLK);
        if files.is_empty() {
            return;
        }
        let f = self.rng.pick(&files).clone();
        let size = self.size(&f);
        let blocks = size / BLK;
        let a = self.rng.below(blocks);
        let b = 1 + self.rng.below((blocks - a).min(8));
        let doff = if a >= b && self.rng.chance(1, 2) {
            BLK * self.rng.below(a - b + 1)
        } else {
            size.div_ceil(BLK) * BLK + BLK * self.rng.below(3)
        };
        let (soff, len) = (BLK * a, BLK * b);
        let cmd = format!("reflink {} {soff} {doff} {len}", self.abs(&f).display());
        self.xfs_io(format!("clone_range {f} {soff} {f} {doff} {len}"), &f, cmd);
    }

    /// A symbolic link (its target is inline data, whatever `max_inline`).
    pub fn symlink(&mut self) {
        let (dirs, files) = self.walk();
        let dirs = self.writable(dirs);
        let p = join_rel(&self.rng.pick_s(&dirs), &self.name("l"));
        let target = if files.is_empty() {
            "nowhere".to_owned()
        } else {
            format!("/{}", self.rng.pick_s(&files))
        };
        std::os::unix::fs::symlink(&target, self.abs(&p)).unwrap();
        self.log.push(format!("symlink {target} {p}"));
    }

    /// A valid cache directory tag in a writable directory.
    pub fn cache_tag(&mut self) {
        let dirs: Vec<String> = self.wdirs().into_iter().filter(|d| !d.is_empty()).collect();
        if dirs.is_empty() {
            return;
        }
        let d = self.rng.pick(&dirs).clone();
        let p = join_rel(&d, "CACHEDIR.TAG");
        if self.abs(&p).exists() {
            return;
        }
        fs::write(self.abs(&p), format!("{CACHEDIR_SIGNATURE}\n# a cache\n")).unwrap();
        self.has_tag = true;
        self.log.push(format!("tag {p}"));
    }

    /// An empty directory a proc is mounted on for the scans.
    pub fn kernfs_dir(&mut self) {
        let dirs = self.wdirs();
        let d = join_rel(&self.rng.pick_s(&dirs), &self.name("k"));
        self.t.dir(&d);
        self.log
            .push(format!("mkdir {d} (proc mounted there for the scans)"));
        self.kernfs = Some(d);
    }

    /// A writable directory `nobody` cannot list (0700), or a file it
    /// cannot open (0600).
    pub fn lock(&mut self) {
        let dirs: Vec<String> = self.wdirs().into_iter().filter(|d| !d.is_empty()).collect();
        let files = self.wfiles(0);
        let (p, mode) = if !dirs.is_empty() && (files.is_empty() || self.rng.chance(1, 2)) {
            (self.rng.pick(&dirs).clone(), 0o700)
        } else if !files.is_empty() {
            (self.rng.pick(&files).clone(), 0o600)
        } else {
            return;
        };
        fs::set_permissions(self.abs(&p), fs::Permissions::from_mode(mode)).unwrap();
        self.unreadable = true;
        self.log.push(format!("chmod {mode:o} {p}"));
        self.locked = Some(p);
    }
}

/// Builds seed's tree: subvolumes and directories, files, reflinks,
/// snapshots, then a random mix of the other operations.
pub fn build(b: &mut Build<'_>) {
    b.subvolume();
    if b.rng.chance(1, 2) {
        b.subvolume();
    }
    for _ in 0..4 {
        b.dir();
    }
    for _ in 0..5 {
        b.write();
    }
    for _ in 0..3 {
        b.reflink();
    }
    if b.rng.chance(1, 3) {
        b.symlink();
    }
    for _ in 0..1 + b.rng.below(2) {
        b.snapshot();
    }
    if b.rng.chance(1, 4) {
        b.intermediate();
    }
    for _ in 0..2 + b.rng.below(3) {
        b.rewrite();
    }
    for _ in 0..3 + b.rng.below(4) {
        match b.rng.below(8) {
            0 => b.hardlink(),
            1 => b.dedupe(),
            2 => b.punch(),
            3 => b.prealloc(),
            4 => b.truncate(),
            5 => b.self_clone(),
            6 => b.clone_range(),
            _ => b.rewrite(),
        }
    }
    for _ in 0..2 {
        b.reflink();
    }
    for _ in 0..2 {
        b.write();
    }
    if b.rng.chance(1, 3) {
        b.snapshot();
    }
    if b.rng.chance(1, 3) {
        b.cache_tag();
    }
    if b.rng.chance(1, 5) {
        b.kernfs_dir();
    }
    if b.rng.chance(1, 3) {
        b.lock();
    }
}
