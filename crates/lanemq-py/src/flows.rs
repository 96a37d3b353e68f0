//! Flows in the bindings: `MemoryGroupCore` (the queues of one in-process group) and the
//! conversions of flow trees. Python passes a node as `(queue, name, data, options, children)`
//! and gets the added nodes back in preorder as `(queue, record, parent index)`.

use lanemq_core::jobs::{self as core, AddedNode, Dependencies, FlowNode, NewJob};
use pyo3::prelude::*;

use crate::job_options::JobOptions;
use crate::job_record::JobRecord;

/// Queues that share one lock (`MemoryGroup` in Python): a flow spanning them is atomic.
#[pyclass(frozen, module = "lanemq._core")]
pub struct MemoryGroupCore {
    pub inner: core::MemoryGroup,
}

#[pymethods]
impl MemoryGroupCore {
    #[new]
    fn new() -> Self {
        Self {
            inner: core::MemoryGroup::new(),
        }
    }

    /// The names of the group's queues, in creation order.
    fn queue_names(&self) -> Vec<String> {
        self.inner.queue_names()
    }
}

type NodeArgs<'py> = (
    Option<String>,
    String,
    String,
    Option<JobOptions>,
    Vec<Bound<'py, PyAny>>,
);

/// A flow node from `(queue, name, data, options, children)`.
pub fn node(value: &Bound<'_, PyAny>) -> PyResult<FlowNode> {
    let (queue, name, data, options, children): NodeArgs<'_> = value.extract()?;
    Ok(FlowNode {
        queue,
        job: NewJob {
            name,
            data,
            options: options.map(|o| o.inner).unwrap_or_default(),
        },
        children: children.iter().map(node).collect::<PyResult<_>>()?,
    })
}

/// One added node: its queue, its record, and the index of its parent in the list.
pub type AddedRow = (String, JobRecord, Option<usize>);

/// Added trees flattened in preorder.
pub fn added(nodes: Vec<AddedNode>) -> Vec<AddedRow> {
    fn walk(node: AddedNode, parent: Option<usize>, out: &mut Vec<AddedRow>) {
        let index = out.len();
        out.push((node.queue, JobRecord::from(node.job), parent));
        for child in node.children {
            walk(child, Some(index), out);
        }
    }
    let mut out = Vec::new();
    for node in nodes {
        walk(node, None, &mut out);
    }
    out
}

/// A page of dependencies as Python receives it: (processed, unprocessed, failed, ignored,
/// next cursors).
pub type DependencyRows = (
    Vec<(String, String)>,
    Vec<String>,
    Vec<(String, String)>,
    Vec<(String, String)>,
    [Option<usize>; 4],
);

pub fn dependencies(deps: Dependencies) -> DependencyRows {
    (
        deps.processed,
        deps.unprocessed,
        deps.failed,
        deps.ignored,
        deps.next,
    )
}
