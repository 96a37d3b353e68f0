//! Job schedulers (BullMQ's `upsertJobScheduler`): the decisions every backend shares, so that
//! they decide alike. These are pure functions of what the backend read; what they decide is
//! written in one atomic step, by `lifecycle::schedulers` for the in-process stores (once, over
//! their `SchedulerTable`s: the store lock, one SQLite transaction) and by one script for Redis.
//!
//! A scheduler is a key, a `ScheduleSpec`, a template (name, data, options), the number of
//! occurrences it has produced and the run time of the latest one, its *pending occurrence*.
//! An occurrence is a normal job with the template's name, data and options, delayed until its
//! run time (waiting if that is due), with the deterministic id `repeat:<key>:<run time ms>`
//! (`occurrence_id`) and `options.scheduler = Some(key)`. The pending occurrence's id is not
//! stored: it is always `occurrence_id(key, next_run)`, and it is *pending* while a job with
//! that id exists and has not started (waiting or delayed).
//!
//! - **Upsert** (`check`, then `on_upsert`, then `place`): a new key produces its first
//!   occurrence at `spec.first(now)`. An existing key whose occurrence is pending and whose
//!   spec and template are unchanged is left as it is (repeating an upsert changes nothing).
//!   Otherwise the pending occurrence, if any, is removed (a `removed` event) and replaced: at
//!   its own run time when the repeat rule (`every` value, or cron pattern and zone) is
//!   unchanged and that time fits the new start and end, else at the new spec's first run. A
//!   replacement takes the replaced occurrence's number; a scheduler with no pending occurrence
//!   gets a new one, numbered after the last.
//! - **Removal** (`pending_removal_refused`): the pending occurrence belongs to its scheduler,
//!   as in BullMQ: removing it by hand is refused, drain and clean leave it; only
//!   `remove_scheduler` (and obliterate) take it.
//! - **Claim** (`on_claim`): when a claim starts a scheduler's pending occurrence, the next one
//!   is produced in the same step, at `spec.next(run, count, now)`, so a slow job does not
//!   shift the schedule. Claiming any other occurrence (an older one retried or recovered after
//!   a stall) produces nothing. When the schedule has nothing more (its `limit` or `end`), the
//!   scheduler is removed; the running occurrence finishes normally.
//! - **Ids taken** (`place`): a run time whose occurrence id is already taken (by an older
//!   occurrence that ran at that very millisecond, or any other job) counts as produced; the
//!   scheduler moves on to the schedule's next run time. Each step is strictly later, so this
//!   ends.

use crate::error::{CoreError, CoreResult};
use crate::schedule::ScheduleSpec;

use super::model::{JobState, Millis};
use super::options::{check_payload, Dedup, JobOptions};
use super::paging::index_range;

/// What each occurrence is made of. `data` is JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub name: String,
    pub data: String,
    pub options: JobOptions,
}

/// A job scheduler, as the backends return it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobScheduler {
    pub key: String,
    pub spec: ScheduleSpec,
    pub template: Template,
    /// Occurrences produced so far, the pending one included.
    pub iteration_count: u64,
    /// The run time of the latest occurrence produced (the pending one, if it is still there).
    pub next_run: Millis,
    /// The pending occurrence's id, while that job exists and has not started.
    pub job_id: Option<String>,
}

/// The id of the occurrence of scheduler `key` due at `run`.
pub fn occurrence_id(key: &str, run: Millis) -> String {
    format!("repeat:{key}:{run}")
}

/// The refusal of removing job `id` by hand while it is scheduler `key`'s pending occurrence:
/// the schedule would produce nothing more until its next upsert (BullMQ refuses it too).
pub fn pending_removal_refused(id: &str, key: &str) -> CoreError {
    CoreError::Refused(format!(
        "job {id:?} is the pending occurrence of job scheduler {key:?} and cannot be removed \
         (remove_scheduler removes the scheduler and its occurrence)"
    ))
}

