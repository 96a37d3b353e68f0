//! The call machinery of a queue: running a script (`run`: by FCALL, or EVALSHA without
//! functions; the library loaded again when the server lost it; a cluster's redirections
//! followed; the queues a flow names linked, and the call made again), the same call as bytes
//! for a wire (`request`), and plain commands (`connection`, `query`). What each call sends
//! and how its reply reads are in the files of the calls (`hot_path.rs` for adding, claiming
//! and completing).

use std::sync::Arc;

use lanemq_core::CoreResult;
use redis::aio::MultiplexedConnection;
use redis::Value;

use super::RedisBackend;
use crate::keys::Keys;
use crate::replicas::adds_jobs;
use crate::resp;
use crate::scripts::{self, LuaScript};
use crate::topology::route;
use crate::topology::server::Server;

impl RedisBackend {
    /// The command connection, once this queue is ready.
    pub(crate) async fn connection(&self) -> CoreResult<MultiplexedConnection> {
        self.ready().await?;
        self.target.lost(self.server().commands().await)
    }

    /// Runs a pipeline of plain commands (reads need no script), following a cluster's
    /// redirections like `run`.
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> CoreResult<T> {
        let mut redirects = 0;
        loop {
            let mut connection = self.connection().await?;
            match pipe.query_async(&mut connection).await {
                Ok(value) => return Ok(value),
                // A read in a slot that moved (or is moving): again, at its master as the map
                // says now (`error` noted the map stale).
                Err(e) if self.target.route.is_some() && route::redirect(&e).is_some() => {
                    let error = self.target.error(e);
                    redirects += 1;
                    if redirects >= route::MAX_REDIRECTS {
                        return Err(error);
                    }
                    tokio::time::sleep(route::SETTLE_WAIT).await;
                }
                Err(e) => return Err(self.target.error(e)),
            }
        }
    }

    /// Whether scripts run as the functions of the library (`scripts::LIBRARY`), which the
    /// server has from Redis 7 and Valkey 7.2 on; else by EVALSHA.
    pub(crate) fn functions(&self) -> bool {
        !self.evalsha_only && self.server().known_functions().unwrap_or(true)
    }

    /// Runs a script with this queue's keys and those of the queues linked to it: by FCALL
    /// when the server has the library's functions (loaded again if the server lost them, as
    /// after a restart without persistence), else by EVALSHA. A script that needs another
    /// queue's keys writes nothing and names it (`LANEMQ_NEED_QUEUE`): it is linked, and the
    /// script runs again.
    pub(crate) async fn run(&self, script: &LuaScript, args: Vec<String>) -> CoreResult<Value> {
        self.ready().await?;
        // Boxed for the same reason as `ready`'s checks: the redirections make it large.
        Box::pin(self.run_ready(script, args)).await
    }

    /// `run`, for a queue whose server was checked (`ready`, which calls it itself). On a
    /// cluster it follows the slot: MOVED reads the map again and calls the new master, ASK
    /// calls the node named once after ASKING, TRYAGAIN and CLUSTERDOWN wait a little and ask
    /// again (each such reply means the script did not run).
    pub(super) async fn run_ready(
        &self,
        script: &LuaScript,
        args: Vec<String>,
    ) -> CoreResult<Value> {
        let mut reloaded = false;
        let mut redirects = 0;
        let mut ask: Option<Arc<Server>> = None;
        loop {
            let asking = ask.take();
            let server = asking.clone().unwrap_or_else(|| self.server());
            let acknowledged = self.replica_ack.filter(|_| adds_jobs(script));
            let (mut connection, spare) = match acknowledged {
                Some(_) => {
                    let live = self.target.lost(server.blocking().await)?;
                    (live.connection.clone(), Some(live))
                }
                None => (self.target.lost(server.commands().await)?, None),
            };
            let functions = self.functions();
            let outcome = if functions {
                let call = self.function_call(script, &args);
                if asking.is_some() {
                    let mut pipe = redis::pipe();
                    pipe.cmd("ASKING").ignore().add_command(call);
                    pipe.query_async::<(Value,)>(&mut connection)
                        .await
                        .map(|(value,)| value)
                } else {
                    call.query_async(&mut connection).await
                }
            } else {
                let mut invocation = script.script.prepare_invoke();
                self.with_keys(script, |_, keys| {
                    keys.for_each(|key| {
                        invocation.key(key);
                    });
                });
                invocation.arg(&args);
                invocation.invoke_async(&mut connection).await
            };
            match outcome {
                Ok(value) => {
                    if let (Some(ack), Some(live)) = (acknowledged, spare) {
                        ack.wait(&server, &mut connection).await?;
                        server.keep_blocking(live);
                    }
                    return Ok(value);
                }
                Err(e) if functions && !reloaded && function_missing(&e) => {
                    // (also on a node an ASK named, which may not have had a call yet)
                    reloaded = true;
                    load_library(&mut connection)
                        .await
                        .map_err(|e| server.error(e))?;
                    ask = asking;
                }
                Err(e) => {
                    let redirect = self.target.route.as_ref().and_then(|_| route::redirect(&e));
                    if let Some(redirect) = redirect.filter(|_| redirects < route::MAX_REDIRECTS) {
                        redirects += 1;
                        ask = self.target.follow_redirect(redirect, functions).await?;
                        continue;
                    }
                    match needed_queue(&e) {
                        Some(queue) if self.link(&queue)? => {}
                        _ => return Err(self.target.error(e)),
                    }
                }
            }
        }
    }

