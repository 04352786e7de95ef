//! What sdu says about itself beyond the flags: the man page's own
//! sections, and `--generate` (the man page or a shell
//! completion script).
//!
//! clap renders the name, synopsis, description and options from
//! [`Cli`]; the prose that `--help` has no room for lives here, and the
//! examples both show come from [`super::help`].

use std::io::{self, Write};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use super::args::{Cli, Generate};
use super::help::EXAMPLES;
use super::status::ExitStatus;

/// `--generate KIND`: the man page or a completion script on stdout.
pub(crate) fn generate(kind: Generate) -> ExitStatus {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let shell = match kind {
        Generate::Man => None,
        Generate::Bash => Some(Shell::Bash),
        Generate::Zsh => Some(Shell::Zsh),
        Generate::Fish => Some(Shell::Fish),
        Generate::Elvish => Some(Shell::Elvish),
        Generate::Powershell => Some(Shell::PowerShell),
    };
    match shell {
        Some(sh) => clap_complete::generate(sh, &mut cmd, "sdu", &mut buf),
        None => man_page(cmd, &mut buf).expect("writing to a Vec"),
    }
    match io::stdout().lock().write_all(&buf) {
        Ok(()) => ExitStatus::Success,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitStatus::Success,
        Err(e) => {
            eprintln!("sdu: write error: {e}");
            ExitStatus::Fatal
        }
    }
}

/// The man page: clap's sections (name, synopsis, description, options)
/// and what `--help` has no room for.
fn man_page(cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let man = Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    synopsis(&cmd).to_writer(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut r = Roff::new();
    sections(&mut r, MAN_SECTIONS);
    sections(&mut r, DELETING);
    // The browser's keys: their own section, after what deleting does.
    sections(&mut r, BROWSER_KEYS);
    sections(&mut r, FILES);
    sections(&mut r, EXIT_STATUS);
    r.control("SH", ["EXAMPLES"]);
    for (cmd, what) in EXAMPLES {
        r.control("TP", []);
        r.text([bold(*cmd)]);
        r.text([roman(*what)]);
    }
    sections(&mut r, SEE_ALSO);
    r.to_writer(out)?;
    man.render_version_section(out)
}

/// The synopsis, every option with its value: `[-d|--max-depth N]`,
/// `[--time[=WORD]]`, `[PATH]...`.
fn synopsis(cmd: &clap::Command) -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["SYNOPSIS"]);
    let mut line: Vec<Inline> = vec![bold(cmd.get_name())];
    let mut positionals = Vec::new();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if arg.is_positional() {
            positionals.push(arg);
            continue;
        }
        line.push(roman(" ["));
        let mut first = true;
        if let Some(c) = arg.get_short() {
            line.push(bold(format!("-{c}")));
            first = false;
        }
        if let Some(l) = arg.get_long() {
            if !first {
                line.push(roman("|"));
            }
            line.push(bold(format!("--{l}")));
        }
        if arg.get_action().takes_values() {
            let name = arg
                .get_value_names()
                .and_then(|v| v.first())
                .map_or_else(|| arg.get_id().to_string(), ToString::to_string);
            if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
                line.extend([roman("[="), italic(name), roman("]")]);
            } else {
                line.extend([roman(" "), italic(name)]);
            }
        }
        line.push(roman("]"));
    }
    for arg in positionals {
        let name = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| arg.get_id().to_string(), ToString::to_string);
        line.extend([roman(" ["), italic(name), roman("]...")]);
    }
    // No option broken by hyphenation.
    r.control("nh", []);
    r.text(line);
    r.control("hy", []);
    r
}