/// Whether a job in `state` (`None`: absent) is a pending occurrence, one that has not started.
pub fn not_started(state: Option<JobState>) -> bool {
    matches!(state, Some(JobState::Waiting | JobState::Delayed))
}

/// The options of the occurrence of scheduler `key` due at `run`, produced at `now`.
pub fn occurrence_options(
    key: &str,
    template: &JobOptions,
    run: Millis,
    now: Millis,
) -> JobOptions {
    JobOptions {
        job_id: Some(occurrence_id(key, run)),
        delay: run.saturating_sub(now),
        scheduler: Some(key.to_owned()),
        ..template.clone()
    }
}

/// Checks an upsert before anything is read or written; each error names the bad value.
pub fn check(
    key: &str,
    spec: &ScheduleSpec,
    template: &Template,
    now: Millis,
    max_payload_bytes: usize,
) -> CoreResult<()> {
    if key.is_empty() {
        return Err(invalid(
            "invalid scheduler key: \"\" (must not be empty)".into(),
        ));
    }
    spec.validate(now)?;
    let options = &template.options;
    if let Some(id) = &options.job_id {
        return Err(invalid(format!(
            "invalid template job_id: {id:?} (occurrences are named by their scheduler: \
             repeat:<key>:<run time>)"
        )));
    }
    if let Some(dedup) = &options.dedup {
        check_template_dedup(dedup)?;
    }
    if options.delay > 0 {
        return Err(invalid(format!(
            "invalid template delay: {} ms (the schedule decides when occurrences run)",
            options.delay
        )));
    }
    options.validate()?;
    check_payload(&template.data, max_payload_bytes)
}

/// A template's dedup takes keep_last only. A scheduler produces its next occurrence when the
/// previous one starts, so a mode that turns a duplicate away would drop that occurrence and,
/// with it, the schedule (nothing would start to produce the one after); keep_last keeps it on
/// the key, added when the running one finishes (`dedup::on_add_occurrence`). A ttl would hold
/// the key past the owner's finish and turn occurrences away, and replace acts only on a delayed
/// owner, which an occurrence never meets: refused, like the plain mode.
fn check_template_dedup(dedup: &Dedup) -> CoreResult<()> {
    let mode = if dedup.replace {
        "replace"
    } else if dedup.extend {
        "extend"
    } else if dedup.ttl.is_some() {
        "ttl"
    } else if !dedup.keep_last {
        "simple"
    } else {
        return Ok(());
    };
    Err(invalid(format!(
        "invalid template dedup: {:?} in {mode} mode (a scheduler's template takes keep_last \
         only, without ttl, extend or replace: an occurrence turned away would stop the \
         schedule)",
        dedup.id
    )))
}

/// The run time written in an occurrence id (`occurrence_id`): what follows its last `:`.
pub fn occurrence_run(id: &str) -> Option<Millis> {
    id.strip_prefix("repeat:")?.rsplit_once(':')?.1.parse().ok()
}

/// The delay of an occurrence that waited on its dedup key (keep_last) and is added at `now`,
/// when the key's owner finished: until its own run time, at once if that has passed (the
/// delay it was made with would count from now, and shift the schedule). `None` for a job that
/// is not an occurrence, whose delay counts from now.
pub fn requeued_delay(options: &JobOptions, now: Millis) -> Option<Millis> {
    options.scheduler.as_ref()?;
    let run = occurrence_run(options.job_id.as_deref()?)?;
    Some(run.saturating_sub(now))
}

/// What a backend knows of a scheduler that exists when it decides.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    pub spec: &'a ScheduleSpec,
    pub template: &'a Template,
    pub iteration_count: u64,
    pub next_run: Millis,
    /// The state of the job `occurrence_id(key, next_run)`; `None` when there is none.
    pub pending: Option<JobState>,
    /// There is no such job, but that occurrence waits on its template's dedup key (keep_last)
    /// for the key's owner to finish: it is pending all the same (not started), so an upsert
    /// keeps or replaces it rather than produce another.
    pub kept: bool,
}