    /// Calls `each` with the number of keys `script` gets, and them: this queue's, then (for
    /// scripts that follow flows) those of the queues linked to it. One lock, so the count is
    /// that of the keys.
    fn with_keys(
        &self,
        script: &LuaScript,
        each: impl FnOnce(usize, &mut dyn Iterator<Item = &String>),
    ) {
        let linked = self.linked.lock().unwrap_or_else(|e| e.into_inner());
        let linked = linked.iter().filter(|_| script.links);
        let keys = self
            .script_keys
            .iter()
            .chain(linked.flat_map(|(_, keys)| keys));
        each(keys.clone().count(), &mut keys.into_iter());
    }

    /// `<command> <target> <number of keys> <keys...> <args...>`: FCALL of a function, or
    /// EVALSHA of a script.
    fn keyed_call(
        &self,
        command: &str,
        target: &str,
        script: &LuaScript,
        args: &[String],
    ) -> redis::Cmd {
        let mut call = redis::cmd(command);
        self.with_keys(script, |count, keys| {
            call.arg(target).arg(count);
            keys.for_each(|key| {
                call.arg(key);
            });
        });
        call.arg(args);
        call
    }

    fn function_call(&self, script: &LuaScript, args: &[String]) -> redis::Cmd {
        self.keyed_call("FCALL", &script.function, script, args)
    }

    /// The claim as an FCALL (`waits.rs` sends it behind a wait).
    pub(crate) fn claim_call(&self, args: &[String]) -> redis::Cmd {
        self.function_call(&scripts::CLAIM, args)
    }

    /// The call `run` makes first, as bytes for a wire (`crate::wire`): FCALL, or EVALSHA on a
    /// server without functions. This queue's keys go in as packed once: packing the call
    /// through a `redis::Cmd`, key by key, showed in the client's CPU profile of an awaited
    /// add (perf; benches/history/5-10.md).
    pub(crate) fn request(&self, script: &LuaScript, args: &[String]) -> Vec<u8> {
        let (command, target) = if self.functions() {
            ("FCALL", script.function.as_str())
        } else {
            ("EVALSHA", script.script.get_hash())
        };
        let size: usize = args.iter().map(|arg| arg.len() + 16).sum();
        let mut out = Vec::with_capacity(self.packed_keys.len() + size + 96);
        self.with_keys(script, |count, keys| {
            resp::array(&mut out, 3 + count + args.len());
            resp::bulk(&mut out, command.as_bytes());
            resp::bulk(&mut out, target.as_bytes());
            resp::bulk(&mut out, count.to_string().as_bytes());
            out.extend_from_slice(&self.packed_keys);
            for key in keys.skip(self.script_keys.len()) {
                resp::bulk(&mut out, key.as_bytes());
            }
        });
        for arg in args {
            resp::bulk(&mut out, arg.as_bytes());
        }
        out
    }

    /// Whether a script's error reply is one `run` handles by itself and calls again (the
    /// library or script is missing, a flow needs another queue linked): such a script wrote
    /// nothing, and the call can go again the ordinary way.
    pub(crate) fn runs_again(&self, error: &redis::RedisError) -> bool {
        // On a cluster: the slot moved or is moving (the script did not run), and the
        // ordinary call follows it.
        if self.target.redirected(error) {
            return true;
        }
        if self.functions() {
            function_missing(error) || needed_queue(error).is_some()
        } else {
            error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
                || needed_queue(error).is_some()
        }
    }

    /// Links queue `queue` (same server and prefix) to this one; `false` if it already was
    /// (or is this queue). On a cluster, a queue of another slot is refused, naming both (the
    /// server would refuse the call's keys as CROSSSLOT).
    pub(crate) fn link(&self, queue: &str) -> CoreResult<bool> {
        if queue == self.queue {
            return Ok(false);
        }
        let mut linked = self.linked.lock().unwrap_or_else(|e| e.into_inner());
        if linked.iter().any(|(name, _)| name == queue) {
            return Ok(false);
        }
        let keys = Keys::new(&self.prefix, queue);
        if let Some(route) = &self.target.route {
            let other_slot = crate::topology::cluster::slot_of(&keys.key("meta")) != route.slot;
            if other_slot && !route.cluster.one_master() {
                return Err(route::cross_slot(&self.prefix, &self.queue, queue));
            }
        }
        linked.push((queue.to_owned(), keys.script_keys()));
        Ok(true)
    }
}

/// The queue a script asked for (`LANEMQ_NEED_QUEUE <name in hex>`, see `lua/includes/flows.lua`).
fn needed_queue(error: &redis::RedisError) -> Option<String> {
    // redis-rs shows the error's code apart from its detail (`"CODE": detail`).
    const MARK: &str = "LANEMQ_NEED_QUEUE";
    let text = error.to_string();
    let hex = text[text.find(MARK)? + MARK.len()..]
        .trim_start_matches(|c: char| !c.is_ascii_hexdigit())
        .split(|c: char| !c.is_ascii_hexdigit())
        .next()?;
    let bytes = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// Loads the library of every script (`scripts::LIBRARY`) unless the server has it. Its name
/// carries a hash of its text, so a library of that name is this one; and loading without
/// REPLACE refuses an existing name before compiling (a load compiles the whole library, on
/// every connect otherwise; its server time is in benches/history/5-10.md).
pub(crate) async fn load_library(connection: &mut MultiplexedConnection) -> redis::RedisResult<()> {
    match redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(&scripts::LIBRARY.text)
        .query_async::<String>(connection)
        .await
    {
        Err(e) if e.to_string().contains("already exists") => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Whether FCALL named a function the server does not have (it lost the library).
pub(crate) fn function_missing(error: &redis::RedisError) -> bool {
    error.to_string().contains("Function not found")
}
