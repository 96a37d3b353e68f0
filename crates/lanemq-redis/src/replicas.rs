//! The opt-in acknowledgement of adds by replicas (`RedisBackend::with_replica_ack`): after a
//! write that adds jobs, `WAIT` on the connection it was made on (WAIT counts that
//! connection's writes), which the write then has to itself, as WAIT holds it until the
//! replicas answer. It narrows what a failover can lose; replication stays asynchronous.

use lanemq_core::{CoreError, CoreResult};
use redis::aio::MultiplexedConnection;

use crate::scripts::{self, LuaScript};
use crate::topology::server::Server;

/// Whether `script` adds jobs: the writes `with_replica_ack` waits for.
pub(crate) fn adds_jobs(script: &LuaScript) -> bool {
    script.function == scripts::ADD.function || script.function == scripts::FLOWS_OP.function
}

/// How many replicas must have a write that adds jobs, and for how long to wait for them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplicaAck {
    pub replicas: usize,
    pub timeout: std::time::Duration,
}

impl ReplicaAck {
    /// `WAIT` on the connection the write was made on: refused if fewer replicas have it.
    pub(crate) async fn wait(
        &self,
        server: &Server,
        connection: &mut MultiplexedConnection,
    ) -> CoreResult<()> {
        let millis = u64::try_from(self.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let acknowledged: usize = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(millis)
            .query_async(connection)
            .await
            .map_err(|e| server.error(e))?;
        if acknowledged >= self.replicas {
            return Ok(());
        }
        Err(CoreError::Storage(format!(
            "redis at {}: the jobs were added on the master, but {acknowledged} of the {} \
             replicas min_replicas_ack asks for had them within {:.1}s (replica_ack_timeout): \
             a failover now could lose them (adding again makes them twice unless they have \
             a job_id)",
            server.address(),
            self.replicas,
            self.timeout.as_secs_f64()
        )))
    }
}
