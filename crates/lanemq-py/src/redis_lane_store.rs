//! `RedisLaneStore`: the Python class of the shared lanes' store on Redis (the contract is
//! `python/lanemq/lanes/_store.py`'s `LaneStore`; the store is
//! `lanemq_redis::RedisLaneStore`). Its async methods return awaitables the tokio runtime
//! resolves; arguments are checked here, each refusal a `ConfigError` naming the value.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lanemq_core::jobs::BoxFuture;
use lanemq_core::lanes::shared::LaneSpec;
use lanemq_redis::{Claimed, Letter, NewCommand, Outcome, RedisLaneStore as Store};
use pyo3::prelude::*;
use pyo3::types::PyCFunction;

use crate::bridge::count;
use crate::core_args::{CoreArg, Text};
use crate::errors::invalid;
use crate::ready::resolve;

/// The contract's `LaneSpec` tuple as Python gives it.
type LaneTuple = (
    Text,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Vec<(f64, i64)>,
);

/// (lane, name, owner, payload): a command as `enqueue_many` takes it from Python.
type CommandTuple = (i64, Option<Text>, Option<Text>, Option<Text>);

/// A count of milliseconds (>= `min`); the error names `field`.
fn millis(field: &str, value: i64, min: i64) -> PyResult<u64> {
    if value < min {
        return Err(invalid(field, value, &format!("must be at least {min} ms")));
    }
    Ok(value as u64)
}

/// A command id: a positive integer.
fn command_id(value: i64) -> PyResult<u64> {
    if value < 1 {
        return Err(invalid("command_id", value, "must be a positive integer"));
    }
    Ok(value as u64)
}

/// The tuple as the core's `LaneSpec`, which `setup` checks (as the local store does).
fn lane_spec(lane: LaneTuple) -> PyResult<LaneSpec> {
    let (lane_id, priority, min, max, permits, per_ms, deadline, steps) = lane;
    Ok(LaneSpec {
        lane_id: lane_id.core("lane id")?,
        priority,
        min_concurrency: min,
        max_concurrency: max,
        rate_permits: permits,
        rate_per_ms: per_ms,
        boost_deadline_ms: deadline,
        boost_steps: steps,
    })
}

fn texts(names: Vec<Text>) -> PyResult<Vec<String>> {
    names.into_iter().map(|name| name.core("name")).collect()
}

/// Resolves `future` on the runtime, its value as it is.
fn awaitable<'py, T>(py: Python<'py>, future: BoxFuture<T>) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    resolve(py, future, Ok, false)
}

/// A wake token a `wait` took, given back (`RedisLaneStore::rewake`) unless it reached the
/// awaiting caller (`disarm`).
struct Rewake {
    store: Arc<Store>,
    pid: Option<String>,
}

impl Rewake {
    fn disarm(&mut self) {
        self.pid = None;
    }
}

impl Drop for Rewake {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.take() {
            let store = Arc::clone(&self.store);
            // (A failure has nobody to tell: the next wait then runs to its timeout, and the
            // caller's loop claims after it anyway.)
            crate::runtime::runtime().spawn(async move {
                let _ = store.rewake(&pid).await;
            });
        }
    }
}

#[pyclass(frozen, name = "RedisLaneStore", module = "lanemq._core")]
pub struct RedisLaneStore {
    store: Arc<Store>,
}

