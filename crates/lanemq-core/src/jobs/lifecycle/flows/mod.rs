//! Flows in process, once for memory and SQLite: what a child's finish, removal or retry tells
//! its parent (`news`), the reads and detaches of a parent's children (`dependencies`), and
//! adding a flow or children (`create`). They are written against small traits: a store's
//! dependency sets (`DependencySets`) and how news reaches a parent in another queue
//! (`ChildNews`: memory's outbox, settled under the group's lock; SQLite's message relayed
//! after the commit), both in `storage`, and the queues a flow spans (`FlowQueues`, in
//! `queues`: memory's other stores of the group; SQLite's other files, ids reserved there
//! beforehand). What each change means is `jobs::flow`'s decision; the parent's moves are
//! `lifecycle::parents`'.

mod create;
mod dependencies;
mod existing;
mod news;
mod queues;
mod storage;

pub use create::{add_children, add_flow, attach_children};
pub use dependencies::{
    get_dependencies, get_dependencies_count, release_if_done, remove_child_dependency,
    unprocessed_children, Detached,
};
pub use news::{apply_child, on_finish, on_obliterate, on_retry, rejoin, removal_tells};
pub use queues::FlowQueues;
pub use storage::{Bucket, Change, ChildNews, DependencySets, FlowStorage};
