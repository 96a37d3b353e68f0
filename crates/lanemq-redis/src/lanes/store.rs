//! `RedisLaneStore`: one store (a server, cluster or sentinel set, and a name), and how its
//! script calls reach the server: on a cluster, the master of the store's slot, following
//! MOVED, ASK and a changing cluster (as the queues do, `topology::route`); behind sentinels,
//! the master they name.

use lanemq_core::{CoreError, CoreResult};
use redis::{FromRedisValue, Value};

use super::script::{refusal, LANES};
use crate::keys::Keys;
use crate::topology::cluster::{is_cluster_url, Cluster};
use crate::topology::connect::mask_url;
use crate::topology::route::{self, Route, Target};
use crate::topology::sentinel::is_sentinel_url;
use crate::topology::server::{Server, ServerOptions};

/// The prefix of every key of a store: `lanemq:lanes:{<name>}:...` (the braces are the hash
/// tag that keeps a store's keys in one Redis Cluster slot).
const PREFIX: &str = "lanemq:lanes";

pub struct RedisLaneStore {
    pub(super) target: Target,
    name: String,
    /// The URL with its password masked, for reprs and messages.
    masked_url: String,
    /// Its keys: `<prefix>:{<name>}:...`, a queue's layout of names.
    keys: Keys,
}

impl RedisLaneStore {
    /// The store `name` on the server (or cluster, or sentinels' master) `url` names, without
    /// I/O (`connect` checks the server answers). A name that would break the hash tag (empty,
    /// or holding a brace) is refused, as is a URL that does not parse (its password masked).
    pub fn open(url: &str, name: &str) -> CoreResult<Self> {
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(CoreError::InvalidConfig(format!(
                "invalid store name: {name:?} (must be non-empty, without '{{' or '}}')"
            )));
        }
        let keys = Keys::new(PREFIX, name);
        let options = ServerOptions::default();
        let target = if is_cluster_url(url) || is_sentinel_url(url) {
            let cluster = Cluster::shared(url, &options)?;
            let seed = cluster.first_seed()?;
            // (`Route` finds the slot of the `meta` key: the store's, as a queue's)
            let route = Route::new(cluster, &keys);
            Target::new(seed, Some(route))
        } else {
            Target::new(Server::shared(url, &options)?, None)
        };
        Ok(Self {
            target,
            name: name.to_owned(),
            masked_url: mask_url(url),
            keys,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL it was opened with, its password masked.
    pub fn masked_url(&self) -> &str {
        &self.masked_url
    }

    /// Checks the server answers (`PING`; on a cluster, the master of the store's slot).
    pub async fn connect(&self) -> CoreResult<()> {
        self.target.routed().await?;
        let mut connection = self.target.lost(self.target.server().commands().await)?;
        redis::cmd("PING")
            .query_async::<()>(&mut connection)
            .await
            .map_err(|e| self.target.error(e))
    }

    /// The store's key `suffix` (`meta`, `wake:<pid>`, ...).
    pub(super) fn key(&self, suffix: &str) -> String {
        self.keys.key(suffix)
    }

    /// Runs the store's script with `args` (the operation's name first). A redirection means
    /// the script did not run: it goes again where the cluster (or the sentinels) now say.
    pub(super) async fn run<T: FromRedisValue>(&self, args: &[String]) -> CoreResult<T> {
        let mut redirects = 0;
        let meta = self.key("meta");
        loop {
            self.target.routed().await?;
            let server = self.target.server();
            let mut connection = self.target.lost(server.commands().await)?;
            let mut invocation = LANES.prepare_invoke();
            invocation.key(&meta);
            for arg in args {
                invocation.arg(arg);
            }
            let error = match invocation.invoke_async::<Value>(&mut connection).await {
                Ok(value) => {
                    return T::from_redis_value(value).map_err(|e| {
                        CoreError::Storage(format!("redis: unexpected reply of the lanes: {e}"))
                    })
                }
                Err(error) => error,
            };
            if let Some(refused) = refusal(&error) {
                return Err(refused);
            }
            redirects += 1;
            match route::redirect(&error) {
                Some(redirect)
                    if self.target.route.is_some() && redirects < route::MAX_REDIRECTS =>
                {
                    self.target.error_noted(&error);
                    // (EVALSHA cannot go behind ASKING: the call waits for the migration)
                    self.target.follow_redirect(redirect, false).await?;
                }
                _ => return Err(self.target.error(error)),
            }
        }
    }

    /// Releases the store's share of the connections (the last user closes them).
    pub fn close(&self) {
        self.target.close();
    }
}

impl Drop for RedisLaneStore {
    fn drop(&mut self) {
        self.close();
    }
}
