//! The management of a queue, once for the in-process stores: reads (counts, pages of jobs,
//! outcomes, stats), edits of a job's fields and log, the queue's settings, obliterate. Each
//! decides what to check, what to change and which events follow, over `ManageStorage`
//! (implemented beside `JobStorage` by both stores). Removal, drain, clean and the edits that
//! move a job (promote, retry...) are transitions: `removal` and `edits`.

mod fields;
mod logs;
mod obliterate;
mod reads;
mod search;
mod settings;
mod storage;

pub use fields::{save_stacktrace, update_data, update_progress};
pub use logs::{add_log, clear_logs, get_logs};
pub use obliterate::obliterate;
pub use reads::{
    count_pending, finished_result, get_counts_per_priority, get_job_counts, get_state, get_stats,
    list_jobs,
};
pub use search::search_jobs;
pub use settings::{
    clear_rate_limit, get_max_active, get_rate_limit, get_rate_limit_ttl, is_maxed, is_paused,
    rate_limit, remove_rate_limit_key, set_max_active, set_paused, set_rate_limit,
};
pub use storage::ManageStorage;