/// What an upsert does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUpsert {
    /// Nothing: the pending occurrence stays, and is the answer.
    Keep,
    /// Remove the pending occurrence if `replace`, then produce occurrence number `number` at
    /// the first free run time from `from` (`place`), and store the scheduler with the new spec
    /// and template, `number` occurrences and that run time.
    Produce {
        replace: bool,
        number: u64,
        from: Millis,
    },
}

pub fn on_upsert(
    key: &str,
    spec: &ScheduleSpec,
    template: &Template,
    current: Option<&Current<'_>>,
    now: Millis,
) -> CoreResult<OnUpsert> {
    let Some(current) = current else {
        return Ok(OnUpsert::Produce {
            replace: false,
            number: 1,
            from: first(spec, now)?,
        });
    };
    let pending = not_started(current.pending) || current.kept;
    if pending && current.spec == spec && current.template == template {
        return Ok(OnUpsert::Keep);
    }
    let number = if pending {
        current.iteration_count.max(1)
    } else {
        current.iteration_count + 1
    };
    if let Some(limit) = spec.limit.filter(|&limit| number > limit) {
        return Err(invalid(format!(
            "invalid limit: {limit} (the next occurrence of scheduler {key:?} would be number \
             {number})"
        )));
    }
    let kept = current.next_run;
    let from = if pending && current.spec.repeat == spec.repeat && fits(spec, kept) {
        kept
    } else {
        first(spec, now)?
    };
    Ok(OnUpsert::Produce {
        replace: pending,
        number,
        from,
    })
}

/// Whether `at` is within the spec's start and end.
fn fits(spec: &ScheduleSpec, at: Millis) -> bool {
    spec.start.is_none_or(|start| at >= start) && spec.end.is_none_or(|end| at <= end)
}

fn first(spec: &ScheduleSpec, now: Millis) -> CoreResult<Millis> {
    // `validate` refuses a spec without a first run, so this error is only a safety net.
    spec.first(now)?
        .ok_or_else(|| invalid(format!("invalid schedule: it has no run after {now}")))
}

