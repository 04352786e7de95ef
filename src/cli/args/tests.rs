use super::*;
use clap::error::ErrorKind;

#[test]
fn unit_flags_keep_their_order() {
    let b = |spelled: &str, size: &str| UnitFlag::BlockSize {
        spelled: spelled.into(),
        size: size.into(),
    };
    let cli = parse(&["-k", "--si", "-B", "4K", "-h", "x"]);
    assert_eq!(
        cli.units,
        [
            UnitFlag::Kibibytes,
            UnitFlag::Si,
            b("-B", "4K"),
            UnitFlag::Human
        ]
    );
    let cli = parse(&["--block-size=M", "-mb", "-k", "--bl", "1"]);
    assert_eq!(
        cli.units,
        [
            b("--block-size", "M"),
            UnitFlag::Mebibytes,
            UnitFlag::Bytes,
            UnitFlag::Kibibytes,
            b("--block-size", "1")
        ]
    );
    assert!(parse(&[]).units.is_empty());
}

fn parse(args: &[&str]) -> Cli {
    parse_from(std::iter::once("sdu").chain(args.iter().copied()), false)
        .unwrap_or_else(|e| panic!("{args:?}: {e:?}"))
}

#[test]
fn repeated_flags_are_fine_as_in_du() {
    let cli = parse(&["-k", "-h", "-k", "-s", "-s", "-a", "-a", "-x", "-x"]);
    assert_eq!(
        cli.units,
        [UnitFlag::Kibibytes, UnitFlag::Human, UnitFlag::Kibibytes]
    );
    assert_eq!(parse(&["-d", "1", "-d", "2"]).max_depth, ["1", "2"]);
    assert_eq!(
        parse(&["--exclude=a", "--exclude", "b"]).exclude,
        ["a", "b"]
    );
}

#[test]
fn the_last_dereference_flag_wins() {
    for (args, want) in [
        (&[][..], Deref::None),
        (&["-L"], Deref::All),
        (&["-L", "-P"], Deref::None),
        (&["-P", "-H"], Deref::Args),
        (&["-D", "-L"], Deref::All),
        (&["-LD"], Deref::Args),
        (&["--dereference-args"], Deref::Args),
        (&["--no-dereference", "--dereference"], Deref::All),
    ] {
        assert_eq!(parse(args).deref, want, "{args:?}");
    }
}

#[test]
fn values_may_start_with_a_dash_as_in_getopt() {
    assert_eq!(parse(&["-t", "-0", "-d", "-1"]).threshold, ["-0"]);
    assert_eq!(parse(&["-d", "-1"]).max_depth, ["-1"]);
    assert_eq!(parse(&["--time", "x"]).time.as_deref(), Some("mtime"));
    assert_eq!(parse(&["--time", "x"]).paths, ["x"]);
    assert_eq!(parse(&["--time=ctime"]).time.as_deref(), Some("ctime"));
    let e = parse_from(["du", "--foo", "-q"], true).unwrap_err();
    assert!(
        matches!(&e, Stop::Usage { error, du: true } if error.lines == ["unrecognized option '--foo'", "invalid option -- 'q'"]),
        "{e:?}"
    );
}

#[test]
fn what_stops_the_run_speaks_as_the_mode_asks() {
    let du_usage = |args: &[&str], du: bool| match parse_from(args.iter().copied(), du) {
        Err(Stop::Usage { error, du: true }) => error.lines,
        other => panic!("{args:?}: {other:?}"),
    };
    // `--du` asks for du's texts, even when its value is missing.
    assert_eq!(
        du_usage(&["sdu", "--du"], false),
        ["option '--du' requires an argument"]
    );
    assert_eq!(
        du_usage(&["sdu", "--du", "total", "--sort", "x"], false),
        ["invalid value 'x' for '--sort <FIGURE>'"]
    );
    assert_eq!(du_usage(&["du", "-q"], true), ["invalid option -- 'q'"]);
    // sdu's own mode: getopt's words too, for getopt's refusal.
    let sdu_usage = |args: &[&str]| match parse_from(args.iter().copied(), false) {
        Err(Stop::Usage { error, du: false }) => error.lines,
        other => panic!("{args:?}: {other:?}"),
    };
    assert_eq!(
        sdu_usage(&["sdu", "--max", "1", "--foo"]),
        ["unrecognized option '--foo'"]
    );
    assert_eq!(sdu_usage(&["sdu", "-z"]), ["invalid option -- 'z'"]);
    assert!(
        sdu_usage(&["sdu", "--to"])[0].starts_with("option '--to' is ambiguous; possibilities:")
    );
    assert_eq!(
        sdu_usage(&["sdu", "--all=1"]),
        ["option '--all' doesn't allow an argument"]
    );
    assert_eq!(
        sdu_usage(&["sdu", "-t"]),
        ["option requires an argument -- 't'"]
    );
    // clap's words for a value clap refuses, with its possible values.
    assert_eq!(
        sdu_usage(&["sdu", "--color", "maybe"]),
        ["invalid value 'maybe' for '--color <WHEN>'\n  [possible values: auto, always, never]"]
    );
    match parse_from(["sdu", "--he", "--foo"], false) {
        Err(Stop::Clap(e)) => assert_eq!(e.kind(), ErrorKind::DisplayHelp),
        other => panic!("{other:?}"),
    }
}

#[test]
fn figures_by_name() {
    for f in Figure::ALL {
        let cli = parse(&["--du", f.name(), "--sort", f.name()]);
        assert_eq!((cli.du, cli.sort), (Some(f), Some(SortBy::Figure(f))));
    }
    let cli = parse(&["--sort", "name"]);
    assert_eq!(cli.sort, Some(SortBy::Name));
    assert!(parse_from(["sdu", "--du", "name"], false).is_err());
    assert!(parse_from(["sdu", "--sort", "Total"], false).is_err());
}
