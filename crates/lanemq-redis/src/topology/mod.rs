//! How a queue's calls reach Redis, below every file that makes calls: what a URL says and
//! what errors mean (`connect`), TLS (`tls`), the shared connections to one server (`server`),
//! Redis Sentinel (`sentinel`) and Redis Cluster (`cluster`) topologies, and where one queue's
//! calls go, routed to its slot's server (`route`). None of it knows a queue's jobs or
//! scripts. Layered: `connect` and `tls` use nothing of the crate, `server` uses them,
//! `sentinel` uses `server`, `cluster` uses `sentinel`, `route` uses `cluster`.

pub(crate) mod cluster;
pub(crate) mod connect;
pub(crate) mod route;
pub(crate) mod sentinel;
pub(crate) mod server;
mod tls;
