//! dua-core (the crate jwalk's description points to: "Use `dua-core`
//! instead"): `dua_core::walk` with its work-stealing pool, Order::Completion,
//! metadata collected by the workers (on Linux `fs::DirEntry::metadata`, an
//! fstatat relative to the directory being read), descend into everything.
use dua_core::{Options, Order, walk};
use sdu_bench_walkers::{Stat, Totals, args};

fn main() {
    let a = args();
    let order = if a.flags.iter().any(|f| f == "--parent-first") { Order::ParentFirst } else { Order::Completion };
    let mut t = Totals::default();
    for e in walk(&a.root, a.threads, order, Options::default(), |_| true) {
        match e {
            Ok(e) => match e.metadata {
                Some(Ok(m)) => t.add(&Stat::from_std(&m)),
                _ => t.errors += 1,
            },
            Err(_) => t.errors += 1,
        }
    }
    t.finish("walk-duacore")
}
