//! Maps the core's one error enum onto the Python exception tree of `lanemq.exceptions`, which
//! is defined in Python so its classes can also subclass the fitting builtins (ValueError, ...).

use lanemq_core::CoreError;
use pyo3::prelude::*;

pyo3::import_exception!(lanemq.exceptions, ConfigError);
pyo3::import_exception!(lanemq.exceptions, UnknownLaneError);
pyo3::import_exception!(lanemq.exceptions, ShutdownError);
pyo3::import_exception!(lanemq.exceptions, CommandNotFoundError);
pyo3::import_exception!(lanemq.exceptions, CommandStateError);
pyo3::import_exception!(lanemq.exceptions, StorageError);
pyo3::import_exception!(lanemq.exceptions, BackendConnectionError);
pyo3::import_exception!(lanemq.exceptions, BackendAuthenticationError);
pyo3::import_exception!(lanemq.exceptions, JobNotFoundError);
pyo3::import_exception!(lanemq.exceptions, JobStateError);
pyo3::import_exception!(lanemq.exceptions, PendingDependenciesError);
pyo3::import_exception!(lanemq.exceptions, LockMismatchError);
pyo3::import_exception!(lanemq.exceptions, GroupMaxSizeExceededError);
pyo3::import_exception!(lanemq.exceptions, CancelRequestedError);

pub fn to_py(err: CoreError) -> PyErr {
    let message = err.to_string();
    match err {
        CoreError::InvalidConfig(_) => ConfigError::new_err(message),
        CoreError::UnknownLane(_) => UnknownLaneError::new_err(message),
        CoreError::Shutdown => ShutdownError::new_err(message),
        CoreError::UnknownCommand(_) => CommandNotFoundError::new_err(message),
        CoreError::CommandState { .. } => CommandStateError::new_err(message),
        CoreError::Storage(_) => StorageError::new_err(message),
        CoreError::Connection(_) => BackendConnectionError::new_err(message),
        CoreError::Authentication(_) => BackendAuthenticationError::new_err(message),
        CoreError::JobNotFound(_) => JobNotFoundError::new_err(message),
        CoreError::JobState { .. } | CoreError::Refused(_) => JobStateError::new_err(message),
        CoreError::PendingDependencies(_) => PendingDependenciesError::new_err(message),
        CoreError::LockMismatch(_) => LockMismatchError::new_err(message),
        CoreError::GroupFull { .. } => GroupMaxSizeExceededError::new_err(message),
        CoreError::CancelRequested { .. } => CancelRequestedError::new_err(message),
    }
}

/// A configuration error naming the field and the value it was given.
pub fn invalid(field: &str, value: impl std::fmt::Display, why: &str) -> PyErr {
    ConfigError::new_err(format!("invalid {field}: {value} ({why})"))
}