/// Renders `sections`: (title, paragraphs), a paragraph `TAG :: TEXT` a
/// tagged one.
fn sections(r: &mut Roff, sections: &[(&str, &[&str])]) {
    for (title, paragraphs) in sections {
        r.control("SH", [*title]);
        for (i, p) in paragraphs.iter().enumerate() {
            match p.split_once(" :: ") {
                // A tagged paragraph: the tag in bold, then the text.
                Some((tag, text)) => {
                    r.control("TP", []);
                    r.text([bold(tag)]);
                    r.text([roman(text)]);
                }
                None => {
                    if i > 0 {
                        r.control("PP", []);
                    }
                    r.text([roman(*p)]);
                }
            }
        }
    }
}

/// The man page's own sections: (title, paragraphs); a paragraph
/// `TAG :: TEXT` is a tagged one.
const MAN_SECTIONS: &[(&str, &[&str])] = &[
    (
        "FIGURES",
        &[
            "Every inode is counted once in every directory that holds at least one of its links, \
             as du -s run on that directory alone would count it, so a figure never depends on the \
             order of the scan.",
            "Total :: Allocated bytes (st_blocks x 512), directories included: what du prints. \
             With --apparent-size the Apparent column (the sum of st_size) takes its place.",
            "Exclusive :: The bytes of data that belong to one file alone: Total less the bytes \
             of the extents that the filesystem flags as shared (FIEMAP_EXTENT_SHARED). Not yet \
             allocated (delayed) data counts as exclusive, and so does Btrfs inline data \
             unless a snapshot in the scan shares the same inode, unchanged.",
            "Shared :: The size of the shared data that some file under the entry references, \
             counted once however many files, clones or snapshots reference it. \
             Exclusive + Shared is the space the entry's data really occupies; \
             Total - Exclusive - Shared is what sharing saves inside it.",
            "Reclaimable :: What deleting the entry would free, as far as the scan can see: the \
             exclusive bytes of the inodes whose links all lie under it, plus the shared data \
             whose references seen in the scan all lie under it. Shared data referenced only once \
             in the scan is shared with something outside it and is never reclaimable.",
        ],
    ),
    (
        "EXACT OR A BOUND",
        &[
            "Reclaimable is exact when the scan covers the whole filesystem (its PATH is the \
             filesystem's root: on Btrfs the top-level subvolume's root directory, elsewhere a \
             mount of the filesystem's root; nothing excluded, every entry read, no mount inside \
             hiding a directory), or when sdu runs as root (CAP_SYS_ADMIN) and asks the \
             filesystem who else holds each shared range: Btrfs BTRFS_IOC_LOGICAL_INO_V2, XFS \
             FS_IOC_GETFSMAP, which needs the reverse-mapping btree (mkfs.xfs -m rmapbt=1; \
             without it sdu warns once). Otherwise it is a bound:",
            "at most :: Data it counts may also be held outside the scan (a snapshot, a copy, an \
             excluded entry): deleting may free less.",
            "at least :: On Btrfs without root, FIEMAP shows only the part of an extent a file \
             references, and Btrfs keeps the extent whole: deleting may free more. On a scan \
             of the whole filesystem whose bytes on disk equal the filesystem's Data Used, no \
             extent is referenced in part and the figures are exact, but where FIEMAP cannot \
             tell extents apart: a shared range freed without the one laid end to end after \
             or before it (the two may be one extent) is at most; a shared range FIEMAP gives \
             as one (it may be several extents) is at least where a deletion takes every file \
             mapping some of its bytes and not every file mapping it.",
            "The table, --tree, the -c total, the --to-free plan, the browser and the --html \
             page put a mark before a bound Reclaimable: \u{2264} at most, \u{2265} at least, \
             ~ either way (both reasons under it, or a saved scan that says nothing of \
             sharing), as \u{2264}644M; in a locale that is not UTF-8, <=, >= and ~. After \
             the table, one line for each mark printed says what it means (not with \
             --no-header or -0). --du output never changes: with --du reclaimable, one line on \
             stderr says when a figure printed is a bound, and which way. In --json every \
             entry, the -c total and the --to-free plan carry reclaimable_exact (true or \
             false) and, when false, reclaimable_bound: at_most, at_least or unknown; as root \
             on Btrfs an entry carries unreachable, the bytes on disk of its extents that no \
             file references (kept until the extent's last reference goes), when not 0. The \
             browser's i says frees up to, frees at least or frees about before a bound. \
             --stats ends with a reclaimable line saying whether the figures are exact, and \
             why not.",
        ],
    ),
    (
        "RUNNING AS DU",
        &[
            "Installed under the name du (a symbolic link: ln -s \"$(command -v sdu)\" \
             /usr/local/bin/du, or any directory before /usr/bin in PATH), sdu is GNU du: it \
             runs as --du total, prints du's SIZE<TAB>PATH lines in du's units, counts as du \
             counts (an inode once per run, at the first of its links du's depth-first \
             traversal meets; a PATH given twice, or inside an earlier one, is not listed \
             again; siblings in the order the directory returns them), begins its messages \
             with du:, and words its usage errors as du does (invalid maximum depth '-1', \
             Try 'du --help' for more information.), exiting 1. Every option of GNU du 9.1 is \
             there, and sdu's own options still work. sdu --du FIGURE does the same with the \
             chosen figure, under the name sdu.",
            "du's options that sdu's table knows too :: --inodes adds an Inodes column; --time \
             a Time column (the newest time of anything counted in the entry); -t SIZE hides \
             entries by the first column as --min-size does, a negative SIZE those larger than \
             it; -S, -D, -H, -P, -X and --files0-from mean what they mean to du. The table \
             keeps sdu's own counting: every directory's figures are what du -s prints for it \
             alone.",
            "SIZE and the block sizes :: As gnulib reads them: a number (0x hexadecimal, a \
             leading 0 octal) and a unit, K or k 1024, KB 1000, KiB 1024, M or m, G, T, P, E \
             and so on; a unit alone (-BK, -BKiB, -BkB) is one of it and is printed after each \
             number (4K, 4KiB, 5kB). -B also takes human-readable and si, and a leading ' \
             (thousands separators: none are printed, as in the C locale).",
            "--time-style STYLE :: full-iso (2024-07-14 17:31:59.123456789 +0000), long-iso \
             (the default: 2024-07-14 17:31), iso (2024-07-14), or +FORMAT as date's; \
             TIME_STYLE when not given. Times are in the zone TZ names.",
        ],
    ),
    (
        "SORTING AND SELECTING",
        &[
            "By default entries are listed in du's order: every directory after its contents, \
             siblings by name. With --sort the list is flat and ordered by the figure, largest \
             first, ties by path (like du | sort -rh), or by path with --sort name.",
            "--top N keeps the N largest entries by the --sort figure (Total, or Apparent with \
             --apparent-size, when there is no --sort or with --sort name) and, without --sort, \
             lists them largest first. --min-size SIZE hides the entries whose figure is \
             smaller. Both apply to the entries -s, -d and -a select, in text, JSON, --du and \
             --tree alike, and the -c total is always printed. A hidden entry still counts in its \
             parent's figures.",
            "--tree prints each directory above its contents, siblings largest first (by name \
             with --sort name), with a bar and a percentage of the figure relative to the root. \
             Since a directory's figures are never smaller than those of anything under it, the \
             entries --top and --min-size keep always include their parents. On a terminal the \
             bars take the columns the sizes and the widest branch and name leave (at least 10 \
             cells); into a pipe or a file they are 20 cells wide.",
        ],
    ),
    (
        "THE HTML PAGE",
        &[
            "--html FILE (- for standard output) writes one HTML page instead of the report: a \
             squarified treemap of the scan. A choice in the page, and --html-area for the one \
             it opens with, says what each rectangle's area is: disk, the space its data takes \
             (Exclusive + Shared, the default: du's Total counts shared data once per file, so \
             on a snapshot-heavy filesystem most of a map by Total is data counted again), \
             total, or reclaimable. The page needs no network and no server: its style, its \
             script and its data are inside it. Every file is in it, as with -a; -d N limits \
             its depth; with --import FILE it draws a saved scan.",
            "Each rectangle is split along its longer side into what is exclusive (solid blue), \
             shared and freed with it (blue hatching), shared and held elsewhere too (orange \
             hatching, the other way) and counted again, du's extra count of shared data \
             (light grey, by Total only): the two blue parts are its Reclaimable. A \
             directory's parts are cut to the outlines of the entries drawn inside it; the rest \
             of a directory, its entries too small to draw, is dotted and labelled in italics \
             in parentheses, \"(37 smaller entries)\". The hatching tells shared \
             data apart in print and without colour; blue and orange stay apart for the common \
             kinds of colour blindness.",
            "Click a directory (or focus it and press Enter) to zoom in; the breadcrumb, Escape \
             or Backspace lead back. Hovering or focusing a rectangle shows its path and its \
             four figures. Beside the map a table lists the view's five largest entries.",
            "The largest entries are drawn, down to 12 square pixels of their directory's \
             frame (the 960 by 600 map the directory fills when zoomed into) and at most \
             12,000 of them; the rest of a directory, its smaller entries and its own blocks, \
             is one rectangle, other. A copy of /usr of 130,000 entries makes a page of about \
             1 MB.",
        ],
    ),
    (
        "FILE NAMES",
        &[
            "On a terminal, the table, the tree view and the --to-free table show each name as \
             ls shows it there (its default shell-escape quoting): a name the shell reads as it \
             is stays as it is, any other is quoted, with control characters and bytes that are \
             not characters of the locale escaped, as in 'a b', 'cls'$'\\033''[2J' or \
             'ff'$'\\377''x'. So a name cannot send the terminal escape sequences or break a \
             line, and the quoted text, pasted into a shell, names the file.",
            "Into a pipe or a file, the table's names are printed as they are, as du prints \
             them, while the tree view quotes them still (it is a drawing: a newline in a name \
             must not break it); -0 or --json (where a name that is not UTF-8 is base64) read \
             them exactly. du's lines \
             (--du, or sdu run as du) are never quoted, as du's are not. Messages on stderr \
             always quote names, as du's do.",
        ],
    ),
    (
        "FILESYSTEMS",
        &[
            "Data can be shared on XFS (with reflink, the default since xfsprogs 5.1), Btrfs \
             (reflinks, snapshots, deduplication), OCFS2 and bcachefs; sdu asks the kernel for \
             each file's extents there (the FIEMAP ioctl) and indexes the shared ones. On ext4, \
             tmpfs, NFS, CIFS/SMB and every other filesystem nothing can be shared (or FIEMAP is \
             missing or meaningless): sdu does not map files there, and their data is all \
             exclusive.",
            "Btrfs subvolumes and snapshots are not mount points: -x does not stop at them, and \
             data shared between them is found.",
            "Btrfs compression: as root, sdu reads each compressed extent's size on disk, and \
             exclusive, shared and reclaimable count it at that size: exclusive + shared is \
             the space the data takes on disk, reclaimable what deleting frees. Total stays \
             du's figure, the uncompressed size, and can be several times larger. Without \
             root, FIEMAP gives a compressed extent's uncompressed length only, so exclusive, \
             shared and reclaimable count compressed data uncompressed; sdu says so once on \
             stderr with the bytes concerned, and --stats and the JSON document \
             (compressed_logical) carry the count.",
            "The index of shared extents keeps 16 bytes per mapping (a file's shared extent: \
             a backup repository of synthetic fulls has one per block of every full). Past \
             --index-memory (by default half the memory available when sdu starts) it writes \
             sorted runs to a temporary file in TMPDIR and merges them back after the walk: \
             the figures are the same, in less memory and about the same time; the file has no \
             name and goes when sdu ends. A run that cannot be written ends the scan (exit \
             status 2).",
        ],
    ),
    (
        "SAVED SCANS",
        &[
            "--export FILE writes the scan to FILE (- for standard output) instead of the \
             report, in ncdu's JSON export format: ncdu -f FILE browses it. Every file is in it \
             (as with -a), with sdu's figures in keys ncdu ignores, and after the tree the \
             records the figures are rolled up from. Names are written as ncdu writes them, \
             their bytes as they are, so a name that is not UTF-8 comes back exactly.",
            "--import FILE (- for standard input) reads such a file instead of scanning, and \
             every report works on it as on the scan: the table, --json, --du, --tree, -s, -d, \
             -a, --sort, --top, --min-size, -S, -c and --to-free, whose candidates are then \
             given by their paths in the saved scan (a root as it was given, then the names \
             below it). Options that decide how to walk (-x, -L, -l, --exclude) belong to the \
             export. A file written by ncdu itself imports too, with nothing shared: Exclusive \
             is Total, as sdu says once on stderr, and every Reclaimable is marked ~ (a bound \
             of unknown direction). A file that is truncated, not in the format \
             or inconsistent is an error naming its line and column (exit status 2), never \
             read in part; so is one holding a name no directory entry can have: . or .., a \
             name with a / or a NUL, an empty name, or a name twice in one directory (a root's \
             name is the path as given).",
            "--compare OLD (- for standard input) compares the scan of the PATHs (or the saved \
             scan --import FILE) with the saved scan OLD: for every entry the change of each \
             figure, signed (+5.0M, -30M, 0), and a Note: new (not in OLD), gone (only in OLD: \
             listed under the path it had) or sharing. Sharing changed where Exclusive moved by \
             more or less than Total: data in the entry became shared or stopped being shared. \
             When a snapshot is deleted, the data it shared with its origin becomes the \
             origin's alone: the origin's Exclusive grows while its Total does not move. Entries \
             are matched by name from each root: a root pairs with the old root of the same \
             name (an ncdu export's root, saved resolved, with the PATH that resolves to it); \
             the roots left pair in the order given when as many are left on each side, \
             as sdu says on stderr, so a scan of /mnt/a compares with a scan of the same tree \
             mounted elsewhere. The largest growth of Total comes first; --sort FIGURE \
             orders by the growth of FIGURE, --top N keeps the N first, --min-size hides the \
             entries none of whose figures moved by as much, -d, -s and -a choose the \
             entries, -c adds a total. A change of \
             Reclaimable is marked where either side is a bound: \u{2264} or \u{2265} by the \
             new side's direction and the old side's reversed, ~ when they differ. --json prints, for each \
             entry, the old figures, the new and the change. An OLD that sdu did not write \
             (ncdu -o) compares on Total and the apparent size only, as sdu says on stderr; an \
             OLD that is not a saved scan, is truncated or was written by a newer sdu is refused \
             (exit status 2). In the browser (sdu -i --compare OLD) a Change column shows the \
             change of the first column's figure, D sorts by it, and i gives both sides.",
        ],
    ),
    (
        "PERMISSIONS",
        &[
            "Nothing needs root. sdu reads directories and stats entries as du does, and maps \
             the extents of the files it can open for reading. An entry that cannot be read is \
             reported and counted (exit status 1), and the table and --tree mark the \
             directories it leaves unread in a Flag column before the path, as ncdu and the \
             browser do: ! could not be read, . read in part (an entry in it or below it could \
             not be read); --du's lines stay du's. A file that can be stat-ed but not opened is \
             counted as exclusive, with a warning. Without root, Reclaimable of a part of a \
             filesystem is a bound (EXACT OR A BOUND).",
            "As root (CAP_SYS_ADMIN) on Btrfs, sdu reads a file's extent items with the tree \
             search (BTRFS_IOC_TREE_SEARCH_V2) on its directory instead of opening it for \
             FIEMAP, and decides from the extent tree's refs whether each extent is shared, as \
             FIEMAP would: the figures are the same, but for compressed extents, counted at \
             their size on disk, and extents a file references in part, counted whole. When the \
             scan is not the whole filesystem, sdu asks each shared extent's holders \
             (LOGICAL_INO_V2), so that Reclaimable is exact (inline data shared with a \
             snapshot outside the scan excepted: it has no disk address to ask about); as root \
             on XFS with rmapbt, GETFSMAP answers the same question. The tree also lists each directory and gives each entry's \
             figures (its inode item), instead of getdents and statx; statx still stats \
             another subvolume's root, a mount point inside the scan (from \
             /proc/self/mountinfo), and an entry the tree does not agree on. It first syncs \
             the filesystem, once (syncfs, as sync -f does), and commits its running \
             transaction (as btrfs filesystem sync does), so that the tree holds every \
             reference and every byte du counts. Where the refs cannot tell (an extent whose one ref may be \
             shared through a tree block snapshots share), that file is mapped with FIEMAP; \
             --stats counts them. --fiemap uses FIEMAP for every file.",
            "Without root on Btrfs, a file unchanged across snapshots (the same inode number, \
             birth and change times, size and blocks, in subvolumes that are snapshots of one \
             another) is mapped with FIEMAP once, and its other copies are credited with the \
             extents it gave. A file of a snapshot that changed less than 100 ms before the \
             snapshot was made is mapped on its own: inode times move in clock ticks, and a \
             write to its origin in the same tick would leave its change time as it was. A \
             deduplication (FIDEDUPERANGE) run on one copy after the snapshot changes its \
             extents without changing its change time, which sdu cannot see without root; \
             --map-each-copy maps every copy.",
        ],
    ),
    (
        "ENVIRONMENT",
        &[
            "DU_BLOCK_SIZE, BLOCK_SIZE, BLOCKSIZE :: The unit sizes are printed in when no unit \
             flag (-h, --si, -k, -m, -b, -B) is given, read as GNU du reads it: the first of the \
             three that is set counts, even when empty. The value is a SIZE as for -B, or \
             human-readable or si (or an abbreviation, such as h), optionally after a ' (which \
             asks for thousands separators; sdu prints none, as du in the C locale). An invalid \
             value is ignored without a word, as du ignores it: the number du read of it counts \
             (1X is 1), else the default applies. The \
             variable sets the unit of the table and the tree view as well as that of --du, as \
             a unit flag given before all the others would: any unit flag on the command line \
             wins.",
            "POSIXLY_CORRECT :: When set (even empty), the default unit of --du is the 512-byte \
             block, as du's is. The table's default, human-readable sizes, is not du's format \
             and does not change.",
            "TIME_STYLE :: The --time-style of --time when none is given (du's rules: locale \
             is long-iso, a +FORMAT ends at its first newline, posix- prefixes are dropped).",
            "TZ :: The time zone of --time, as glibc reads it; unset, the system's.",
            "TMPDIR :: Where the index of shared extents spills past --index-memory; unset or \
             empty, /tmp. Used only when a spill is needed.",
            "SOURCE_DATE_EPOCH :: When set and not empty, the time --export writes as the \
             scan's timestamp, in seconds since the epoch (else the time now), so that a scan \
             of an unchanged tree is the same file, byte for byte. A value that is not a number \
             of seconds is refused before the scan (exit status 2).",
            "NO_COLOR :: When set and not empty, the tree view is not coloured unless \
             --color=always asks for it (the NO_COLOR convention lets a flag win). By default \
             (--color=auto) it is coloured only when standard output is a terminal.",
        ],
    ),
];

