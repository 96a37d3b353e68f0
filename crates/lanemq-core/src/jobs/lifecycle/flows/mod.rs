//! Flows in process, once for memory and SQLite: a parent's dependency sets and what a child's
//! finish, removal or retry tells its parent (`news`), the reads and detaches of a parent's
//! children (`dependencies`), written against two small traits (`storage`): `DependencySets`,
//! where a store keeps the sets, and `ChildNews`, how news reaches a parent in another queue
//! (memory: the group's outbox, settled under its lock; SQLite: a message relayed after the
//! commit). What each change means is `jobs::flow`'s decision; the parent's moves are
//! `lifecycle::parents`'.

mod create;
mod dependencies;
mod news;
mod storage;

pub use create::{add_children, add_flow, existing_root, FlowQueues};
pub use dependencies::{
    get_dependencies, get_dependencies_count, remove_child_dependency, unprocessed_children,
    Detached,
};
pub use news::{apply_child, on_finish, on_obliterate, on_retry, rejoin, removal_tells};
pub use storage::{Bucket, Change, ChildNews, DependencySets};