#[pymethods]
impl RedisLaneStore {
    /// The store `name` on the Redis server, cluster (`redis+cluster://`) or sentinels'
    /// master (`redis+sentinel://`) that `url` names, once the server answers.
    #[staticmethod]
    fn open<'py>(py: Python<'py>, url: Text, name: Text) -> PyResult<Bound<'py, PyAny>> {
        let url = url.core("url")?;
        let name = name.core("name")?;
        let store = Arc::new(Store::open(&url, &name).map_err(crate::errors::to_py)?);
        let future: BoxFuture<Arc<Store>> = Box::pin(async move {
            store.connect().await?;
            Ok(store)
        });
        resolve(py, future, |store| Ok(Self { store }), false)
    }

    fn setup<'py>(
        &self,
        py: Python<'py>,
        config: Text,
        lanes: Vec<LaneTuple>,
        global_max: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let config = config.core("config")?;
        let lanes = lanes
            .into_iter()
            .map(lane_spec)
            .collect::<PyResult<Vec<_>>>()?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.setup(&config, &lanes, global_max).await }),
        )
    }

    fn join<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        names: Vec<Text>,
        lease_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (pid, names) = (pid.core("pid")?, texts(names)?);
        let lease_ms = millis("lease_ms", lease_ms, 1)?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.join(&pid, &names, lease_ms).await }),
        )
    }

    fn renew<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        names: Vec<Text>,
        lease_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (pid, names) = (pid.core("pid")?, texts(names)?);
        let lease_ms = millis("lease_ms", lease_ms, 1)?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.renew(&pid, &names, lease_ms).await }),
        )
    }

    fn leave<'py>(&self, py: Python<'py>, pid: Text) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let store = Arc::clone(&self.store);
        awaitable(py, Box::pin(async move { store.leave(&pid).await }))
    }

    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        submitter: Text,
        lane: i64,
        name: Option<Text>,
        owner: Option<Text>,
        payload: Option<Text>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let submitter = submitter.core("submitter")?;
        let lane = count("lane", lane, 0)?;
        let name = name.core("name")?;
        let owner = owner.core("owner")?;
        let payload = payload.core("payload")?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move {
                store
                    .enqueue(
                        &submitter,
                        lane,
                        name.as_deref(),
                        owner.as_deref(),
                        payload.as_deref(),
                    )
                    .await
            }),
        )
    }

    /// `enqueue` of each (lane, name, owner, payload), in order, in one script call.
    fn enqueue_many<'py>(
        &self,
        py: Python<'py>,
        submitter: Text,
        commands: Vec<CommandTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let submitter = submitter.core("submitter")?;
        let commands = commands
            .into_iter()
            .map(|(lane, name, owner, payload)| {
                Ok((
                    count("lane", lane, 0)?,
                    name.core("name")?,
                    owner.core("owner")?,
                    payload.core("payload")?,
                ))
            })
            .collect::<PyResult<Vec<NewCommand>>>()?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.enqueue_many(&submitter, &commands).await }),
        )
    }

    fn claim<'py>(&self, py: Python<'py>, pid: Text, max_n: i64) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let max_n = count("max_n", max_n, 0)?;
        let store = Arc::clone(&self.store);
        let future: BoxFuture<(Vec<Claimed>, Option<u64>)> =
            Box::pin(async move { store.claim(&pid, max_n).await });
        awaitable(py, future)
    }

    fn complete<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        command_id: i64,
        result: Text,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (pid, result) = (pid.core("pid")?, result.core("result")?);
        let id = self::command_id(command_id)?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.complete(&pid, id, &result).await }),
        )
    }

    /// `complete` of each (command_id, result), in one script call.
    fn complete_many<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        results: Vec<(i64, Text)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let results = results
            .into_iter()
            .map(|(id, result)| Ok((self::command_id(id)?, result.core("result")?)))
            .collect::<PyResult<Vec<_>>>()?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move { store.complete_many(&pid, &results).await }),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn fail<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        command_id: i64,
        error: Text,
        retry_in_ms: Option<i64>,
        command_type: Text,
        letter_limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (pid, error) = (pid.core("pid")?, error.core("error")?);
        let command_type = command_type.core("command_type")?;
        let id = self::command_id(command_id)?;
        let retry_in_ms = retry_in_ms
            .map(|ms| millis("retry_in_ms", ms, 0))
            .transpose()?;
        let letter_limit = millis("letter_limit", letter_limit, 0)?;
        let store = Arc::clone(&self.store);
        awaitable(
            py,
            Box::pin(async move {
                store
                    .fail(&pid, id, &error, retry_in_ms, &command_type, letter_limit)
                    .await
            }),
        )
    }

    fn release<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        command_id: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let id = self::command_id(command_id)?;
        let store = Arc::clone(&self.store);
        awaitable(py, Box::pin(async move { store.release(&pid, id).await }))
    }

    fn cancel<'py>(&self, py: Python<'py>, command_id: i64) -> PyResult<Bound<'py, PyAny>> {
        let id = self::command_id(command_id)?;
        let store = Arc::clone(&self.store);
        awaitable(py, Box::pin(async move { store.cancel(id).await }))
    }

    fn outcomes<'py>(&self, py: Python<'py>, pid: Text) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let store = Arc::clone(&self.store);
        let future: BoxFuture<Vec<Outcome>> = Box::pin(async move { store.outcomes(&pid).await });
        awaitable(py, future)
    }

    /// Waits on a blocking connection of its own. A wake token it took that never reaches an
    /// awaiting caller (the awaitable was cancelled: the hub drops the outcome, and with it
    /// the `Rewake`) goes back, so a cancelled wait leaves the wake to the next; and once
    /// cancelled it stops at its current BLPOP's end instead of holding a connection until its
    /// timeout.
    fn wait<'py>(
        &self,
        py: Python<'py>,
        pid: Text,
        timeout_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pid = pid.core("pid")?;
        let timeout_ms = millis("timeout_ms", timeout_ms, 0)?;
        let store = Arc::clone(&self.store);
        let abandoned = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&abandoned);
        let future: BoxFuture<Option<Rewake>> = Box::pin(async move {
            let taken = store.wait(&pid, timeout_ms, &seen).await?;
            Ok(taken.then(|| Rewake {
                store,
                pid: Some(pid),
            }))
        });
        let delivered = |taken: Option<Rewake>| {
            if let Some(mut rewake) = taken {
                rewake.disarm();
            }
            Ok(())
        };
        let awaitable = resolve(py, future, delivered, false)?;
        // (done: delivered, when the wait is over anyway, or cancelled)
        let on_done = PyCFunction::new_closure(py, None, None, move |_args, _kwargs| {
            abandoned.store(true, Ordering::Release);
        })?;
        awaitable.call_method1("add_done_callback", (on_done,))?;
        Ok(awaitable)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        awaitable(py, Box::pin(async move { store.stats().await }))
    }

    fn dead_letters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        let future: BoxFuture<Vec<Letter>> = Box::pin(async move { store.dead_letters().await });
        awaitable(py, future)
    }

    fn clear_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        awaitable(py, Box::pin(async move { store.clear_all().await }))
    }

    fn close(&self) {
        self.store.close();
    }

    /// The store's name.
    #[getter]
    fn name(&self) -> &str {
        self.store.name()
    }

    /// The URL it was opened with, its password masked.
    #[getter]
    fn url(&self) -> &str {
        self.store.masked_url()
    }

    /// The URL with its password masked, and the store's name.
    fn __repr__(&self) -> String {
        format!(
            "RedisLaneStore(url={:?}, name={:?})",
            self.store.masked_url(),
            self.store.name()
        )
    }
}
