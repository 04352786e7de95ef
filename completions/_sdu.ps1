
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'sdu' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'sdu'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'sdu' {
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Print the total for a directory only if it is N or fewer levels below the argument')
            [CompletionResult]::new('--max-depth', '--max-depth', [CompletionResultType]::ParameterName, 'Print the total for a directory only if it is N or fewer levels below the argument')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Keep only the N largest entries (by the --sort figure, else Total); listed largest first unless --sort says otherwise')
            [CompletionResult]::new('--top', '--top', [CompletionResultType]::ParameterName, 'Keep only the N largest entries (by the --sort figure, else Total); listed largest first unless --sort says otherwise')
            [CompletionResult]::new('--min-size', '--min-size', [CompletionResultType]::ParameterName, 'Hide entries smaller than SIZE (by the --sort figure, else Total), e.g. 100M, 1G; hidden entries still count in their parents')
            [CompletionResult]::new('--to-free', '--to-free', [CompletionResultType]::ParameterName, 'Plan, among the PATHs, a set whose deletion frees at least SIZE (e.g. 50G), with as few entries as possible; prints what each adds and what they free together, counting shared data once. PATHs inside another PATH given are the candidates, seen in its scan (sdu --to-free 50G /mnt /mnt/snaps/*: what the live data shares stays). Deletes nothing')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative (by the --du figure, else Total; as du''s)')
            [CompletionResult]::new('--threshold', '--threshold', [CompletionResultType]::ParameterName, 'Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative (by the --du figure, else Total; as du''s)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'List only entries whose newest modification (or --time=WORD''s time) is older than WHEN: a DURATION ago (30d, 12h, 2w, 1y; s, m, h, d, w, y) or a DATE (2024-07-14, 2024-07-14 17:31, in TZ''s zone). A directory''s time is the newest of anything in it')
            [CompletionResult]::new('--exclude', '--exclude', [CompletionResultType]::ParameterName, 'Exclude entries that match PATTERN (a shell glob, matched as du does)')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'Exclude entries that match any pattern in FILE (one per line)')
            [CompletionResult]::new('--exclude-from', '--exclude-from', [CompletionResultType]::ParameterName, 'Exclude entries that match any pattern in FILE (one per line)')
            [CompletionResult]::new('--files0-from', '--files0-from', [CompletionResultType]::ParameterName, 'Measure the NUL-terminated file names listed in file F (- for standard input) instead of PATHs')
            [CompletionResult]::new('-B', '-B ', [CompletionResultType]::ParameterName, 'Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)')
            [CompletionResult]::new('--block-size', '--block-size', [CompletionResultType]::ParameterName, 'Scale sizes by SIZE before printing them (e.g. 1, 4K, 1MiB, MB)')
            [CompletionResult]::new('--sort', '--sort', [CompletionResultType]::ParameterName, 'List the entries by FIGURE, largest first (or by path), instead of du''s order; the tree view sorts siblings')
            [CompletionResult]::new('--du', '--du', [CompletionResultType]::ParameterName, 'Print only FIGURE in du''s own format, SIZE<TAB>PATH, with du''s units (1K blocks unless -h, -B, ... or the environment say otherwise)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Show the time of the last modification of any file in the entry (or, with WORD, atime, access, use, ctime or status)')
            [CompletionResult]::new('--time-style', '--time-style', [CompletionResultType]::ParameterName, 'Show times using STYLE: full-iso, long-iso (the default), iso, or +FORMAT (as date''s); the TIME_STYLE variable when not given')
            [CompletionResult]::new('--html', '--html', [CompletionResultType]::ParameterName, 'Write a zoomable treemap of the scan to FILE (- for standard output) instead of the report: one HTML page that needs no network and no server; every file is in it (as with -a), -d limits its depth')
            [CompletionResult]::new('--html-area', '--html-area', [CompletionResultType]::ParameterName, 'What each rectangle''s area of the --html page stands for when it opens (the page can switch): the space on disk (Exclusive + Shared, shared data counted once; the default), du''s Total, or Reclaimable')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour the tree view: auto (when stdout is a terminal and NO_COLOR is unset or empty), always, or never (ncdu''s dark and dark-bg are auto, off is never)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Worker threads [default: the number of CPUs, or 8 when the tree is not in memory (cold cache): threads that wait on the disk; 4 on XFS, where more wait on each other''s inode reads, and as root on Btrfs, where one search reads many inodes]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Worker threads [default: the number of CPUs, or 8 when the tree is not in memory (cold cache): threads that wait on the disk; 4 on XFS, where more wait on each other''s inode reads, and as root on Btrfs, where one search reads many inodes]')
            [CompletionResult]::new('--index-memory', '--index-memory', [CompletionResultType]::ParameterName, 'Memory for the index of shared extents (16 bytes a mapping): past SIZE (e.g. 2G) it spills sorted runs to a temporary file in TMPDIR, else /tmp [default: half the available memory]')
            [CompletionResult]::new('--export', '--export', [CompletionResultType]::ParameterName, 'Write the scan to FILE (- for standard output) instead of the report, in ncdu''s JSON export format (or another, --export-format) with sdu''s figures added: ncdu -f FILE browses it, sdu --import FILE reports on it')
            [CompletionResult]::new('--export-format', '--export-format', [CompletionResultType]::ParameterName, 'The format --export writes: json (ncdu -o), json-zstd (ncdu -c -o: the JSON compressed with zstd) or binary (ncdu 2.6''s -O: sdu''s figures ride along, so sdu --import reads it as the JSON). --import and --compare read all three, told by their first bytes')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Start from the saved scan SCAN (sdu''s --export, JSON or json-zstd): a file whose device, inode, ctime, size and blocks are those saved reuses the extent map saved with it, without being opened or mapped. The figures are a full scan''s; where nothing proves the maps current (a dedupe keeps a file''s times), Reclaimable is marked')
            [CompletionResult]::new('--import', '--import', [CompletionResultType]::ParameterName, 'Read a scan saved with --export (or ncdu -o) from FILE (- for standard input) instead of scanning; every report and --to-free work on it. PATHs are then --to-free candidates, by their paths in the saved scan')
            [CompletionResult]::new('--compare', '--compare', [CompletionResultType]::ParameterName, 'Compare with the saved scan OLD (--export''s, or ncdu -o''s): for every entry the change of each figure since OLD, and whether it is new, gone, or its sharing changed (Exclusive moved by more or less than Total: a snapshot deleted leaves its data to its origin, whose Exclusive grows while Total does not); largest growth of Total first (--sort, --top, -d, -a, -s apply). Entries match by name from each root, so a scan of the tree mounted elsewhere compares. The new scan is PATHs, or --import FILE')
            [CompletionResult]::new('--keys', '--keys', [CompletionResultType]::ParameterName, 'The browser''s keys: ncdu (a apparent size, t directories first, g graph and percentage, f files) or sdu (the default: a files, t Total, g first entry)')
            [CompletionResult]::new('--generate', '--generate', [CompletionResultType]::ParameterName, 'Print the man page or a shell completion script, and exit')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Display only a total for each argument (same as -d 0)')
            [CompletionResult]::new('--summarize', '--summarize', [CompletionResultType]::ParameterName, 'Display only a total for each argument (same as -d 0)')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Write counts for all files, not just directories')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Write counts for all files, not just directories')
            [CompletionResult]::new('--oldest-first', '--oldest-first', [CompletionResultType]::ParameterName, 'With --to-free: take the candidates oldest first, as snapshots are pruned, until they free SIZE together. The age: a Btrfs subvolume root''s creation time (otime), else the modification time')
            [CompletionResult]::new('--newest-first', '--newest-first', [CompletionResultType]::ParameterName, 'With --to-free: take the candidates newest first (see --oldest-first)')
            [CompletionResult]::new('--snapshots', '--snapshots', [CompletionResultType]::ParameterName, 'List the Btrfs subvolumes of the scan by origin, each snapshot oldest first: created, Total, Exclusive, what deleting it frees alone and with every older snapshot of its origin; --sort, --top, --min-size choose among an origin''s snapshots by Frees alone (reclaimable, the default), total, exclusive or path (name). With --to-free: which snapshots free SIZE')
            [CompletionResult]::new('--df', '--df', [CompletionResultType]::ParameterName, 'For the filesystem holding each PATH (default .), a table whose rows add up to df''s Used')
            [CompletionResult]::new('--files-only', '--files-only', [CompletionResultType]::ParameterName, 'List files alone (every non-directory, as -a finds them), no directory: --sort, --top and --min-size then pick among files')
            [CompletionResult]::new('-S', '-S ', [CompletionResultType]::ParameterName, 'For directories do not include the size of subdirectories')
            [CompletionResult]::new('--separate-dirs', '--separate-dirs', [CompletionResultType]::ParameterName, 'For directories do not include the size of subdirectories')
            [CompletionResult]::new('-x', '-x', [CompletionResultType]::ParameterName, 'Skip directories on different file systems')
            [CompletionResult]::new('--one-file-system', '--one-file-system', [CompletionResultType]::ParameterName, 'Skip directories on different file systems')
            [CompletionResult]::new('-L', '-L ', [CompletionResultType]::ParameterName, 'Dereference all symbolic links')
            [CompletionResult]::new('--dereference', '--dereference', [CompletionResultType]::ParameterName, 'Dereference all symbolic links')
            [CompletionResult]::new('-D', '-D ', [CompletionResultType]::ParameterName, 'Dereference only symlinks that are listed on the command line')
            [CompletionResult]::new('--dereference-args', '--dereference-args', [CompletionResultType]::ParameterName, 'Dereference only symlinks that are listed on the command line')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Equivalent to --dereference-args (-D)')
            [CompletionResult]::new('-P', '-P ', [CompletionResultType]::ParameterName, 'Don''t follow any symbolic links (the default; the last of -L, -P, -H and -D wins)')
            [CompletionResult]::new('--no-dereference', '--no-dereference', [CompletionResultType]::ParameterName, 'Don''t follow any symbolic links (the default; the last of -L, -P, -H and -D wins)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Count sizes many times if hard linked')
            [CompletionResult]::new('--count-links', '--count-links', [CompletionResultType]::ParameterName, 'Count sizes many times if hard linked')
            [CompletionResult]::new('--exclude-caches', '--exclude-caches', [CompletionResultType]::ParameterName, 'Exclude directories holding a cache directory tag: a regular file named CACHEDIR.TAG that starts with Signature: 8a477f597d28d172789f06886806bc55 (as ncdu''s --exclude-caches and GNU tar''s --exclude-caches-all; a PATH given is measured all the same)')
            [CompletionResult]::new('--exclude-kernfs', '--exclude-kernfs', [CompletionResultType]::ParameterName, 'Exclude directories on Linux''s kernel filesystems (proc, sysfs, cgroup, cgroup2, debugfs, tracefs, securityfs, pstore, bpf, selinuxfs, binfmt_misc, devpts), by their statfs type, as ncdu does; a PATH given is measured all the same')
            [CompletionResult]::new('--inodes', '--inodes', [CompletionResultType]::ParameterName, 'List inode usage instead of block usage (--du: the inodes figure; the table: an Inodes column)')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Print apparent sizes rather than disk usage (the Apparent column, --sort total and --du total then mean the apparent size)')
            [CompletionResult]::new('--apparent-size', '--apparent-size', [CompletionResultType]::ParameterName, 'Print apparent sizes rather than disk usage (the Apparent column, --sort total and --du total then mean the apparent size)')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Equivalent to --apparent-size --block-size=1')
            [CompletionResult]::new('--bytes', '--bytes', [CompletionResultType]::ParameterName, 'Equivalent to --apparent-size --block-size=1')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Like --block-size=1K')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Like --block-size=1M')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print sizes in human readable format, powers of 1024 (the default, except with --du or a block size in the environment)')
            [CompletionResult]::new('--human-readable', '--human-readable', [CompletionResultType]::ParameterName, 'Print sizes in human readable format, powers of 1024 (the default, except with --du or a block size in the environment)')
            [CompletionResult]::new('--si', '--si', [CompletionResultType]::ParameterName, 'Like -h, but use powers of 1000')
            [CompletionResult]::new('--reverse', '--reverse', [CompletionResultType]::ParameterName, 'List in the opposite order: smallest first (--sort FIGURE, or --top), paths from last to first (--sort name), du''s order read backwards without either; the tree view reverses each directory''s entries')
            [CompletionResult]::new('--tree', '--tree', [CompletionResultType]::ParameterName, 'Print an indented tree with a bar per entry, largest first')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Browse the tree full-screen after the scan: the four figures of every entry, sorted as asked; mark entries (Space) to see what deleting all of them frees, shared data counted once; d deletes them after you type yes, never following a symlink or leaving the filesystem (? lists the keys)')
            [CompletionResult]::new('--interactive', '--interactive', [CompletionResultType]::ParameterName, 'Browse the tree full-screen after the scan: the four figures of every entry, sorted as asked; mark entries (Space) to see what deleting all of them frees, shared data counted once; d deletes them after you type yes, never following a symlink or leaving the filesystem (? lists the keys)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (all sizes in bytes)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Produce a grand total')
            [CompletionResult]::new('--total', '--total', [CompletionResultType]::ParameterName, 'Produce a grand total')
            [CompletionResult]::new('-0', '-0', [CompletionResultType]::ParameterName, 'End each output line with NUL, not newline (no header)')
            [CompletionResult]::new('--null', '--null', [CompletionResultType]::ParameterName, 'End each output line with NUL, not newline (no header)')
            [CompletionResult]::new('--no-header', '--no-header', [CompletionResultType]::ParameterName, 'Do not print the header line')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Do not show progress on stderr (shown only when stderr is a terminal and the scan takes a moment)')
            [CompletionResult]::new('--fiemap', '--fiemap', [CompletionResultType]::ParameterName, 'Read every file''s extents with FIEMAP, even where sdu could read Btrfs''s extent items directly (as root, with CAP_SYS_ADMIN)')
            [CompletionResult]::new('--map-each-copy', '--map-each-copy', [CompletionResultType]::ParameterName, 'Btrfs without root: map every copy of a file that is unchanged across snapshots with its own FIEMAP, instead of once (slower; exact even after a deduplication that ran on one copy after the snapshot)')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Print counts and timings of the scan on stderr (files mapped with FIEMAP, files skipped and why, shared extents indexed)')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'With --since: map every file all the same, and name on stderr each whose saved map was stale (its extents moved without its ctime)')
            [CompletionResult]::new('--show-itemcount', '--show-itemcount', [CompletionResultType]::ParameterName, 'Show the item count column in the browser (c shows or hides it)')
            [CompletionResult]::new('--hide-itemcount', '--hide-itemcount', [CompletionResultType]::ParameterName, 'Hide the item count column (the default)')
            [CompletionResult]::new('--show-mtime', '--show-mtime', [CompletionResultType]::ParameterName, 'Show the modification time column in the browser (m)')
            [CompletionResult]::new('--hide-mtime', '--hide-mtime', [CompletionResultType]::ParameterName, 'Hide the modification time column (the default)')
            [CompletionResult]::new('--show-graph', '--show-graph', [CompletionResultType]::ParameterName, 'Show the bar column in the browser (the default)')
            [CompletionResult]::new('--hide-graph', '--hide-graph', [CompletionResultType]::ParameterName, 'Hide the bar column (ncdu''s g cycles graph, percentage, both, none)')
            [CompletionResult]::new('--show-percent', '--show-percent', [CompletionResultType]::ParameterName, 'Show the percentage column in the browser (the default)')
            [CompletionResult]::new('--hide-percent', '--hide-percent', [CompletionResultType]::ParameterName, 'Hide the percentage column')
            [CompletionResult]::new('--group-directories-first', '--group-directories-first', [CompletionResultType]::ParameterName, 'List directories before files in the browser (ncdu''s t)')
            [CompletionResult]::new('--no-group-directories-first', '--no-group-directories-first', [CompletionResultType]::ParameterName, 'Directories and files together, in the sort''s order (the default)')
            [CompletionResult]::new('--cross-file-system', '--cross-file-system', [CompletionResultType]::ParameterName, 'Cross filesystems (the default): undoes -x from a config file')
            [CompletionResult]::new('--include-caches', '--include-caches', [CompletionResultType]::ParameterName, 'Count directories with a cache tag (the default): undoes --exclude-caches')
            [CompletionResult]::new('--include-kernfs', '--include-kernfs', [CompletionResultType]::ParameterName, 'Count kernel filesystems (the default): undoes --exclude-kernfs')
            [CompletionResult]::new('--ignore-config', '--ignore-config', [CompletionResultType]::ParameterName, 'Read no config file (/etc/sdu.conf, then $XDG_CONFIG_HOME/sdu/config, else ~/.config/sdu/config: one option a line, as ncdu''s)')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
