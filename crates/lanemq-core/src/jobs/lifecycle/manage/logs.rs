//! A job's log: lines appended with their time (the oldest dropped past a `keep`), read by
//! page, trimmed.

use crate::error::CoreResult;
use crate::jobs::model::{LogLine, Millis};
use crate::jobs::options::check_log_line;
use crate::jobs::paging::index_range;

use super::super::not_found;
use super::storage::ManageStorage;

/// Appends `line` (checked first), written at `now`, to job `id`'s log; with `keep > 0` only
/// the newest `keep` lines stay. Returns how many lines the log holds.
pub fn add_log<S: ManageStorage>(
    storage: &mut S,
    id: &str,
    line: &str,
    keep: usize,
    now: Millis,
) -> CoreResult<usize> {
    check_log_line(id, line, storage.max_payload_bytes())?;
    if !storage.exists(id)? {
        return Err(not_found(id));
    }
    let held = storage.append_log(id, line, now)?;
    if keep > 0 && held > keep {
        storage.keep_newest_logs(id, keep)?;
        return Ok(keep);
    }
    Ok(held)
}

/// Log lines `start..=end` (a negative index counts from the end), newest first unless
/// `ascending`, with their times, and how many lines the log holds.
pub fn get_logs<S: ManageStorage>(
    storage: &mut S,
    id: &str,
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<(Vec<LogLine>, usize)> {
    if !storage.exists(id)? {
        return Err(not_found(id));
    }
    let total = storage.log_count(id)?;
    let range = index_range(total, start, end);
    let page = if range.is_empty() {
        Vec::new()
    } else {
        storage.log_page(id, range.start, range.len(), ascending)?
    };
    Ok((page, total))
}

/// Keeps only the newest `keep` log lines of job `id` (0 clears the log).
pub fn clear_logs<S: ManageStorage>(storage: &mut S, id: &str, keep: usize) -> CoreResult<()> {
    if !storage.exists(id)? {
        return Err(not_found(id));
    }
    storage.keep_newest_logs(id, keep)
}
