//! How glibc's `setlocale(LC_ALL, "")`, which du calls first thing, would
//! resolve the environment, as far as quoting cares: whether LC_CTYPE ends
//! up with a UTF-8 charset.
//!
//! For each category, the name is the first non-empty one of `LC_ALL`,
//! `LC_<CATEGORY>` and `LANG`, else `C`. `C` and `POSIX` are built in; any
//! other name must be found, or `setlocale` fails as a whole and du stays
//! in the C locale (so `LANG=C.UTF-8 LC_TIME=xx_YY.UTF-8` quotes as C):
//! - in `/usr/lib/locale/locale-archive` (under the name with its codeset
//!   normalized: `en_US.UTF-8` is stored as `en_US.utf8`), unless `LOCPATH`
//!   is set;
//! - or as a directory in one of the `LOCPATH` directories (colon-separated)
//!   or else in `/usr/lib/locale`, named `lang[_TERRITORY][.codeset][@modifier]`, the codeset spelled as
//!   given or normalized, territory and modifier optional (so
//!   `C_XX.UTF-8@x` finds `C.utf8`), holding the category's file.
//!
//! The charset is taken from the codeset in the LC_CTYPE name. Not
//! modelled: locale aliases (`/usr/share/locale/locale.alias`), a locale
//! directory whose name carries no codeset (a UTF-8 one is taken as C), and
//! non-UTF-8 locales other than C (ISO-8859-1, EUC-JP…), which are all
//! taken as C.

use std::cell::OnceCell;
use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The categories `setlocale(LC_ALL, "")` loads.
const CATEGORIES: [&str; 12] = [
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
];

/// Where glibc finds locales when `LOCPATH` does not say.
const DEFAULT_PATH: &str = "/usr/lib/locale";

/// What the decision reads: the environment and the installed locales.
pub(crate) trait Locales {
    fn var(&self, name: &str) -> Option<OsString>;
    /// Whether the locale archive holds `name`.
    fn in_archive(&self, name: &str) -> bool;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
}

/// The real environment, `/usr/lib/locale/locale-archive` and files.
#[derive(Default)]
pub(crate) struct System {
    archive: OnceCell<Vec<String>>,
}

impl Locales for System {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }

    fn in_archive(&self, name: &str) -> bool {
        self.archive
            .get_or_init(|| {
                archive_names(Path::new(DEFAULT_PATH).join("locale-archive").as_path())
                    .unwrap_or_default()
            })
            .iter()
            .any(|n| n == name)
    }

    fn exists(&self, path: &Path) -> bool {
        // glibc opens the file: a dangling symlink is no locale.
        path.metadata().is_ok()
    }
}

/// Whether the environment puts LC_CTYPE in a UTF-8 locale.
pub(crate) fn ctype_is_utf8(l: &dyn Locales) -> bool {
    let value = |var: &str| {
        l.var(var)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_str().map(str::to_owned))
    };
    let name = |cat: &str| {
        value("LC_ALL")
            .or_else(|| value(cat))
            .or_else(|| value("LANG"))
            .unwrap_or_else(|| Some("C".to_owned()))
    };
    let locpath: Option<Vec<PathBuf>> = value("LOCPATH").map(|p| {
        let p = p.unwrap_or_default();
        p.split(':')
            .filter(|d| !d.is_empty())
            .chain([DEFAULT_PATH])
            .map(PathBuf::from)
            .collect()
    });
    let mut ctype = None;
    for cat in CATEGORIES {
        let Some(n) = name(cat) else {
            return false;
        };
        if !loadable(l, &n, cat, locpath.as_deref()) {
            return false;
        }
        if cat == "LC_CTYPE" {
            ctype = Some(n);
        }
    }
    ctype.is_some_and(|n| {
        Name::parse(&n)
            .codeset
            .is_some_and(|c| normalize(c) == "utf8")
    })
}

/// Whether glibc would load category `cat` of locale `name`.
fn loadable(l: &dyn Locales, name: &str, cat: &str, locpath: Option<&[PathBuf]>) -> bool {
    if name == "C" || name == "POSIX" {
        return true;
    }
    if name.contains('/') || name.len() > 255 || name.starts_with('.') {
        return false;
    }
    let n = Name::parse(name);
    let dirs: Vec<PathBuf> = match locpath {
        None => {
            if l.in_archive(&n.archive_name()) {
                return true;
            }
            vec![PathBuf::from(DEFAULT_PATH)]
        }
        Some(d) => d.to_vec(),
    };
    let candidates = n.candidates();
    dirs.iter()
        .any(|d| candidates.iter().any(|c| l.exists(&d.join(c).join(cat))))
}