/// DELETING: what the browser's d does, and what it guards against (the
/// guarantees of docs/SECURITY.md).
const DELETING: &[(&str, &[&str])] = &[(
    "DELETING",
    &[
        "sdu changes nothing, but in one place: the browser (-i) deletes the entries marked \
         with Space when d is pressed and yes is typed in full. Every other mode, --to-free \
         included, only reads.",
        "What is deleted :: Each marked entry and everything under it, as rm -r would: a \
         directory is emptied through its own file descriptor and removed, anything else \
         unlinked (a symbolic link itself, never its target); a Btrfs subvolume of the same \
         filesystem is destroyed as a subvolume. The browser then scans again.",
        "Only what was scanned :: The scan records every entry's device, inode number and \
         mount. Deleting opens the PATH, then each name below it one at a time, without \
         following a symbolic link, and every level must be the inode the scan saw there, in \
         the mount it saw; the entry itself must be of the type and identity the scan saw. A \
         symbolic link swapped in, a directory renamed over another or a mount made since the \
         scan stops the deletion before anything under that level is removed, with a message \
         naming the level and what changed.",
        "Never across a mount :: A mount point inside a marked directory (a bind mount of the \
         same filesystem included) refuses its deletion before anything is removed; a \
         mount made while deleting is not entered. The marked entry may not be a mount point \
         itself. -x changes nothing here.",
        "Only keys typed for it :: Terminal input typed ahead is discarded before a \
         confirmation is shown, so a d yes typed before the dialog appeared never confirms \
         it; keys typed during a deletion are dropped.",
        "Stopping :: The first error stops the deletion; nothing is retried around it. An \
         entry already gone (deleted or renamed since the scan) is no error: it counts as \
         done and the others go on. Entries added inside a marked directory after the scan \
         go with it and the result lists them apart (also deleted: N entries, SIZE, not in \
         the scan). Ctrl-C \
         stops it between two entries (exit status 130). Every deletion's result is printed \
         in full on standard error when the browser exits.",
        "What it cannot promise :: Between the last check of an entry and its removal, a \
         user who can write in its directory can replace it by another entry of the same \
         type; sdu then removes that one, as rm -r would. That only ever removes a name \
         inside the marked tree. docs/SECURITY.md gives every guarantee and its test.",
    ],
)];

