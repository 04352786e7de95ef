complete -c sdu -s d -l max-depth -d 'Print the total for a directory only if it is N or fewer levels below the argument' -r
complete -c sdu -s n -l top -d 'Keep only the N largest entries (by the --sort figure, else Total); listed largest first unless --sort says otherwise' -r
complete -c sdu -l min-size -d 'Hide entries smaller than SIZE (by the --sort figure, else Total), e.g. 100M, 1G; hidden entries still count in their parents' -r
complete -c sdu -l to-free -d 'Plan, among the PATHs, a set whose deletion frees at least SIZE (e.g. 50G), with as few entries as possible; prints what each adds and what they free together, counting shared data once. PATHs inside another PATH given are the candidates, seen in its scan (sdu --to-free 50G /mnt /mnt/snaps/*: what the live data shares stays). Deletes nothing' -r
complete -c sdu -s t -l threshold -d 'Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative (by the --du figure, else Total; as du\'s)' -r
complete -c sdu -l older-than -d 'List only entries whose newest modification (or --time=WORD\'s time) is older than WHEN: a DURATION ago (30d, 12h, 2w, 1y; s, m, h, d, w, y) or a DATE (2024-07-14, 2024-07-14 17:31, in TZ\'s zone). A directory\'s time is the newest of anything in it' -r
complete -c sdu -l exclude -d 'Exclude entries that match PATTERN (a shell glob, matched as du does)' -r
complete -c sdu -s X -l exclude-from -d 'Exclude entries that match any pattern in FILE (one per line)' -r -F
complete -c sdu -l files0-from -d 'Measure the NUL-terminated file names listed in file F (- for standard input) instead of PATHs' -r -F
complete -c sdu -s B -l block-size -d 'Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)' -r
complete -c sdu -l sort -d 'List the entries by FIGURE, largest first (or by path), instead of du\'s order; the tree view sorts siblings' -r -f -a "apparent\t''
total\t''
exclusive\t''
shared\t''
reclaimable\t''
inodes\t''
name\t''"
complete -c sdu -l du -d 'Print only FIGURE in du\'s own format, SIZE<TAB>PATH, with du\'s units (1K blocks unless -h, -B, ... or the environment say otherwise)' -r -f -a "apparent\t''
total\t''
exclusive\t''
shared\t''
reclaimable\t''
inodes\t''"
complete -c sdu -l time -d 'Show the time of the last modification of any file in the entry (or, with WORD, atime, access, use, ctime or status)' -r
complete -c sdu -l time-style -d 'Show times using STYLE: full-iso, long-iso (the default), iso, or +FORMAT (as date\'s); the TIME_STYLE variable when not given' -r -f -a "full-iso\t''
long-iso\t''
iso\t''
+FORMAT\t''"
complete -c sdu -l html -d 'Write a zoomable treemap of the scan to FILE (- for standard output) instead of the report: one HTML page that needs no network and no server; every file is in it (as with -a), -d limits its depth' -r -F
complete -c sdu -l html-area -d 'What each rectangle\'s area of the --html page stands for when it opens (the page can switch): the space on disk (Exclusive + Shared, shared data counted once; the default), du\'s Total, or Reclaimable' -r -f -a "disk\t''
total\t''
reclaimable\t''"
complete -c sdu -l color -d 'Colour the tree view: auto (when stdout is a terminal and NO_COLOR is unset or empty), always, or never (ncdu\'s dark and dark-bg are auto, off is never)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c sdu -s j -l threads -d 'Worker threads [default: the number of CPUs, or 8 when the tree is not in memory (cold cache): threads that wait on the disk; 4 on XFS, where more wait on each other\'s inode reads, and as root on Btrfs, where one search reads many inodes]' -r
complete -c sdu -l index-memory -d 'Memory for the index of shared extents (16 bytes a mapping): past SIZE (e.g. 2G) it spills sorted runs to a temporary file in TMPDIR, else /tmp [default: half the available memory]' -r
complete -c sdu -l export -d 'Write the scan to FILE (- for standard output) instead of the report, in ncdu\'s JSON export format (or another, --export-format) with sdu\'s figures added: ncdu -f FILE browses it, sdu --import FILE reports on it' -r -F
complete -c sdu -l export-format -d 'The format --export writes: json (ncdu -o), json-zstd (ncdu -c -o: the JSON compressed with zstd) or binary (ncdu 2.6\'s -O: sdu\'s figures ride along, so sdu --import reads it as the JSON). --import and --compare read all three, told by their first bytes' -r -f -a "json\t''
json-zstd\t''
binary\t''"
complete -c sdu -l since -d 'Start from the saved scan SCAN (sdu\'s --export, JSON or json-zstd): a file whose device, inode, ctime, size and blocks are those saved reuses the extent map saved with it, without being opened or mapped. The figures are a full scan\'s; where nothing proves the maps current (a dedupe keeps a file\'s times), Reclaimable is marked' -r -F
complete -c sdu -l import -d 'Read a scan saved with --export (or ncdu -o) from FILE (- for standard input) instead of scanning; every report and --to-free work on it. PATHs are then --to-free candidates, by their paths in the saved scan' -r -F
complete -c sdu -l compare -d 'Compare with the saved scan OLD (--export\'s, or ncdu -o\'s): for every entry the change of each figure since OLD, and whether it is new, gone, or its sharing changed (Exclusive moved by more or less than Total: a snapshot deleted leaves its data to its origin, whose Exclusive grows while Total does not); largest growth of Total first (--sort, --top, -d, -a, -s apply). Entries match by name from each root, so a scan of the tree mounted elsewhere compares. The new scan is PATHs, or --import FILE' -r -F
complete -c sdu -l keys -d 'The browser\'s keys: ncdu (a apparent size, t directories first, g graph and percentage, f files) or sdu (the default: a files, t Total, g first entry)' -r -f -a "sdu\t'sdu\'s: `t x S R` sort by the four figures, `a` shows or hides files, `g` `G` go to the first and last entry'
ncdu\t'ncdu\'s: `a` apparent size, `t` directories first, `g` graph and percentage; Esc quits in neither'"
complete -c sdu -l generate -d 'Print the man page or a shell completion script, and exit' -r -f -a "man\t''
bash\t''
zsh\t''
fish\t''
elvish\t''
powershell\t''"
complete -c sdu -s s -l summarize -d 'Display only a total for each argument (same as -d 0)'
complete -c sdu -s a -l all -d 'Write counts for all files, not just directories'
complete -c sdu -l oldest-first -d 'With --to-free: take the candidates oldest first, as snapshots are pruned, until they free SIZE together. The age: a Btrfs subvolume root\'s creation time (otime), else the modification time'
complete -c sdu -l newest-first -d 'With --to-free: take the candidates newest first (see --oldest-first)'
complete -c sdu -l snapshots -d 'List the Btrfs subvolumes of the scan by origin, each snapshot oldest first: created, Total, Exclusive, what deleting it frees alone and with every older snapshot of its origin; --sort, --top, --min-size choose among an origin\'s snapshots by Frees alone (reclaimable, the default), total, exclusive or path (name). With --to-free: which snapshots free SIZE'
complete -c sdu -l df -d 'For the filesystem holding each PATH (default .), a table whose rows add up to df\'s Used'
complete -c sdu -l files-only -d 'List files alone (every non-directory, as -a finds them), no directory: --sort, --top and --min-size then pick among files'
complete -c sdu -s S -l separate-dirs -d 'For directories do not include the size of subdirectories'
complete -c sdu -s x -l one-file-system -d 'Skip directories on different file systems'
complete -c sdu -s L -l dereference -d 'Dereference all symbolic links'
complete -c sdu -s D -l dereference-args -d 'Dereference only symlinks that are listed on the command line'
complete -c sdu -s H -d 'Equivalent to --dereference-args (-D)'
complete -c sdu -s P -l no-dereference -d 'Don\'t follow any symbolic links (the default; the last of -L, -P, -H and -D wins)'
complete -c sdu -s l -l count-links -d 'Count sizes many times if hard linked'
complete -c sdu -l exclude-caches -d 'Exclude directories holding a cache directory tag: a regular file named CACHEDIR.TAG that starts with Signature: 8a477f597d28d172789f06886806bc55 (as ncdu\'s --exclude-caches and GNU tar\'s --exclude-caches-all; a PATH given is measured all the same)'
complete -c sdu -l exclude-kernfs -d 'Exclude directories on Linux\'s kernel filesystems (proc, sysfs, cgroup, cgroup2, debugfs, tracefs, securityfs, pstore, bpf, selinuxfs, binfmt_misc, devpts), by their statfs type, as ncdu does; a PATH given is measured all the same'
complete -c sdu -l inodes -d 'List inode usage instead of block usage (--du: the inodes figure; the table: an Inodes column)'
complete -c sdu -s A -l apparent-size -d 'Print apparent sizes rather than disk usage (the Apparent column, --sort total and --du total then mean the apparent size)'
complete -c sdu -s b -l bytes -d 'Equivalent to --apparent-size --block-size=1'
complete -c sdu -s k -d 'Like --block-size=1K'
complete -c sdu -s m -d 'Like --block-size=1M'
complete -c sdu -s h -l human-readable -d 'Print sizes in human readable format, powers of 1024 (the default, except with --du or a block size in the environment)'
complete -c sdu -l si -d 'Like -h, but use powers of 1000'
complete -c sdu -l reverse -d 'List in the opposite order: smallest first (--sort FIGURE, or --top), paths from last to first (--sort name), du\'s order read backwards without either; the tree view reverses each directory\'s entries'
complete -c sdu -l tree -d 'Print an indented tree with a bar per entry, largest first'
complete -c sdu -s i -l interactive -d 'Browse the tree full-screen after the scan: the four figures of every entry, sorted as asked; mark entries (Space) to see what deleting all of them frees, shared data counted once; d deletes them after you type yes, never following a symlink or leaving the filesystem (? lists the keys)'
complete -c sdu -l json -d 'Print one JSON document (all sizes in bytes)'
complete -c sdu -s c -l total -d 'Produce a grand total'
complete -c sdu -s 0 -l null -d 'End each output line with NUL, not newline (no header)'
complete -c sdu -l no-header -d 'Do not print the header line'
complete -c sdu -l no-progress -d 'Do not show progress on stderr (shown only when stderr is a terminal and the scan takes a moment)'
complete -c sdu -l fiemap -d 'Read every file\'s extents with FIEMAP, even where sdu could read Btrfs\'s extent items directly (as root, with CAP_SYS_ADMIN)'
complete -c sdu -l map-each-copy -d 'Btrfs without root: map every copy of a file that is unchanged across snapshots with its own FIEMAP, instead of once (slower; exact even after a deduplication that ran on one copy after the snapshot)'
complete -c sdu -l stats -d 'Print counts and timings of the scan on stderr (files mapped with FIEMAP, files skipped and why, shared extents indexed)'
complete -c sdu -l verify -d 'With --since: map every file all the same, and name on stderr each whose saved map was stale (its extents moved without its ctime)'
complete -c sdu -l show-itemcount -d 'Show the item count column in the browser (c shows or hides it)'
complete -c sdu -l hide-itemcount -d 'Hide the item count column (the default)'
complete -c sdu -l show-mtime -d 'Show the modification time column in the browser (m)'
complete -c sdu -l hide-mtime -d 'Hide the modification time column (the default)'
complete -c sdu -l show-graph -d 'Show the bar column in the browser (the default)'
complete -c sdu -l hide-graph -d 'Hide the bar column (ncdu\'s g cycles graph, percentage, both, none)'
complete -c sdu -l show-percent -d 'Show the percentage column in the browser (the default)'
complete -c sdu -l hide-percent -d 'Hide the percentage column'
complete -c sdu -l group-directories-first -d 'List directories before files in the browser (ncdu\'s t)'
complete -c sdu -l no-group-directories-first -d 'Directories and files together, in the sort\'s order (the default)'
complete -c sdu -l cross-file-system -d 'Cross filesystems (the default): undoes -x from a config file'
complete -c sdu -l include-caches -d 'Count directories with a cache tag (the default): undoes --exclude-caches'
complete -c sdu -l include-kernfs -d 'Count kernel filesystems (the default): undoes --exclude-kernfs'
complete -c sdu -l ignore-config -d 'Read no config file (/etc/sdu.conf, then $XDG_CONFIG_HOME/sdu/config, else ~/.config/sdu/config: one option a line, as ncdu\'s)'
complete -c sdu -l help -d 'Print help'
complete -c sdu -s V -l version -d 'Print version'
