//! The cross-process doorbell: a waiting process learns that another process committed to a
//! queue file without polling it.
//!
//! Every commit appends to the file's `-wal`, so a watch on the directory (inotify on Linux,
//! FSEvents or kqueue elsewhere, through the `notify` crate) reports each commit of any
//! process. A waiter's own checks are reads: they write nothing to the `-wal`, so they do not
//! ring the bell themselves, and an idle waiter costs nothing. One watcher serves the whole
//! process (one OS thread); a queue registers its file's paths with it when it first waits
//! (`writer::Shared::listen`): a process that only adds watches nothing, so its own writes
//! wake no thread.
//!
//! Where no watch can be set (the OS refused one: a limit on watches, an unsupported
//! filesystem), `Ring::start` returns None and waiters fall back to a short poll.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;

/// What a commit touches, by path: who to wake.
type Listeners = HashMap<PathBuf, Vec<(u64, Arc<Notify>)>>;

struct Registry {
    /// None when the OS gave no watcher: every `Ring::start` then returns None.
    watcher: Option<RecommendedWatcher>,
    /// How many rings watch each directory (it is unwatched when none does).
    dirs: HashMap<PathBuf, usize>,
    listeners: Arc<Mutex<Listeners>>,
    next_id: u64,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let listeners: Arc<Mutex<Listeners>> = Arc::default();
        let heard = Arc::clone(&listeners);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // Opening or reading a file is not a commit.
            if matches!(event.kind, EventKind::Access(_)) {
                return;
            }
            let listeners = heard.lock().unwrap_or_else(|e| e.into_inner());
            for path in &event.paths {
                for (_, notify) in listeners.get(path).into_iter().flatten() {
                    notify.notify_waiters();
                }
            }
        })
        .ok();
        Mutex::new(Registry {
            watcher,
            dirs: HashMap::new(),
            listeners,
            next_id: 0,
        })
    })
}

/// A queue file's registration with the doorbell; dropping it unregisters.
pub struct Ring {
    id: u64,
    dir: PathBuf,
    paths: [PathBuf; 2],
}

impl Ring {
    /// Wakes the waiters of `notify` whenever any process commits to the queue file `file`
    /// (which exists). None when the directory cannot be watched.
    pub fn start(file: &Path, notify: Arc<Notify>) -> Option<Ring> {
        let file = std::fs::canonicalize(file).ok()?;
        let dir = file.parent()?.to_path_buf();
        let mut wal = file.clone().into_os_string();
        wal.push("-wal");
        // The `-wal` takes every commit; the file itself changes when a checkpoint copies
        // pages back (and on journal modes other than WAL).
        let paths = [PathBuf::from(wal), file];
        let mut registry = registry().lock().unwrap_or_else(|e| e.into_inner());
        let registry = &mut *registry;
        let watcher = registry.watcher.as_mut()?;
        let watching = registry.dirs.entry(dir.clone()).or_insert(0);
        if *watching == 0 && watcher.watch(&dir, RecursiveMode::NonRecursive).is_err() {
            registry.dirs.remove(&dir);
            return None;
        }
        *watching += 1;
        registry.next_id += 1;
        let id = registry.next_id;
        let mut listeners = registry.listeners.lock().unwrap_or_else(|e| e.into_inner());
        for path in &paths {
            listeners
                .entry(path.clone())
                .or_default()
                .push((id, Arc::clone(&notify)));
        }
        Some(Ring { id, dir, paths })
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let mut registry = registry().lock().unwrap_or_else(|e| e.into_inner());
        let registry = &mut *registry;
        {
            let mut listeners = registry.listeners.lock().unwrap_or_else(|e| e.into_inner());
            for path in &self.paths {
                if let Some(list) = listeners.get_mut(path) {
                    list.retain(|(id, _)| *id != self.id);
                    if list.is_empty() {
                        listeners.remove(path);
                    }
                }
            }
        }
        if let Some(watching) = registry.dirs.get_mut(&self.dir) {
            *watching -= 1;
            if *watching == 0 {
                registry.dirs.remove(&self.dir);
                if let Some(watcher) = registry.watcher.as_mut() {
                    let _ = watcher.unwatch(&self.dir);
                }
            }
        }
    }
}