/// `language[_territory][.codeset][@modifier]`.
struct Name<'a> {
    language: &'a str,
    territory: Option<&'a str>,
    codeset: Option<&'a str>,
    modifier: Option<&'a str>,
}

impl<'a> Name<'a> {
    fn parse(s: &'a str) -> Name<'a> {
        let (s, modifier) = match s.split_once('@') {
            Some((a, m)) => (a, Some(m)),
            None => (s, None),
        };
        let (s, codeset) = match s.split_once('.') {
            Some((a, c)) => (a, Some(c)),
            None => (s, None),
        };
        let (language, territory) = match s.split_once('_') {
            Some((a, t)) => (a, Some(t)),
            None => (s, None),
        };
        Name {
            language,
            territory,
            codeset,
            modifier,
        }
    }

    fn build(&self, territory: bool, codeset: Option<&str>, modifier: bool) -> String {
        let mut s = self.language.to_owned();
        if let (true, Some(t)) = (territory, self.territory) {
            s = s + "_" + t;
        }
        if let Some(c) = codeset {
            s = s + "." + c;
        }
        if let (true, Some(m)) = (modifier, self.modifier) {
            s = s + "@" + m;
        }
        s
    }

    /// The key the archive stores it under: the codeset normalized.
    fn archive_name(&self) -> String {
        let c = self.codeset.map(normalize);
        self.build(true, c.as_deref(), true)
    }

    /// The directory names glibc accepts for it: territory and modifier
    /// may be dropped, the codeset (when given) may not, but may be
    /// spelled normalized.
    fn candidates(&self) -> Vec<String> {
        let codesets: Vec<Option<String>> = match self.codeset {
            Some(c) => vec![Some(c.to_owned()), Some(normalize(c))],
            None => vec![None],
        };
        let mut v = Vec::new();
        for t in [true, false] {
            for m in [true, false] {
                for c in &codesets {
                    let s = self.build(t, c.as_deref(), m);
                    if !v.contains(&s) {
                        v.push(s);
                    }
                }
            }
        }
        v
    }
}

/// glibc's `_nl_normalize_codeset`: letters and digits only, letters in
/// lower case, `iso` before a codeset of digits only.
fn normalize(codeset: &str) -> String {
    let s: String = codeset
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        format!("iso{s}")
    } else {
        s
    }
}

/// The locale names in a glibc locale archive (`locale/locarchive.h`):
/// a header of 32-bit words, a name hash table of
/// `(hash, name offset, record offset)` entries (record offset 0 =
/// empty slot), names NUL-terminated at absolute file offsets. Reads
/// the header, the table and the string region, not the locale data.
pub(crate) fn archive_names(path: &Path) -> Option<Vec<String>> {
    const MAGIC: u32 = 0xde02_0109;
    let f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let read = |off: u64, n: u64| -> Option<Vec<u8>> {
        if off.checked_add(n)? > len || n > 64 << 20 {
            return None;
        }
        let mut b = vec![0; n as usize];
        f.read_exact_at(&mut b, off).ok()?;
        Some(b)
    };
    let words = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    };
    let head = words(&read(0, 56)?);
    let [
        magic,
        _serial,
        hash_off,
        _used,
        hash_size,
        str_off,
        str_used,
        ..,
    ] = head[..]
    else {
        return None;
    };
    if magic != MAGIC {
        return None;
    }
    let table = words(&read(u64::from(hash_off), u64::from(hash_size) * 12)?);
    let strings = read(u64::from(str_off), u64::from(str_used))?;
    let mut names = Vec::new();
    for e in table.chunks_exact(3) {
        let (name_off, rec) = (e[1], e[2]);
        if rec == 0 {
            continue;
        }
        let start = name_off.checked_sub(str_off)? as usize;
        let rest = strings.get(start..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        names.push(String::from_utf8_lossy(&rest[..end]).into_owned());
    }
    Some(names)
}