/// KEYS: the browser's keys.
const BROWSER_KEYS: &[(&str, &[&str])] = &[(
    "KEYS",
    &[
        "The keys of the browser, sdu -i, in sdu's profile (the default); --keys ncdu (or \
             --keys ncdu in a config file) makes a ncdu's apparent size, t directories \
             first and g cycle graph, percentage, both and none, as in ncdu, with f for files \
             and Home End G for the ends; sdu's B cycles the bar as ncdu's g does. \
             ncdu's keys keep their meaning where sdu has the \
             same thing; sdu's own figures take keys ncdu leaves free. The sort keys pressed \
             again reverse the order. Each row has a flag column before its sizes, as ncdu: \
             ! a directory that could not be read, . one read in part (an entry in it or \
             below it could not be read; i gives the error), @ neither a file nor a \
             directory, e an empty directory, x (with --compare OLD) an entry gone since OLD, \
             listed in its parent with its old figures.",
        "Up Down, k j :: Move; PgUp PgDn by a screen; Home End (g G) to the ends.",
        "Right, Enter, l :: Open the directory under the cursor.",
        "Left, Backspace, h, < :: Go up.",
        "s :: Sort by size: the first column, Total (or Apparent).",
        "t x S R :: Sort by Total, Exclusive, Shared, Reclaimable, largest first.",
        "n C M :: Sort by name (A to Z), item count (most first), modification time (newest \
             first).",
        "D :: With --compare OLD: sort by the change since OLD (largest growth first).",
        "A :: Apparent size (the sum of st_size) in place of Total, and back.",
        "c m :: Show or hide the column of item counts (files and directories under the \
             entry), of modification times (the newest under the entry).",
        "a :: Show or hide files.",
        "e :: Show or hide hidden entries (names starting with a dot).",
        "/ :: Filter by name: type a part of the name, Enter applies, Esc clears.",
        "i :: The entry in full: its path quoted, type, the four figures and whether \
             Reclaimable is exact, apparent size, item count, unreachable bytes (as root on \
             Btrfs), the errors met reading it, and its inode, links and modification time \
             read again now.",
        "Space :: Mark or unmark the entry and move on; the footer says what deleting every \
             marked entry frees. u unmarks everything.",
        "d :: Delete the marked entries (or the one under the cursor) after yes is typed and \
             Enter pressed. Not on a saved scan (--import).",
        "r :: Scan again (everything scanned: shared data crosses directories), keeping the \
             directory shown, the cursor and the marks that still exist.",
        "b :: A shell ($SHELL, else /bin/sh) in the directory shown, once it is checked to \
             be the directory scanned; SDU_LEVEL counts the nesting. sdu waits for it, then \
             scans again. Neither r nor b works on a saved scan.",
        "p :: The table of the Btrfs snapshots of the scan (as --snapshots prints it): \
             Space marks a subvolume, Enter goes to it; p, Esc or q goes back.",
        "F :: The --df table of the filesystem browsed: a scan of its whole mount, the rows \
             that add up to df's Used; any key closes it. Not on a saved scan.",
        "? :: The keys of the profile in use; any key closes it.",
        "q, Ctrl-C :: Quit. Esc quits in neither profile (nor in ncdu): it closes a box, \
             drops the filter being typed or the one applied, else does nothing.",
        "When the screen is narrow the name keeps at least 16 cells: the bar goes first, \
             then the percentage, then the Shared, Exclusive, time, count and Reclaimable \
             columns; a longer name is shortened in the middle (...), and i shows it whole.",
    ],
)];

