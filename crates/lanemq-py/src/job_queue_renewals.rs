//! `JobQueueCore.renew_leases`: a worker's lease renewal that tells apart the two answers a
//! renewal can give besides success: the lease was lost, or the job's cancellation was
//! requested (`CoreError::CancelRequested`, the fallback road of `JobCancels` when a worker
//! missed the push). `renew_many` answers only the lost ones.

use lanemq_core::{CoreError, CoreResult};
use pyo3::prelude::*;

use crate::core_args::{CoreArg, Text};
use crate::job_queue::JobQueueCore;

/// `(lost ids, [(id, reason)] of the jobs whose cancellation was requested)`.
type RenewAnswers = (Vec<String>, Vec<(String, String)>);

#[pymethods]
impl JobQueueCore {
    /// Renews leases; awaits `(lost ids, [(id, reason)])`, the second for the jobs whose
    /// cancellation was requested (their leases were renewed).
    fn renew_leases<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(Text, Text)>,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ids, items) = lease_items(items)?;
        self.resolve(
            py,
            self.backend.renew_many(items, lease, now),
            move |outcomes| Ok(renew_answers(ids, outcomes)),
        )
    }
}

/// The answers of a renewal, by kind: the ids whose lease was lost, and the (id, reason) of
/// the jobs whose cancellation was requested (renewed nonetheless).
pub(crate) fn renew_answers(ids: Vec<String>, outcomes: Vec<CoreResult<()>>) -> RenewAnswers {
    let mut answers: RenewAnswers = (Vec::new(), Vec::new());
    for (id, outcome) in ids.into_iter().zip(outcomes) {
        match outcome {
            Ok(()) => {}
            Err(CoreError::CancelRequested { reason, .. }) => answers.1.push((id, reason)),
            Err(_) => answers.0.push(id),
        }
    }
    answers
}

/// `(id, token)` pairs, as `renew_many` takes them.
type Leases = Vec<(String, String)>;

/// The ids of `(id, token)` renewal items (to name them in the reply) and the items as the
/// backend takes them.
pub(crate) fn lease_items(items: Vec<(Text, Text)>) -> PyResult<(Vec<String>, Leases)> {
    let items = items
        .into_iter()
        .map(|(id, token)| Ok((id.core("id")?, token.core("token")?)))
        .collect::<PyResult<Vec<_>>>()?;
    let ids = items.iter().map(|(id, _)| id.clone()).collect();
    Ok((ids, items))
}
