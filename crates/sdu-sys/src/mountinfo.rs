//! `/proc/self/mountinfo`: the mounts of this process's mount namespace,
//! one line each, read into [`Mount`]s.
//!
//! A line is `id parent major:minor root point options [optional
//! fields…] - fstype source super-options`, its paths and names with
//! space, tab, newline and backslash written as `\ooo` octal escapes,
//! undone here ([`unescape`]).
//!
//! # References
//!  - `proc_pid_mountinfo(5)`; `fs/proc_namespace.c` (`show_mountinfo`,
//!    `mangle` escapes `" \t\n\\"`)

use std::io;

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id (what `statx` reports as `stx_mnt_id`).
    pub id: u64,
    /// The id of the mount it lies on (itself for the namespace's root).
    pub parent: u64,
    /// The device of its filesystem, `(major, minor)`, as `st_dev` has it.
    pub dev: (u32, u32),
    /// The directory of its filesystem that is mounted (`/` for the whole
    /// filesystem; a subvolume's path, or a bind mount's directory).
    pub root: Vec<u8>,
    /// Its mount point, absolute in this process's root.
    pub point: Vec<u8>,
    /// The mount's own options (`rw,nosuid,relatime`…).
    pub options: Vec<u8>,
    /// The filesystem type (`btrfs`, `xfs`, `ext4`…).
    pub fs_type: Vec<u8>,
    /// The source the filesystem was mounted from (a device, or `none`).
    pub source: Vec<u8>,
    /// The filesystem's options (`subvolid=5,subvol=/`…).
    pub super_options: Vec<u8>,
}

impl Mount {
    /// Parses one line; `None` for a line that is not a mount (the empty
    /// one after the last newline, or one missing a field).
    pub fn parse(line: &[u8]) -> Option<Mount> {
        let mut f = line.split(|&b| b == b' ');
        let num = |f: Option<&[u8]>| std::str::from_utf8(f?).ok()?.parse().ok();
        let id = num(f.next())?;
        let parent = num(f.next())?;
        let (major, minor) = std::str::from_utf8(f.next()?).ok()?.split_once(':')?;
        let dev = (major.parse().ok()?, minor.parse().ok()?);
        let root = unescape(f.next()?);
        let point = unescape(f.next()?);
        let options = unescape(f.next()?);
        // The optional fields (`shared:1`, `master:2`…) end with a lone `-`.
        f.by_ref().find(|&o| o == b"-")?;
        let fs_type = unescape(f.next()?);
        let source = unescape(f.next()?);
        let super_options = unescape(f.next()?);
        Some(Mount {
            id,
            parent,
            dev,
            root,
            point,
            options,
            fs_type,
            source,
            super_options,
        })
    }
}

/// Parses a whole mountinfo text: its mounts, in its order; a line that
/// does not parse is left out.
pub fn parse(text: &[u8]) -> Vec<Mount> {
    text.split(|&b| b == b'\n')
        .filter_map(Mount::parse)
        .collect()
}

/// The mounts of this process's mount namespace (`/proc/self/mountinfo`).
///
/// # Errors
/// Reading the file's: no `/proc`, or no permission.
pub fn read() -> io::Result<Vec<Mount>> {
    Ok(parse(&std::fs::read("/proc/self/mountinfo")?))
}

/// A mountinfo field with its `\ooo` escapes (space, tab, newline,
/// backslash) undone; a backslash not followed by three octal digits of a
/// byte stays as it is.
pub fn unescape(f: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(f.len());
    let mut i = 0;
    while i < f.len() {
        if let Some(oct) = f.get(i + 1..i + 4).filter(|_| f[i] == b'\\') {
            let v = oct.iter().try_fold(0u32, |v, &c| {
                (b'0'..=b'7')
                    .contains(&c)
                    .then(|| v * 8 + u32::from(c - b'0'))
            });
            if let Some(v) = v.and_then(|v| u8::try_from(v).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(f[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(br"/mnt/a\040b"), b"/mnt/a b");
        assert_eq!(unescape(br"/x\134y\011"), b"/x\\y\t");
        assert_eq!(unescape(br"/end\04"), br"/end\04");
        assert_eq!(unescape(br"/big\777"), br"/big\777");
    }

    #[test]
    fn lines_parse_into_their_fields() {
        let text = b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
            61 29 0:45 /@home /home\\040dir rw,relatime shared:30 master:2 - btrfs /dev/vda2 rw,subvolid=257\n\
            broken line\n";
        let m = parse(text);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(
            m[1],
            Mount {
                id: 61,
                parent: 29,
                dev: (0, 45),
                root: b"/@home".to_vec(),
                point: b"/home dir".to_vec(),
                options: b"rw,relatime".to_vec(),
                fs_type: b"btrfs".to_vec(),
                source: b"/dev/vda2".to_vec(),
                super_options: b"rw,subvolid=257".to_vec(),
            }
        );
        assert_eq!(
            (m[0].id, m[0].parent, &m[0].point[..]),
            (22, 1, &b"/proc"[..])
        );
    }

    #[test]
    fn this_process_has_a_root_mount() {
        let m = read().unwrap();
        assert!(m.iter().any(|m| m.point == b"/"), "{m:?}");
    }
}