/// FILES: the config files ([`super::config`]).
const FILES: &[(&str, &[&str])] = &[(
    "FILES",
    &[
        "/etc/sdu.conf, then $XDG_CONFIG_HOME/sdu/config (else ~/.config/sdu/config) :: \
             Defaults, as ncdu's config files hold them: one option a line, spelled as on \
             the command line (--keys ncdu, -x, --exclude .git, --color=dark); # starts a \
             comment, and @ before an option lets its line fail quietly. A file may hold \
             the browser's options (--keys, --show-* and --hide-* of itemcount, mtime, \
             graph and percent, --group-directories-first), --sort, --exclude, -X, \
             --exclude-caches, --exclude-kernfs, -x, -j and --color, each with its \
             opposite (--cross-file-system, --include-caches, --include-kernfs). The \
             user's file wins over the system's and the command line over both; \
             --exclude patterns add up. Any other line is a usage error naming the file \
             and the line (exit 2); a file this user may not read (HOME another user's) \
             gives nothing. --ignore-config reads neither; as du, or with --du, \
             neither is read, as du reads none.",
    ],
)];

/// EXIT STATUS: sdu's statuses ([`ExitStatus`]).
const EXIT_STATUS: &[(&str, &[&str])] = &[(
    "EXIT STATUS",
    &[
        "0 :: Everything was read.",
        "1 :: Some entries could not be read (each is named on stderr); the figures of the \
             rest are printed.",
        "2 :: A usage error or a fatal error (for example, the report could not be written, \
             a saved scan could not be read, or the index of shared extents could not spill to \
             TMPDIR). \
             As du, or with --du, a usage error exits 1, as du's. \
             --to-free exits 2, with nothing on standard output, when a candidate or a PATH \
             cannot be accessed, is given twice, lies inside another candidate or is not in \
             the scan: a plan made without it would read as the plan.",
        "3 :: --to-free SIZE: the candidates together cannot free SIZE. The message on \
             stderr says what all of them free; with --json the plan is printed all the same, \
             with \"reached\": false.",
        "130 :: Ctrl-C stopped a deletion in the browser (-i) between two entries; what was \
             removed is printed on standard error.",
        "A closed pipe on standard output (sdu | head) is no error: sdu stops writing and \
             exits with the status above, saying nothing. As du, or with --du, it is killed by \
             SIGPIPE, as du is (a shell reports 141).",
    ],
)];

/// SEE ALSO, last before the version.
const SEE_ALSO: &[(&str, &[&str])] = &[(
    "SEE ALSO",
    &["du(1), ncdu(1), btrfs-filesystem(8), compsize(8), xfs_io(8)"],
)];
