
use builtin;
use str;

set edit:completion:arg-completer[sdu] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'sdu'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'sdu'= {
            cand -d 'Print the total for a directory only if it is N or fewer levels below the argument'
            cand --max-depth 'Print the total for a directory only if it is N or fewer levels below the argument'
            cand -n 'Keep only the N largest entries (by the --sort figure, else Total); listed largest first unless --sort says otherwise'
            cand --top 'Keep only the N largest entries (by the --sort figure, else Total); listed largest first unless --sort says otherwise'
            cand --min-size 'Hide entries smaller than SIZE (by the --sort figure, else Total), e.g. 100M, 1G; hidden entries still count in their parents'
            cand --to-free 'Plan, among the PATHs, a set whose deletion frees at least SIZE (e.g. 50G), with as few entries as possible; prints what each adds and what they free together, counting shared data once. PATHs inside another PATH given are the candidates, seen in its scan (sdu --to-free 50G /mnt /mnt/snaps/*: what the live data shares stays). Deletes nothing'
            cand -t 'Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative (by the --du figure, else Total; as du''s)'
            cand --threshold 'Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative (by the --du figure, else Total; as du''s)'
            cand --older-than 'List only entries whose newest modification (or --time=WORD''s time) is older than WHEN: a DURATION ago (30d, 12h, 2w, 1y; s, m, h, d, w, y) or a DATE (2024-07-14, 2024-07-14 17:31, in TZ''s zone). A directory''s time is the newest of anything in it'
            cand --exclude 'Exclude entries that match PATTERN (a shell glob, matched as du does)'
            cand -X 'Exclude entries that match any pattern in FILE (one per line)'
            cand --exclude-from 'Exclude entries that match any pattern in FILE (one per line)'
            cand --files0-from 'Measure the NUL-terminated file names listed in file F (- for standard input) instead of PATHs'
            cand -B 'Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)'
            cand --block-size 'Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)'
            cand --sort 'List the entries by FIGURE, largest first (or by path), instead of du''s order; the tree view sorts siblings'
            cand --du 'Print only FIGURE in du''s own format, SIZE<TAB>PATH, with du''s units (1K blocks unless -h, -B, ... or the environment say otherwise)'
            cand --time 'Show the time of the last modification of any file in the entry (or, with WORD, atime, access, use, ctime or status)'
            cand --time-style 'Show times using STYLE: full-iso, long-iso (the default), iso, or +FORMAT (as date''s); the TIME_STYLE variable when not given'
            cand --html 'Write a zoomable treemap of the scan to FILE (- for standard output) instead of the report: one HTML page that needs no network and no server; every file is in it (as with -a), -d limits its depth'
            cand --html-area 'What each rectangle''s area of the --html page stands for when it opens (the page can switch): the space on disk (Exclusive + Shared, shared data counted once; the default), du''s Total, or Reclaimable'
            cand --color 'Colour the tree view: auto (when stdout is a terminal and NO_COLOR is unset or empty), always, or never'
            cand -j 'Worker threads [default: the number of CPUs, or 8 when the tree is not in memory (cold cache): threads that wait on the disk; 4 on XFS, where more wait on each other''s inode reads, and as root on Btrfs, where one search reads many inodes]'
            cand --threads 'Worker threads [default: the number of CPUs, or 8 when the tree is not in memory (cold cache): threads that wait on the disk; 4 on XFS, where more wait on each other''s inode reads, and as root on Btrfs, where one search reads many inodes]'
            cand --index-memory 'Memory for the index of shared extents (16 bytes a mapping): past SIZE (e.g. 2G) it spills sorted runs to a temporary file in TMPDIR, else /tmp [default: half the available memory]'
            cand --export 'Write the scan to FILE (- for standard output) instead of the report, in ncdu''s JSON export format with sdu''s figures added: ncdu -f FILE browses it, sdu --import FILE reports on it'
            cand --import 'Read a scan saved with --export (or ncdu -o) from FILE (- for standard input) instead of scanning; every report and --to-free work on it. PATHs are then --to-free candidates, by their paths in the saved scan'
            cand --compare 'Compare with the saved scan OLD (--export''s, or ncdu -o''s): for every entry the change of each figure since OLD, and whether it is new, gone, or its sharing changed (Exclusive moved by more or less than Total: a snapshot deleted leaves its data to its origin, whose Exclusive grows while Total does not); largest growth of Total first (--sort, --top, -d, -a, -s apply). Entries match by name from each root, so a scan of the tree mounted elsewhere compares. The new scan is PATHs, or --import FILE'
            cand --generate 'Print the man page or a shell completion script, and exit'
            cand -s 'Display only a total for each argument (same as -d 0)'
            cand --summarize 'Display only a total for each argument (same as -d 0)'
            cand -a 'Write counts for all files, not just directories'
            cand --all 'Write counts for all files, not just directories'
            cand --oldest-first 'With --to-free: take the candidates oldest first, as snapshots are pruned, until they free SIZE together. The age: a Btrfs subvolume root''s creation time (otime), else the modification time'
            cand --newest-first 'With --to-free: take the candidates newest first (see --oldest-first)'
            cand --snapshots 'List the Btrfs subvolumes of the scan by origin, each snapshot oldest first: created, Total, Exclusive, what deleting it frees alone and with every older snapshot of its origin; --sort, --top, --min-size choose among an origin''s snapshots by Frees alone (reclaimable, the default), total, exclusive or path (name). With --to-free: which snapshots free SIZE'
            cand --df 'For the filesystem holding each PATH (default .), a table whose rows add up to df''s Used'
            cand --files-only 'List files alone (every non-directory, as -a finds them), no directory: --sort, --top and --min-size then pick among files'
            cand -S 'For directories do not include the size of subdirectories'
            cand --separate-dirs 'For directories do not include the size of subdirectories'
            cand -x 'Skip directories on different file systems'
            cand --one-file-system 'Skip directories on different file systems'
            cand -L 'Dereference all symbolic links'
            cand --dereference 'Dereference all symbolic links'
            cand -D 'Dereference only symlinks that are listed on the command line'
            cand --dereference-args 'Dereference only symlinks that are listed on the command line'
            cand -H 'Equivalent to --dereference-args (-D)'
            cand -P 'Don''t follow any symbolic links (the default; the last of -L, -P, -H and -D wins)'
            cand --no-dereference 'Don''t follow any symbolic links (the default; the last of -L, -P, -H and -D wins)'
            cand -l 'Count sizes many times if hard linked'
            cand --count-links 'Count sizes many times if hard linked'
            cand --exclude-caches 'Exclude directories holding a cache directory tag: a regular file named CACHEDIR.TAG that starts with Signature: 8a477f597d28d172789f06886806bc55 (as ncdu''s --exclude-caches and GNU tar''s --exclude-caches-all; a PATH given is measured all the same)'
            cand --exclude-kernfs 'Exclude directories on Linux''s kernel filesystems (proc, sysfs, cgroup, cgroup2, debugfs, tracefs, securityfs, pstore, bpf, selinuxfs, binfmt_misc, devpts), by their statfs type, as ncdu does; a PATH given is measured all the same'
            cand --inodes 'List inode usage instead of block usage (--du: the inodes figure; the table: an Inodes column)'
            cand -A 'Print apparent sizes rather than disk usage (the Apparent column, --sort total and --du total then mean the apparent size)'
            cand --apparent-size 'Print apparent sizes rather than disk usage (the Apparent column, --sort total and --du total then mean the apparent size)'
            cand -b 'Equivalent to --apparent-size --block-size=1'
            cand --bytes 'Equivalent to --apparent-size --block-size=1'
            cand -k 'Like --block-size=1K'
            cand -m 'Like --block-size=1M'
            cand -h 'Print sizes in human readable format, powers of 1024 (the default, except with --du or a block size in the environment)'
            cand --human-readable 'Print sizes in human readable format, powers of 1024 (the default, except with --du or a block size in the environment)'
            cand --si 'Like -h, but use powers of 1000'
            cand --reverse 'List in the opposite order: smallest first (--sort FIGURE, or --top), paths from last to first (--sort name), du''s order read backwards without either; the tree view reverses each directory''s entries'
            cand --tree 'Print an indented tree with a bar per entry, largest first'
            cand -i 'Browse the tree full-screen after the scan: the four figures of every entry, sorted as asked; mark entries (Space) to see what deleting all of them frees, shared data counted once; d deletes them after you type yes, never following a symlink or leaving the filesystem (? lists the keys)'
            cand --interactive 'Browse the tree full-screen after the scan: the four figures of every entry, sorted as asked; mark entries (Space) to see what deleting all of them frees, shared data counted once; d deletes them after you type yes, never following a symlink or leaving the filesystem (? lists the keys)'
            cand --json 'Print one JSON document (all sizes in bytes)'
            cand -c 'Produce a grand total'
            cand --total 'Produce a grand total'
            cand -0 'End each output line with NUL, not newline (no header)'
            cand --null 'End each output line with NUL, not newline (no header)'
            cand --no-header 'Do not print the header line'
            cand --no-progress 'Do not show progress on stderr (shown only when stderr is a terminal and the scan takes a moment)'
            cand --fiemap 'Read every file''s extents with FIEMAP, even where sdu could read Btrfs''s extent items directly (as root, with CAP_SYS_ADMIN)'
            cand --map-each-copy 'Btrfs without root: map every copy of a file that is unchanged across snapshots with its own FIEMAP, instead of once (slower; exact even after a deduplication that ran on one copy after the snapshot)'
            cand --stats 'Print counts and timings of the scan on stderr (files mapped with FIEMAP, files skipped and why, shared extents indexed)'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
