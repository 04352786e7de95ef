use std::fs;
use std::os::unix::fs::symlink;

use super::*;

fn target(root: &std::path::Path, names: &[&str], dir: bool) -> Target {
    Target {
        root: root.as_os_str().as_encoded_bytes().to_vec(),
        names: names.iter().map(|n| n.as_bytes().to_vec()).collect(),
        dir,
    }
}

#[test]
fn deletes_a_tree_and_never_follows_a_symlink() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"x").unwrap();
    let root = t.path().join("root");
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::write(root.join("a/b/c/f"), b"data").unwrap();
    fs::write(root.join("a/g"), b"data").unwrap();
    symlink(&outside, root.join("a/b/link")).unwrap();
    let d = delete(&[target(&root, &["a"], true)]);
    assert!(d.failed.is_none(), "{:?}", d.failed);
    assert_eq!((d.targets, d.entries), (1, 6));
    assert!(!root.join("a").exists());
    assert!(outside.join("keep").exists());
}

#[test]
fn a_symlink_in_place_of_a_directory_stops_it() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir_all(outside.join("d")).unwrap();
    fs::write(outside.join("d/keep"), b"x").unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    // The scan saw root/sub/d as a directory; sub is now a symlink.
    symlink(&outside, root.join("sub")).unwrap();
    let d = delete(&[target(&root, &["sub", "d"], true)]);
    let f = d.failed.expect("stopped");
    assert!(matches!(f.problem, Problem::Io(_)), "{f}");
    assert!(outside.join("d/keep").exists());
    // A directory now a file, and the other way round.
    fs::write(root.join("was-dir"), b"x").unwrap();
    let d = delete(&[target(&root, &["was-dir"], true)]);
    let f = d.failed.expect("stopped");
    assert!(f.to_string().contains("changed since the scan"), "{f}");
    assert!(root.join("was-dir").exists());
}

#[test]
fn stops_at_the_first_error() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("one"), b"x").unwrap();
    fs::write(root.join("three"), b"x").unwrap();
    let d = delete(&[
        target(&root, &["one"], false),
        target(&root, &["two"], false),
        target(&root, &["three"], false),
    ]);
    assert_eq!(d.targets, 1);
    let f = d.failed.expect("stopped");
    assert!(f.path.ends_with(b"root/two"), "{f}");
    assert!(root.join("three").exists());
}

#[test]
fn refuses_dot_and_slash() {
    for r in [".", "..", "/", "a/.", "a/..//"] {
        let t = Target {
            root: r.as_bytes().to_vec(),
            names: Vec::new(),
            dir: true,
        };
        let d = delete(&[t]);
        assert!(
            matches!(
                d.failed,
                Some(Failure {
                    problem: Problem::Refused,
                    ..
                })
            ),
            "{r}: {:?}",
            d.failed
        );
    }
}
