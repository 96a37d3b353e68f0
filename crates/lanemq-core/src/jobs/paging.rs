//! Index ranges, as every listing reads them (jobs, logs, schedulers): BullMQ's `start..=end`
//! with negative indexes counting from the end.

use std::ops::Range;

/// The positions `start..=end` of a list of `total` items: a negative index counts from the end
/// (-1 is the last), and whatever falls outside the list is dropped (an empty range if nothing
/// is left).
pub fn index_range(total: usize, start: i64, end: i64) -> Range<usize> {
    let total = total as i64;
    let resolve = |i: i64| if i < 0 { total + i } else { i };
    let (start, end) = (resolve(start).max(0), resolve(end).min(total - 1));
    if end < start {
        0..0
    } else {
        start as usize..end as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::index_range;

    #[test]
    fn ranges_count_from_either_end_and_drop_what_is_outside() {
        assert_eq!(index_range(5, 0, -1), 0..5);
        assert_eq!(index_range(5, 1, 2), 1..3);
        assert_eq!(index_range(5, -2, -1), 3..5);
        assert_eq!(index_range(5, 3, 100), 3..5);
        assert_eq!(index_range(5, -100, 0), 0..1);
        assert!(index_range(5, 4, 2).is_empty());
        assert!(index_range(0, 0, -1).is_empty());
        assert!(index_range(5, 7, 9).is_empty());
    }
}
