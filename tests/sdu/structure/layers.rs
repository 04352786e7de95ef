//! The layers, checked by parsing the code: every path in every file of
//! `src/` (the whole file: unit tests, macros' tokens and nested modules
//! too) that names a module of the crate must name one in a lower row of
//! [`LAYERS`], or the module itself.
//!
//! A path names a module when it starts with `crate`, `super` or `self`
//! (`super` counted from the file's module: `a/mod.rs` is `a`, `a/b.rs` is
//! `a::b`, and from each inline `mod x { }` around it), in a `use` tree, an
//! expression, a type, a pattern, an `impl`, a trait bound, or the tokens
//! of a macro call or an attribute (`crate :: x`, `$crate :: x`). A name
//! at the crate root counts as the module it comes from (`crate::Error`
//! is `error`'s), and the root's own items (`Config`, `run`) as `root`.
//! Comments and doc comments are not code: a doc link may point up.
//!
//! The binary (`src/main.rs`, `src/cli/`, `src/browse/`) is a crate of its
//! own with its own table, [`BINARY`]; it reaches the library only as
//! `sdu::…`, and no file of either crate is pulled in by `#[path]` or
//! `include!`, nor the crate renamed by `extern crate`.
//!
//! Unit tests obey the layers too. Between the module files of one crate,
//! outside the unit tests (a test may use the siblings of the module it
//! tests), no file uses one that uses it back ([`file_cycles`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// The library's layers, bottom row first. A module may use itself, its
/// own submodules and any module of a lower row; two modules of one row
/// may not use each other.
pub const LAYERS: &[&[&str]] = &[
    // Foundation: sizes, quoting, paths, globs, the snapshot tools' records;
    // know nothing of sdu.
    &["units", "quote", "path", "glob", "snapshot_layouts"],
    // Vocabulary: the figures and their bounds (`Inode`, `Exactness`,
    // `Bound`) ...
    &["figures"],
    // ... and the records of a scan (nodes, names, copies) in those words.
    &["records"],
    // Plumbing: the errors (in the vocabulary's words) ...
    &["error"],
    // ... and what carries them and the results out: the messages (which
    // print the errors' diagnostics), the output file (whose failures are
    // errors), and the time format (which writes the vocabulary's
    // `Timestamp`, so it sits here and not in the foundation).
    &["messages", "outfile", "timefmt"],
    // The stages, in the order data flows: may this file share?
    &["probe"],
    // Which physical data each file references: read, indexed, swept.
    &["extents"],
    // The parallel walk.
    &["walk"],
    // The roll-up per directory, the rules of the figures.
    &["tree"],
    // What a run counted, and the saved scan (a source of a tree that
    // `scan` reads for --import, so below it).
    &["stats", "saved"],
    // A scan: walk and sweep, or import, rolled up once.
    &["scan"],
    // Uses of a scan: what to delete to free a size, what changed since a
    // saved scan, deleting, the subvolumes by origin, the table of df's Used.
    &["plan", "compare", "delete", "snapshots", "df"],
    // The reports, which print plans and comparisons.
    &["report"],
    // lib.rs: `run`, `Config`.
    &["root"],
];

/// The binary's layers, bottom row first (the same rule).
pub const BINARY: &[&[&str]] = &[
    // The command line: flags, help, progress, exit status.
    &["cli"],
    // The full-screen browser (`sdu -i`).
    &["browse"],
    // main.rs.
    &["main"],
];