/// The run time of occurrence number `number`: `from`, or, while the id of that time is
/// `taken`, the schedule's next run time after it. `None` when the schedule ends first (or
/// cannot be evaluated further). Only the errors of `taken` (the backend's reads) are errors.
pub fn place(
    spec: &ScheduleSpec,
    key: &str,
    from: Millis,
    number: u64,
    now: Millis,
    mut taken: impl FnMut(&str) -> CoreResult<bool>,
) -> CoreResult<Option<Millis>> {
    let mut at = from;
    while taken(&occurrence_id(key, at))? {
        // `number - 1` runs before this one: the limit allowed this one, so `next` is not
        // stopped by it, only by `end`. Each step is strictly later than the last.
        match spec.next(at, number.saturating_sub(1), now) {
            Ok(Some(next)) => at = next,
            Ok(None) | Err(_) => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// The refusal of an upsert whose every run time is taken up to the schedule's end.
pub fn no_free_run(key: &str, spec: &ScheduleSpec) -> CoreError {
    invalid(format!(
        "invalid end: {} (every run time of scheduler {key:?} before it is taken by an \
         existing job)",
        spec.end
            .map_or_else(|| "none".to_owned(), |end| end.to_string())
    ))
}

/// What claiming an occurrence of a scheduler does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnClaim {
    /// Nothing: the scheduler is gone, or the job is not its pending occurrence.
    Ignore,
    /// Produce occurrence number `number` at the first free run time from `from` (`place`; if
    /// there is none, as `Finish`), and store `number` and that run time.
    Advance { from: Millis, number: u64 },
    /// The schedule has no run after this one: remove the scheduler.
    Finish,
}

/// `job_id` (an occurrence of scheduler `key`) starts at `now`; `current` is the scheduler, if
/// it still exists: its spec, occurrence count and latest run time.
pub fn on_claim(
    job_id: &str,
    key: &str,
    current: Option<(&ScheduleSpec, u64, Millis)>,
    now: Millis,
) -> OnClaim {
    let Some((spec, count, next_run)) = current else {
        return OnClaim::Ignore;
    };
    if job_id != occurrence_id(key, next_run) {
        return OnClaim::Ignore;
    }
    match spec.next(next_run, count, now) {
        Ok(Some(from)) => OnClaim::Advance {
            from,
            number: count + 1,
        },
        // An evaluation error (a time beyond what cron covers) ends the schedule too: a claim
        // must not fail because of the scheduler.
        Ok(None) | Err(_) => OnClaim::Finish,
    }
}

/// Schedulers ordered by next run time (then key), as `list_schedulers` returns them: from
/// index `start` to `end` inclusive (`end < 0` counts from the end: -1 is the last);
/// `ascending = false` reverses the order first.
pub fn page<T>(
    mut all: Vec<T>,
    order: impl Fn(&T) -> (Millis, &str),
    start: i64,
    end: i64,
    ascending: bool,
) -> Vec<T> {
    all.sort_by(|a, b| order(a).cmp(&order(b)));
    if !ascending {
        all.reverse();
    }
    let range = index_range(all.len(), start, end);
    all.into_iter()
        .skip(range.start)
        .take(range.len())
        .collect()
}

fn invalid(message: String) -> CoreError {
    CoreError::InvalidConfig(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::Dedup;

    const T: Millis = 1_700_000_000_000;

    type Edit = Box<dyn Fn(&mut Template)>;

    fn template() -> Template {
        Template {
            name: "report".into(),
            data: "{}".into(),
            options: JobOptions::default(),
        }
    }

    fn current<'a>(
        spec: &'a ScheduleSpec,
        template: &'a Template,
        pending: Option<JobState>,
    ) -> Current<'a> {
        Current {
            spec,
            template,
            iteration_count: 3,
            next_run: T + 500,
            pending,
            kept: false,
        }
    }

    #[test]
    fn occurrences_carry_the_key_the_id_and_the_delay() {
        let options = occurrence_options("k", &JobOptions::default(), T + 250, T);
        assert_eq!(options.job_id.as_deref(), Some("repeat:k:1700000000250"));
        assert_eq!(options.scheduler.as_deref(), Some("k"));
        assert_eq!(options.delay, 250);
        assert_eq!(occurrence_options("k", &options, T - 5, T).delay, 0);
    }

    #[test]
    fn check_refuses_what_an_occurrence_cannot_carry() {
        let spec = ScheduleSpec::every(1000);
        let cases: [(&str, Edit); 6] = [
            (
                "template job_id",
                Box::new(|t| t.options.job_id = Some("x".into())),
            ),
            (
                "template dedup: \"d\" in simple mode",
                Box::new(|t| t.options.dedup = Some(Dedup::simple("d"))),
            ),
            ("template delay: 5 ms", Box::new(|t| t.options.delay = 5)),
            ("invalid attempts: 0", Box::new(|t| t.options.attempts = 0)),
            (
                "invalid scheduler",
                Box::new(|t| t.options.scheduler = Some("k".into())),
            ),
            (
                "exceeds max_payload_bytes",
                Box::new(|t| t.data = "x".repeat(11)),
            ),
        ];
        for (fragment, edit) in cases {
            let mut t = template();
            edit(&mut t);
            let err = check("k", &spec, &t, T, 10).unwrap_err();
            assert!(matches!(err, CoreError::InvalidConfig(_)), "{err:?}");
            assert!(err.to_string().contains(fragment), "{fragment}: {err}");
        }
        let err = check("", &spec, &template(), T, 10).unwrap_err();
        assert!(err.to_string().contains("scheduler key"), "{err}");
        let err = check("k", &ScheduleSpec::every(0), &template(), T, 10).unwrap_err();
        assert!(err.to_string().contains("every: 0"), "{err}");
        assert!(check("k", &spec, &template(), T, 10).is_ok());
    }

    #[test]
    fn a_template_takes_keep_last_dedup_only() {
        let spec = ScheduleSpec::every(1000);
        let keep_last = Dedup {
            keep_last: true,
            ..Dedup::simple("d")
        };
        let modes = [
            (
                "ttl",
                Dedup {
                    ttl: Some(5),
                    ..keep_last.clone()
                },
            ),
            (
                "extend",
                Dedup {
                    ttl: Some(5),
                    extend: true,
                    ..Dedup::simple("d")
                },
            ),
            (
                "replace",
                Dedup {
                    replace: true,
                    ..keep_last.clone()
                },
            ),
            ("simple", Dedup::simple("d")),
        ];
        for (mode, dedup) in modes {
            let mut t = template();
            t.options.dedup = Some(dedup);
            let err = check("k", &spec, &t, T, 10).unwrap_err();
            assert!(
                err.to_string().contains(&format!("\"d\" in {mode} mode")),
                "{err}"
            );
        }
        let mut t = template();
        t.options.dedup = Some(keep_last);
        assert!(check("k", &spec, &t, T, 10).is_ok());
    }

    #[test]
    fn a_requeued_occurrence_runs_at_its_own_run_time() {
        let options = occurrence_options("a:b", &JobOptions::default(), T + 250, T);
        assert_eq!(
            occurrence_run(options.job_id.as_deref().unwrap()),
            Some(T + 250)
        );
        assert_eq!(requeued_delay(&options, T + 100), Some(150));
        assert_eq!(requeued_delay(&options, T + 900), Some(0));
        let plain = JobOptions {
            job_id: Some("repeat:x:5".into()),
            ..JobOptions::default()
        };
        assert_eq!(requeued_delay(&plain, T), None);
        assert_eq!(occurrence_run("other"), None);
    }

    #[test]
    fn a_new_key_produces_its_first_run() {
        let spec = ScheduleSpec {
            start: Some(T + 9),
            ..ScheduleSpec::every(1000)
        };
        assert_eq!(
            on_upsert("k", &spec, &template(), None, T).unwrap(),
            OnUpsert::Produce {
                replace: false,
                number: 1,
                from: T + 9
            }
        );
    }

    #[test]
    fn the_same_upsert_again_keeps_the_pending_occurrence() {
        let spec = ScheduleSpec::every(1000);
        let t = template();
        for state in [JobState::Waiting, JobState::Delayed] {
            let cur = current(&spec, &t, Some(state));
            assert_eq!(
                on_upsert("k", &spec, &t, Some(&cur), T).unwrap(),
                OnUpsert::Keep
            );
        }
    }

    #[test]
    fn a_changed_template_replaces_at_the_same_run_time_and_number() {
        let spec = ScheduleSpec::every(1000);
        let old = template();
        let cur = current(&spec, &old, Some(JobState::Delayed));
        let new = Template {
            data: "{\"v\":2}".into(),
            ..template()
        };
        assert_eq!(
            on_upsert("k", &spec, &new, Some(&cur), T).unwrap(),
            OnUpsert::Produce {
                replace: true,
                number: 3,
                from: T + 500
            }
        );
    }

    #[test]
    fn an_occurrence_kept_on_its_dedup_key_is_pending() {
        let spec = ScheduleSpec::every(1000);
        let t = template();
        let kept = Current {
            kept: true,
            ..current(&spec, &t, None)
        };
        assert_eq!(
            on_upsert("k", &spec, &t, Some(&kept), T).unwrap(),
            OnUpsert::Keep
        );
        let new = Template {
            data: "{\"v\":2}".into(),
            ..template()
        };
        assert_eq!(
            on_upsert("k", &spec, &new, Some(&kept), T).unwrap(),
            OnUpsert::Produce {
                replace: true,
                number: 3,
                from: T + 500
            }
        );
    }

    #[test]
    fn a_changed_rule_replaces_at_the_new_first_run() {
        let old_spec = ScheduleSpec::every(1000);
        let t = template();
        let cur = current(&old_spec, &t, Some(JobState::Delayed));
        let cron = ScheduleSpec::cron("0 * * * *", "UTC");
        let Ok(OnUpsert::Produce {
            replace: true,
            number: 3,
            from,
        }) = on_upsert("k", &cron, &t, Some(&cur), T)
        else {
            panic!("not a replacement");
        };
        assert_eq!(Some(from), cron.first(T).unwrap());
        // The same rule, but the kept time is before the new start: the new first run.
        let later = ScheduleSpec {
            start: Some(T + 5000),
            ..old_spec.clone()
        };
        assert!(matches!(
            on_upsert("k", &later, &t, Some(&cur), T).unwrap(),
            OnUpsert::Produce { from, .. } if from == T + 5000
        ));
    }

    #[test]
    fn without_a_pending_occurrence_a_new_one_is_numbered_after_the_last() {
        let spec = ScheduleSpec::every(1000);
        let t = template();
        for gone in [None, Some(JobState::Active), Some(JobState::Completed)] {
            let cur = current(&spec, &t, gone);
            assert_eq!(
                on_upsert("k", &spec, &t, Some(&cur), T).unwrap(),
                OnUpsert::Produce {
                    replace: false,
                    number: 4,
                    from: T
                },
                "{gone:?}"
            );
        }
    }

    #[test]
    fn a_limit_already_used_up_is_refused() {
        let t = template();
        let old = ScheduleSpec::every(1000);
        let cur = current(&old, &t, Some(JobState::Delayed));
        let at_limit = ScheduleSpec {
            limit: Some(3),
            ..old.clone()
        };
        assert!(on_upsert("k", &at_limit, &t, Some(&cur), T).is_ok());
        let below = ScheduleSpec {
            limit: Some(2),
            ..old.clone()
        };
        let err = on_upsert("k", &below, &t, Some(&cur), T).unwrap_err();
        assert!(
            err.to_string().contains("invalid limit: 2") && err.to_string().contains("number 3"),
            "{err}"
        );
        let removed = current(&old, &t, None);
        assert!(on_upsert("k", &at_limit, &t, Some(&removed), T).is_err());
    }

    #[test]
    fn place_skips_taken_run_times() {
        let spec = ScheduleSpec::every(1000);
        let taken = [occurrence_id("k", T), occurrence_id("k", T + 1000)];
        let placed = place(&spec, "k", T, 1, T, |id| Ok(taken.iter().any(|t| t == id)));
        assert_eq!(placed.unwrap(), Some(T + 2000));
        let ending = ScheduleSpec {
            end: Some(T + 1500),
            ..spec
        };
        let placed = place(&ending, "k", T, 1, T, |id| {
            Ok(taken.iter().any(|t| t == id))
        });
        assert_eq!(placed.unwrap(), None);
    }

    #[test]
    fn claims_advance_only_the_pending_occurrence() {
        let spec = ScheduleSpec {
            limit: Some(3),
            ..ScheduleSpec::every(1000)
        };
        let pending = occurrence_id("k", T);
        assert_eq!(
            on_claim(&pending, "k", Some((&spec, 1, T)), T + 10),
            OnClaim::Advance {
                from: T + 1000,
                number: 2
            }
        );
        assert_eq!(
            on_claim(&occurrence_id("k", T - 1000), "k", Some((&spec, 1, T)), T),
            OnClaim::Ignore
        );
        assert_eq!(on_claim(&pending, "k", None, T), OnClaim::Ignore);
        assert_eq!(
            on_claim(&pending, "k", Some((&spec, 3, T)), T),
            OnClaim::Finish
        );
    }

    #[test]
    fn pages_are_ordered_by_next_run_then_key() {
        let all = vec![(T + 2, "b"), (T + 1, "z"), (T + 2, "a")];
        let got = page(all.clone(), |s| (s.0, s.1), 0, -1, true);
        assert_eq!(got, vec![(T + 1, "z"), (T + 2, "a"), (T + 2, "b")]);
        let got = page(all.clone(), |s| (s.0, s.1), 0, 0, false);
        assert_eq!(got, vec![(T + 2, "b")]);
        assert!(page(all, |s| (s.0, s.1), 5, -1, true).is_empty());
    }
}
