//! `search_jobs` for the in-process stores: a bounded walk of the states' orders from a cursor,
//! testing each job against the filter.

use crate::error::CoreResult;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::search::{JobFilter, SEARCH_SCAN_LIMIT};

use super::storage::ManageStorage;

/// How many jobs the walk reads from the store at a time (a page that finds its `count` early
/// reads at most this many more than it needs).
const CHUNK: usize = 100;

/// Up to `count` jobs of `states` (all when empty; each state once) meeting `filter` at `now`,
/// in `list_jobs`'s order (each state in turn), from position `cursor` of that order. Reads at
/// most `SEARCH_SCAN_LIMIT` jobs; returns the position where it stopped, `None` when it
/// reached the end.
pub fn search_jobs<S: ManageStorage>(
    storage: &mut S,
    states: &[JobState],
    filter: &JobFilter,
    (cursor, count): (usize, usize),
    ascending: bool,
    now: Millis,
) -> CoreResult<(Vec<Job>, Option<usize>)> {
    let matcher = filter.matcher(now)?;
    let states = super::reads::each_once(states);
    let mut found = Vec::new();
    let (mut position, mut scanned, mut offset) = (cursor, 0, 0);
    for state in states {
        let size = storage.count(state)?;
        if position >= offset + size {
            offset += size;
            continue;
        }
        while position < offset + size {
            if scanned == SEARCH_SCAN_LIMIT {
                return Ok((found, Some(position)));
            }
            let take = CHUNK
                .min(SEARCH_SCAN_LIMIT - scanned)
                .min(offset + size - position);
            let jobs = storage.page(state, position - offset, take, ascending)?;
            if jobs.is_empty() {
                break;
            }
            for job in jobs {
                if found.len() == count {
                    return Ok((found, Some(position)));
                }
                position += 1;
                scanned += 1;
                if matcher.matches(&job) {
                    found.push(job);
                }
            }
        }
        offset += size;
        position = position.max(offset);
    }
    Ok((found, None))
}