/// Edges the table forbids that are known and waiting on another change:
/// `(from, to, why)`. Each is still reported if it goes away, so that the
/// list cannot go stale.
pub const PENDING: &[(&str, &str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file relative to `src/`: `walk/dir.rs` is
/// `walk::dir`, `walk/mod.rs` is `walk`, `lib.rs` and `main.rs` the root.
pub fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// A path as written, and where it points (from the crate root), or
/// `None` when it does not start at `crate`, `super` or `self`.
#[derive(Debug, Clone)]
pub struct Named {
    /// The path as written, `crate::tree::bounds::Inode`.
    pub written: String,
    /// Where it points, `[tree, bounds, Inode]`; `None` when `super`
    /// climbs above the root.
    pub to: Option<Vec<String>>,
}

/// Resolves `segs`, written in module `me`.
fn resolve(segs: &[String], me: &[String]) -> Option<Option<Vec<String>>> {
    let first = segs.first()?;
    let mut at: Vec<String>;
    let mut rest = &segs[1..];
    match first.as_str() {
        "crate" | "$crate" => at = Vec::new(),
        "self" => at = me.to_vec(),
        "super" => {
            at = me.to_vec();
            if at.pop().is_none() {
                return Some(None);
            }
        }
        _ => return None,
    }
    while let Some(s) = rest.first() {
        match s.as_str() {
            "super" => {
                if at.pop().is_none() {
                    return Some(None);
                }
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(Some(at))
}

/// Collects every path of a file that names the crate.
struct Collector {
    /// The module being read: the file's, plus each inline `mod` around.
    module: Vec<String>,
    found: Vec<Named>,
    /// `#[path]` attributes and `include!` calls met.
    smuggled: Vec<String>,
}

impl Collector {
    fn note(&mut self, segs: Vec<String>) {
        if let Some(to) = resolve(&segs, &self.module) {
            self.found.push(Named {
                written: segs.join("::"),
                to,
            });
        }
    }

    /// `crate :: a :: b`, `super :: super :: x` in a token stream, at any
    /// depth of brackets.
    fn tokens(&mut self, ts: TokenStream) {
        let tts: Vec<TokenTree> = ts.into_iter().collect();
        let ident = |t: &TokenTree| match t {
            TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        };
        let colons = |i: usize| {
            matches!((tts.get(i), tts.get(i + 1)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && b.as_char() == ':')
        };
        let mut i = 0;
        while i < tts.len() {
            if let TokenTree::Group(g) = &tts[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let starts =
                ident(&tts[i]).is_some_and(|s| matches!(s.as_str(), "crate" | "super" | "self"));
            // `self.x` and a lone `super` name nothing: a path needs `::`.
            if starts && colons(i + 1) {
                let mut segs = vec![ident(&tts[i]).unwrap()];
                let mut j = i + 1;
                while colons(j) {
                    match tts.get(j + 2).and_then(ident) {
                        Some(s) => segs.push(s),
                        None => break,
                    }
                    j += 3;
                }
                self.note(segs);
                i = j;
            } else {
                i += 1;
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut segs = prefix.clone();
                if n.ident != "self" || segs.is_empty() {
                    segs.push(n.ident.to_string());
                }
                self.note(segs);
            }
            syn::UseTree::Rename(r) => {
                let mut segs = prefix.clone();
                if r.ident != "self" || segs.is_empty() {
                    segs.push(r.ident.to_string());
                }
                self.note(segs);
            }
            syn::UseTree::Glob(_) => self.note(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if p.leading_colon.is_none() {
            self.note(segs);
        }
        visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for a in &u.attrs {
            self.visit_attribute(a);
        }
        if u.leading_colon.is_none() {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        for a in &m.attrs {
            self.visit_attribute(a);
        }
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for i in items {
                self.visit_item(i);
            }
            self.module.pop();
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        // Rust code pulled in from a file (`include_str!` of the HTML
        // report's page is text, not code).
        if m.path.is_ident("include") {
            self.smuggled.push(format!("{}!", path_text(&m.path)));
        }
        self.tokens(m.tokens.clone());
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // The attribute's tokens: a path in them names the crate, a string
        // in them (a doc comment, a doc link) does not.
        match &a.meta {
            syn::Meta::Path(_) => {}
            syn::Meta::List(l) => self.tokens(l.tokens.clone()),
            syn::Meta::NameValue(nv) => {
                if nv.path.is_ident("path") {
                    self.smuggled.push("#[path]".into());
                }
                if !nv.path.is_ident("doc") {
                    self.visit_expr(&nv.value);
                }
            }
        }
    }

    // `extern crate self as x;` would name the crate without `crate`.
    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        self.smuggled.push(format!("extern crate {}", e.ident));
    }

    // `pub(super)`, `pub(in crate::a)` widen who sees an item; they use
    // nothing.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}
}

fn path_text(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Every crate path of one file's source, written in module `me`.
pub fn named_in(source: &str, me: &[String]) -> (Vec<Named>, Vec<String>) {
    let file = syn::parse_file(source).unwrap_or_else(|e| panic!("{me:?}: {e}"));
    named_in_file(&file, me)
}

/// Whether an item is compiled for the unit tests only (`#[cfg(test)]`).
fn test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) => l.path.is_ident("cfg") && l.tokens.to_string() == "test",
        _ => false,
    })
}

/// The items of `items` and of the inline modules in them that are not
/// [`test_only`].
fn without_tests(items: &mut Vec<syn::Item>) {
    items.retain(|i| !test_only(i));
    for i in items {
        if let syn::Item::Mod(m) = i
            && let Some((_, inner)) = &mut m.content
        {
            without_tests(inner);
        }
    }
}

/// The crate paths of one file's source outside its unit tests (a test
/// may reach the siblings of the module it tests).
pub fn named_outside_tests(source: &str, me: &[String]) -> Vec<Named> {
    let mut file = syn::parse_file(source).unwrap_or_else(|e| panic!("{me:?}: {e}"));
    without_tests(&mut file.items);
    named_in_file(&file, me).0
}

fn named_in_file(file: &syn::File, me: &[String]) -> (Vec<Named>, Vec<String>) {
    let mut c = Collector {
        module: me.to_vec(),
        found: Vec::new(),
        smuggled: Vec::new(),
    };
    for a in &file.attrs {
        c.visit_attribute(a);
    }
    for i in &file.items {
        c.visit_item(i);
    }
    (c.found, c.smuggled)
}

/// What the crate root holds: name → the top-level module it is (a
/// `mod`), comes from (a `use`), or `root` (an item of its own).
pub fn root_names(source: &str) -> BTreeMap<String, String> {
    let file = syn::parse_file(source).unwrap();
    let mut out = BTreeMap::new();
    fn uses(t: &syn::UseTree, first: Option<&str>, out: &mut BTreeMap<String, String>) {
        let from = |i: &syn::Ident| first.unwrap_or(&i.to_string()).to_string();
        match t {
            syn::UseTree::Path(p) => {
                let seg = p.ident.to_string();
                let first = match (first, seg.as_str()) {
                    (Some(f), _) => Some(f.to_string()),
                    (None, "crate" | "self") => None,
                    (None, s) => Some(s.to_string()),
                };
                uses(&p.tree, first.as_deref(), out);
            }
            syn::UseTree::Name(n) => {
                out.insert(n.ident.to_string(), from(&n.ident));
            }
            syn::UseTree::Rename(r) => {
                out.insert(r.rename.to_string(), from(&r.ident));
            }
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    uses(t, first, out);
                }
            }
        }
    }
    for item in &file.items {
        let own = match item {
            syn::Item::Mod(m) => {
                out.insert(m.ident.to_string(), m.ident.to_string());
                continue;
            }
            syn::Item::Use(u) => {
                // std's and other crates' names are not the crate's.
                if let syn::UseTree::Path(p) = &u.tree
                    && matches!(p.ident.to_string().as_str(), "std" | "core" | "alloc")
                {
                    continue;
                }
                uses(&u.tree, None, &mut out);
                continue;
            }
            syn::Item::Fn(f) => &f.sig.ident,
            syn::Item::Struct(s) => &s.ident,
            syn::Item::Enum(e) => &e.ident,
            syn::Item::Const(c) => &c.ident,
            syn::Item::Static(s) => &s.ident,
            syn::Item::Type(t) => &t.ident,
            syn::Item::Trait(t) => &t.ident,
            syn::Item::Union(u) => &u.ident,
            syn::Item::Macro(m) => match &m.ident {
                Some(i) => i,
                None => continue,
            },
            _ => continue,
        };
        out.insert(own.to_string(), "root".into());
    }
    out
}

/// The row of each module in `table`.
fn rows(table: &[&[&str]]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (r, row) in table.iter().enumerate() {
        for m in *row {
            assert!(out.insert(m.to_string(), r).is_none(), "{m} in two rows");
        }
    }
    out
}

/// One crate's sources: path relative to `src/` → text.
pub type Sources = BTreeMap<String, String>;

/// Every use against `table` in `files` (the root file is `root_file`,
/// its own items in the row named `root_row`), as
/// `src/walk/ctx.rs: walk -> tree (crate::tree::bounds::Inode)`.
pub fn violations(
    files: &Sources,
    root_file: &str,
    root_row: &str,
    table: &[&[&str]],
) -> Vec<String> {
    let rows = rows(table);
    let roots = root_names(&files[root_file]);
    let mut out = Vec::new();
    for (rel, text) in files {
        let me = module_of(rel);
        let (named, smuggled) = named_in(text, &me);
        for s in smuggled {
            out.push(format!("src/{rel}: {s} pulls a file in"));
        }
        let from = me.first().map_or(root_row, String::as_str);
        let Some(&from_row) = rows.get(from) else {
            out.push(format!("src/{rel}: {from} is in no row of the table"));
            continue;
        };
        for n in named {
            let to = match &n.to {
                None => {
                    out.push(format!("src/{rel}: super above the root ({})", n.written));
                    continue;
                }
                Some(to) => match to.first() {
                    // `use crate::*`, `use super::*` from a top-level module.
                    None => root_row.to_string(),
                    Some(first) => match roots.get(first) {
                        Some(m) => m.clone(),
                        None => format!("?{first}"),
                    },
                },
            };
            if to == from {
                continue;
            }
            let ok = rows.get(&to).is_some_and(|&r| r < from_row);
            if !ok {
                out.push(format!("src/{rel}: {from} -> {to} ({})", n.written));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Module files that import each other, known and waiting on another
/// change, each set sorted, with why. Stale entries fail too.
pub const PENDING_CYCLES: &[(&[&str], &str)] = &[];

/// The sets of module files of `files` that import each other outside
/// their unit tests (the strongly connected components of the import
/// graph between module files, of two files or more), each sorted.
pub fn file_cycles(files: &Sources) -> BTreeSet<Vec<String>> {
    let mods: BTreeSet<Vec<String>> = files.keys().map(|r| module_of(r)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files {
        let me = module_of(rel);
        for n in named_outside_tests(text, &me) {
            let Some(to) = n.to else { continue };
            // The module file that holds what the path names.
            let Some(f) = (0..=to.len())
                .rev()
                .map(|k| to[..k].to_vec())
                .find(|p| mods.contains(p))
            else {
                continue;
            };
            // The root wires everything together.
            if f != me && !f.is_empty() && !me.is_empty() {
                g.entry(me.join("::")).or_default().insert(f.join("::"));
            }
        }
    }
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(x) = stack.pop() {
            for y in g.get(&x).into_iter().flatten() {
                if seen.insert(y.clone()) {
                    stack.push(y.clone());
                }
            }
        }
        seen
    };
    let mut out = BTreeSet::new();
    for a in g.keys() {
        let from_a = reach(a);
        if from_a.contains(a) {
            let scc: Vec<String> = from_a
                .iter()
                .filter(|b| reach(b).contains(a))
                .cloned()
                .collect();
            out.insert(scc);
        }
    }
    out
}

/// The library's and the binary's sources.
fn read_crates() -> (Sources, Sources) {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let (mut lib, mut bin) = (Sources::new(), Sources::new());
    for p in paths {
        let rel = p.strip_prefix(src()).unwrap().to_string_lossy().to_string();
        let text = fs::read_to_string(&p).unwrap();
        let first = rel.split('/').next().unwrap();
        if matches!(first, "main.rs" | "cli" | "browse") {
            bin.insert(rel, text);
        } else {
            lib.insert(rel, text);
        }
    }
    (lib, bin)
}

/// The top-level module of an edge line, `src/a.rs: a -> b (…)` → `(a, b)`.
fn edge(line: &str) -> Option<(&str, &str)> {
    let (_, rest) = line.split_once(": ")?;
    let (from, rest) = rest.split_once(" -> ")?;
    let (to, _) = rest.split_once(" (")?;
    Some((from, to))
}

#[test]
fn every_import_goes_down_the_layers() {
    let (lib, bin) = read_crates();
    assert!(lib.len() > 50, "read {} library files", lib.len());
    // The modules the table names are the modules lib.rs declares.
    let declared: BTreeSet<String> = root_names(&lib["lib.rs"])
        .into_iter()
        .filter(|(k, v)| k == v)
        .map(|(k, _)| k)
        .collect();
    let tabled: BTreeSet<String> = LAYERS
        .iter()
        .flat_map(|r| r.iter().map(|s| s.to_string()))
        .filter(|m| m != "root")
        .collect();
    assert_eq!(declared, tabled, "lib.rs's modules and the table's");
    let found = violations(&lib, "lib.rs", "root", LAYERS);
    let (pending, bad): (Vec<&String>, Vec<&String>) = found
        .iter()
        .partition(|l| edge(l).is_some_and(|e| PENDING.iter().any(|&(f, t, _)| (f, t) == e)));
    // The summary scripts/house-metrics reads (`--nocapture`).
    println!("back edges: {} ({} pending)", bad.len(), pending.len());
    assert!(
        bad.is_empty(),
        "uses against the layers:\n{}",
        bad.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (f, t, why) in PENDING {
        assert!(
            pending.iter().any(|l| edge(l) == Some((f, t))),
            "{f} -> {t} is gone: take it off PENDING ({why})"
        );
    }
    let found = violations(&bin, "main.rs", "main", BINARY);
    assert!(found.is_empty(), "the binary:\n{}", found.join("\n"));
    // The binary's modules are its own; the library is `sdu::`.
    let declared: BTreeSet<String> = root_names(&bin["main.rs"])
        .into_iter()
        .filter(|(k, v)| k == v)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        declared,
        ["browse", "cli"].map(String::from).into(),
        "main.rs's modules"
    );
}

#[test]
fn no_module_file_imports_one_that_imports_it_back() {
    let (lib, bin) = read_crates();
    let pending: BTreeSet<Vec<String>> = PENDING_CYCLES
        .iter()
        .map(|(c, _)| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let found = file_cycles(&lib);
    let bad: Vec<_> = found.difference(&pending).collect();
    assert!(
        bad.is_empty(),
        "import cycles between module files: {bad:?}"
    );
    let stale: Vec<_> = pending.difference(&found).collect();
    assert!(stale.is_empty(), "gone: take off PENDING_CYCLES: {stale:?}");
    let found = file_cycles(&bin);
    assert!(found.is_empty(), "import cycles in the binary: {found:?}");
}

#[test]
fn the_layer_check_finds_hidden_back_edges() {
    let files: Sources = [
        (
            "lib.rs",
            "mod low; mod high; pub use high::Top; pub struct Config;",
        ),
        ("high.rs", "pub struct Top; use crate::low::Low;"),
        // A plain use down, then back edges: after a test module, in a
        // macro, in a type, via super::super, in a nested module, through
        // a root re-export and to the root's own item.
        (
            "low/mod.rs",
            "pub struct Low; mod inner;\n\
             #[cfg(test)] mod tests { use super::*; }\n\
             fn after_tests() { let _ = crate::high::f(); }",
        ),
        (
            "low/inner.rs",
            "fn m() { println!(\"{}\", crate :: high :: X); }\n\
             fn t(_: Option<Vec<crate::high::Top>>) {}\n\
             fn s() { super::super::high::g(); }\n\
             mod deep { mod deeper { use super::super::super::super::high; } }\n\
             fn r() -> crate::Top { todo!() }\n\
             fn c(_: &crate::Config) {}\n\
             /// [`crate::high::Top`] is above: a doc link is not a use.\n\
             pub(super) fn fine() { let _ = super::Low; let _ = self::fine; }",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let table: &[&[&str]] = &[&["low"], &["high"], &["root"]];
    let found = violations(&files, "lib.rs", "root", table);
    for want in [
        "src/low/mod.rs: low -> high (crate::high::f)",
        "src/low/inner.rs: low -> high (crate::high::X)",
        "src/low/inner.rs: low -> high (crate::high::Top)",
        "src/low/inner.rs: low -> high (super::super::high::g)",
        "src/low/inner.rs: low -> high (super::super::super::super::high)",
        "src/low/inner.rs: low -> high (crate::Top)",
        "src/low/inner.rs: low -> root (crate::Config)",
    ] {
        assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
    }
    assert_eq!(found.len(), 7, "{found:#?}");
    // Two modules of one row may not use each other either.
    let flat: &[&[&str]] = &[&["low", "high"], &["root"]];
    let found = violations(&files, "lib.rs", "root", flat);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("src/high.rs: high -> low"))
    );
}
