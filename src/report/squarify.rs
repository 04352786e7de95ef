//! The squarified treemap layout (Bruls, Huijsen and van Wijk, 2000): a
//! rectangle cut into one rectangle per item, each of an area proportional
//! to its size, laid out in rows so that they stay as close to squares as
//! the greedy rule gets them.
//!
//! Written here rather than taken from crates.io: the crates that offer it
//! (`treemap` 0.3.2, last released in 2019; `streemap` 0.1.0, one release)
//! are unmaintained, lay out through trait objects and `f64` sizes only,
//! and leave the rounding to the caller; the algorithm itself is some sixty
//! lines, and here it is tested for what the page relies on (every
//! rectangle inside the frame, none overlapping, each area its share).

/// A rectangle: its top-left corner and its size, in any unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) w: f64,
    pub(crate) h: f64,
}

/// Lays out `sizes`, largest first (the order the algorithm needs; the
/// caller sorts), in `frame`: one rectangle per size, in the same order,
/// each of area `size / Σ sizes × frame area`. Zero sizes get empty
/// rectangles; when every size is zero, all are empty.
pub(crate) fn squarify(sizes: &[u64], frame: Rect) -> Vec<Rect> {
    debug_assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "sizes not sorted");
    let sum: f64 = sizes.iter().map(|&s| s as f64).sum();
    let mut out = vec![
        Rect {
            x: frame.x,
            y: frame.y,
            w: 0.0,
            h: 0.0,
        };
        sizes.len()
    ];
    if sum <= 0.0 || frame.w <= 0.0 || frame.h <= 0.0 {
        return out;
    }
    let scale = frame.w * frame.h / sum;
    let areas: Vec<f64> = sizes.iter().map(|&s| s as f64 * scale).collect();
    let n = areas.iter().take_while(|&&a| a > 0.0).count();
    let mut free = frame;
    let mut start = 0;
    while start < n {
        // The row grows while adding the next item does not make its
        // worst aspect ratio worse.
        let side = free.w.min(free.h);
        let mut end = start + 1;
        let mut row_sum = areas[start];
        while end < n {
            let with = row_sum + areas[end];
            if worst(areas[start], areas[end], with, side)
                > worst(areas[start], areas[end - 1], row_sum, side)
            {
                break;
            }
            row_sum = with;
            end += 1;
        }
        let last = end == n;
        free = place(
            &areas[start..end],
            row_sum,
            free,
            last,
            &mut out[start..end],
        );
        start = end;
    }
    out
}

/// The worst aspect ratio of a row of total area `sum`, largest item `max`
/// and smallest `min`, laid along a side of length `side`.
fn worst(max: f64, min: f64, sum: f64, side: f64) -> f64 {
    let (s2, w2) = (sum * sum, side * side);
    (w2 * max / s2).max(s2 / (w2 * min))
}

/// Places the row `areas` (of total `sum`) along the shorter side of
/// `free`, writing the rectangles to `out`; what is left of `free`. The
/// last row takes what is left exactly, so that rounding leaves no gap.
fn place(areas: &[f64], sum: f64, free: Rect, last: bool, out: &mut [Rect]) -> Rect {
    // A column at the left, items top to bottom; when `free` is taller
    // than wide, the same transposed: a row at the top, left to right.
    let column = free.w >= free.h;
    let t = |r: Rect| {
        if column {
            r
        } else {
            Rect {
                x: r.y,
                y: r.x,
                w: r.h,
                h: r.w,
            }
        }
    };
    let f = t(free);
    let n = areas.len();
    let w = if last { f.w } else { sum / f.h };
    let mut y = f.y;
    for (i, (a, r)) in areas.iter().zip(out.iter_mut()).enumerate() {
        let h = if i + 1 == n { f.y + f.h - y } else { a / w };
        *r = t(Rect { x: f.x, y, w, h });
        y += h;
    }
    t(Rect {
        x: f.x + w,
        w: f.w - w,
        ..f
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FRAME: Rect = Rect {
        x: 0.0,
        y: 0.0,
        w: 960.0,
        h: 600.0,
    };

    fn check(sizes: &[u64], frame: Rect) {
        let rects = squarify(sizes, frame);
        assert_eq!(rects.len(), sizes.len());
        let sum: f64 = sizes.iter().map(|&s| s as f64).sum();
        let eps = 1e-6 * (frame.w + frame.h);
        for (s, r) in sizes.iter().zip(&rects) {
            assert!(r.w >= -eps && r.h >= -eps, "{r:?}");
            assert!(r.x >= frame.x - eps && r.y >= frame.y - eps, "{r:?}");
            assert!(r.x + r.w <= frame.x + frame.w + eps, "{r:?} in {frame:?}");
            assert!(r.y + r.h <= frame.y + frame.h + eps, "{r:?} in {frame:?}");
            let want = *s as f64 / sum * frame.w * frame.h;
            assert!(
                (r.w * r.h - want).abs() <= 1e-6 * frame.w * frame.h,
                "{s}: area {} want {want}",
                r.w * r.h
            );
        }
        // No two overlap.
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let ox = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let oy = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(ox <= eps || oy <= eps, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn the_paper_example() {
        // Bruls et al.'s example: 6 6 4 3 2 2 1 in a 6 x 4 rectangle.
        let sizes = [6, 6, 4, 3, 2, 2, 1];
        let frame = Rect {
            x: 0.0,
            y: 0.0,
            w: 6.0,
            h: 4.0,
        };
        check(&sizes, frame);
        let r = squarify(&sizes, frame);
        // The first row is the two 6s, stacked at the left, 3 wide.
        assert!((r[0].w - 3.0).abs() < 1e-9 && (r[0].h - 2.0).abs() < 1e-9);
        assert!((r[1].y - 2.0).abs() < 1e-9);
        // Then 4 and 3 in a row above the rest.
        assert!((r[2].x - 3.0).abs() < 1e-9 && (r[3].y - r[2].y).abs() < 1e-9);
    }

    #[test]
    fn zeros_and_one() {
        check(&[1], FRAME);
        assert_eq!(squarify(&[5], FRAME)[0], FRAME);
        let r = squarify(&[0, 0], FRAME);
        assert!(r.iter().all(|r| r.w == 0.0 && r.h == 0.0));
        check(&[10, 3, 0, 0], FRAME);
        assert!(squarify(&[], FRAME).is_empty());
    }

    #[test]
    fn squares_stay_squares() {
        let r = squarify(
            &[1, 1, 1, 1],
            Rect {
                w: 2.0,
                h: 2.0,
                ..FRAME
            },
        );
        for r in r {
            assert!(
                (r.w - 1.0).abs() < 1e-9 && (r.h - 1.0).abs() < 1e-9,
                "{r:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn every_layout_fills_its_frame(
            mut sizes in proptest::collection::vec(0u64..1 << 40, 0..60),
            w in 1.0f64..2000.0,
            h in 1.0f64..2000.0,
        ) {
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            check(&sizes, Rect { x: 3.0, y: 5.0, w, h });
        }
    }
}
