//! Edits of a job's fields that are not transitions: its data (size-checked), its progress
//! (a `progress` event), a stack trace saved by hand (with the failure's reason).

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::events::Text;
use crate::jobs::model::Millis;
use crate::jobs::options::check_payload;

use super::super::not_found;
use super::storage::ManageStorage;

/// Replaces job `id`'s data; refused, changing nothing, when it is larger than the queue
/// accepts.
pub fn update_data<S: ManageStorage>(storage: &mut S, id: &str, data: &str) -> CoreResult<()> {
    check_payload(data, storage.max_payload_bytes())?;
    if storage.set_data(id, data)? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

/// Replaces job `id`'s progress, then a `progress` event carries it.
pub fn update_progress<S: ManageStorage>(
    storage: &mut S,
    id: &str,
    progress: &str,
    now: Millis,
) -> CoreResult<()> {
    // One copy, shared by the job and its event.
    let progress: Arc<str> = Arc::from(progress);
    let key = storage
        .set_progress(id, &progress)?
        .ok_or_else(|| not_found(id))?;
    storage.event(
        now,
        "progress",
        Some(&key),
        Some(("data", Text::Shared(progress))),
    )
}

/// Sets job `id`'s stack trace, and its failure's reason when one is given.
pub fn save_stacktrace<S: ManageStorage>(
    storage: &mut S,
    id: &str,
    lines: Vec<String>,
    reason: Option<&str>,
) -> CoreResult<()> {
    storage
        .update(id, |job| {
            job.stacktrace = lines;
            if let Some(reason) = reason {
                job.failed_reason = Some(reason.to_owned());
            }
            Ok(())
        })?
        .ok_or_else(|| not_found(id))
}
