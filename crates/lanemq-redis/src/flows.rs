//! Flows on Redis (`lua/includes/flows.lua`, `lua/flows-2.lua`): the decisions are
//! `jobs::flow`'s, as on the other backends. A flow is checked here (options, payload) and written by one script,
//! which also checks that its custom ids are free; finishing, failing, removing and retrying a
//! child tell its parent inside the script of that transition.
//!
//! A flow's nodes may be in other queues of the same server and prefix: every queue of the
//! flow is linked first (`RedisBackend::link`), so the script gets their keys.

use lanemq_core::jobs::flow::{self, AddedNode, Dependencies, DependencyCounts, FlowNode};
use lanemq_core::jobs::{
    check_payload, BoxFuture, Dedup, JobFlows, JobOptions, JobState, Millis, ParentRef,
};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{self, checked, count, items, text};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

/// A node's place in its flow, as `flow::check_nodes` names it in errors.
fn node_paths(nodes: &[FlowNode], path: &str, out: &mut Vec<String>) {
    for (i, node) in nodes.iter().enumerate() {
        let at = if nodes.len() == 1 && path == "root" {
            path.to_owned()
        } else {
            format!("{path}[{i}]")
        };
        out.push(at.clone());
        node_paths(&node.children, &format!("{at}.children"), out);
    }
}

/// The script's 10 values per node, in preorder; `parent` is the 1-based index of the node's
/// parent among them (0: the job `add_children` parks, or none); a node without a queue is in
/// its parent's.
fn push_nodes(
    nodes: &[FlowNode],
    queue: &str,
    parent: usize,
    args: &mut Vec<String>,
) -> CoreResult<()> {
    for node in nodes {
        let me = args.len() / 10 + 1;
        let options = &node.job.options;
        let queue = node.queue.as_deref().unwrap_or(queue);
        args.extend([
            queue.to_owned(),
            node.job.name.clone(),
            node.job.data.clone(),
            serde_json::to_string(options).map_err(|e| CoreError::Storage(e.to_string()))?,
            options.job_id.clone().unwrap_or_default(),
            options.priority.to_string(),
            if options.lifo { "1" } else { "0" }.to_owned(),
            options.delay.to_string(),
            parent.to_string(),
            if node.children.is_empty() { "0" } else { "1" }.to_owned(),
        ]);
        push_nodes(&node.children, queue, me, args)?;
    }
    Ok(())
}

/// The added nodes, from the script's `{id, seq, order}` per node in preorder.
fn build(
    nodes: Vec<FlowNode>,
    queue: &str,
    parent: Option<&ParentRef>,
    placed: &mut impl Iterator<Item = Value>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    let short = || CoreError::Storage("redis: short flow reply".into());
    nodes
        .into_iter()
        .map(|node| {
            let values = items(placed.next().ok_or_else(short)?)?;
            let field = |i: usize| values.get(i).and_then(text).ok_or_else(short);
            match field(0)?.as_str() {
                "dedup" => {
                    // Deduplicated into an existing job: that job with its children as they
                    // are (the node's own children were not written and have no entries).
                    let rows = items(values.get(1).cloned().ok_or_else(short)?)?;
                    return existing_tree(rows);
                }
                "existing" => {
                    // The job its custom id names, with its children as they are now (the
                    // node's own children have their entries, read past here).
                    let rows = items(values.get(1).cloned().ok_or_else(short)?)?;
                    let found = existing_tree(rows)?;
                    let me = ParentRef {
                        queue: found.queue.clone(),
                        id: found.job.id.to_string(),
                    };
                    build(node.children, &me.queue, Some(&me), placed, now)?;
                    return Ok(found);
                }
                _ => {}
            }
            let (id, seq, order) = (field(0)?, field(1)?, field(2)?);
            let hold = !node.children.is_empty();
            let queue = node.queue.unwrap_or_else(|| queue.to_owned());
            let mut new = node.job;
            new.options.parent = parent.cloned();
            let place = (seq.parse().unwrap_or(0), order.parse().unwrap_or(0));
            let job = decode::added(new, id.as_str().into(), place, hold, now);
            let me = ParentRef {
                queue: queue.clone(),
                id,
            };
            let children = build(node.children, &queue, Some(&me), placed, now)?;
            Ok(AddedNode {
                queue,
                job,
                children,
            })
        })
        .collect()
}

/// The node of an existing job and its children, from the script's `{queue, job, parent}` per
/// node in preorder (`parent`: the 1-based index of the node's parent among them, 0 for the
/// root).
fn existing_tree(rows: Vec<Value>) -> CoreResult<AddedNode> {
    let bad = || CoreError::Storage("redis: bad existing flow reply".into());
    let mut nodes: Vec<(AddedNode, usize)> = Vec::with_capacity(rows.len());
    for row in rows {
        let mut row = items(row)?.into_iter();
        let queue = row.next().as_ref().and_then(text).ok_or_else(bad)?;
        let job = decode::job(row.next().ok_or_else(bad)?)?;
        let parent = row
            .next()
            .as_ref()
            .and_then(text)
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        let node = AddedNode {
            queue,
            job,
            children: Vec::new(),
        };
        nodes.push((node, parent));
    }
    // Children come after their parents: fold each into its parent, last first.
    while nodes.len() > 1 {
        let (mut node, parent) = nodes.pop().ok_or_else(bad)?;
        flow::sort_children(&mut node);
        let at = parent
            .checked_sub(1)
            .filter(|&p| p < nodes.len())
            .ok_or_else(bad)?;
        nodes[at].0.children.push(node);
    }
    let (mut root, _) = nodes.pop().ok_or_else(bad)?;
    flow::sort_children(&mut root);
    Ok(root)
}

/// The refusal of an existing node (`lifecycle::flows::existing`'s, as the script found it):
/// `{kind, node index, detail}`, the node read from the script's arguments.
fn node_refusal(kind: &str, reply: impl Iterator<Item = Value>, args: &[String]) -> CoreError {
    let bad = || CoreError::Storage("redis: bad flow reply".into());
    let fields: Vec<String> = reply.take(2).filter_map(|v| text(&v)).collect();
    let [index, detail] = fields.as_slice() else {
        return bad();
    };
    let Some(node) = index
        .parse::<usize>()
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| args.get(i * 10..i * 10 + 10))
    else {
        return bad();
    };
    let job = ParentRef {
        queue: node[0].clone(),
        id: node[4].clone(),
    };
    let key = |detail: &str| {
        let (queue, id) = detail.split_once(':').unwrap_or((detail, ""));
        ParentRef {
            queue: queue.to_owned(),
            id: id.to_owned(),
        }
    };
    match kind {
        "other_parent" => flow::other_parent(&job, &key(detail)),
        "cycle" => flow::cycle(&job, &key(detail)),
        _ => CoreError::JobState {
            id: job.id,
            state: detail
                .parse::<usize>()
                .ok()
                .and_then(|s| JobState::ALL.get(s).copied())
                .map_or("unknown", JobState::as_str),
            expected: flow::TAKES_CHILDREN,
        },
    }
}

/// Pairs `key, value, ...` of a dependency page.
fn pairs(value: Value) -> CoreResult<Vec<(String, String)>> {
    let flat: Vec<String> = items(value)?.iter().filter_map(text).collect();
    Ok(flat
        .chunks(2)
        .map(|kv| (kv[0].clone(), kv.get(1).cloned().unwrap_or_default()))
        .collect())
}

/// The path and dedup options of the node a script refused (its 1-based `index` in preorder,
/// as the script answers it), from the nodes and their arguments.
fn refused_node(
    nodes: &[FlowNode],
    args: &[String],
    path: &str,
    index: &str,
) -> Option<(String, Dedup)> {
    let mut paths = Vec::new();
    node_paths(nodes, path, &mut paths);
    let i = index.parse::<usize>().ok()?.checked_sub(1)?;
    let dedup = serde_json::from_str::<JobOptions>(args.get(i * 10 + 3)?)
        .ok()?
        .dedup?;
    Some((paths.get(i)?.clone(), dedup))
}

impl RedisBackend {
    /// The checks of nodes before anything is written (options, queue name, payload); links
    /// every other queue they name.
    fn check_flow(&self, nodes: &[&FlowNode], path: &str, max_payload: usize) -> CoreResult<()> {
        let mut queues = Vec::new();
        flow::check_nodes(nodes, &self.queue, path, |queue, job, _| {
            // Braces would change the hash tag of the queue's keys.
            if queue.is_empty() || queue.contains(['{', '}']) {
                return Err(CoreError::InvalidConfig(format!(
                    "invalid queue name: {queue:?}"
                )));
            }
            queues.push(queue.to_owned());
            check_payload(&job.data, max_payload)
        })?;
        for queue in queues {
            self.link(&queue)?;
        }
        Ok(())
    }

    /// Writes checked nodes (under the active job `parent` held by its token, parked by the
    /// same script; or, with an empty token, under a parent that does not run, held there).
    async fn add_nodes(
        &self,
        nodes: Vec<FlowNode>,
        path: &str,
        parent: Option<(&str, &str)>,
        now: Millis,
    ) -> CoreResult<Vec<AddedNode>> {
        let (parent_id, token) = parent.unwrap_or(("", ""));
        let mut args = Vec::new();
        push_nodes(&nodes, &self.queue, 0, &mut args)?;
        let mut all = vec![
            now.to_string(),
            self.max_events.to_string(),
            "add".to_owned(),
            self.queue.clone(),
            parent_id.to_owned(),
            token.to_owned(),
        ];
        all.extend(args.iter().cloned());
        let mut reply = items(self.run(&scripts::FLOWS_OP, all).await?)?.into_iter();
        let head = reply.next();
        match head.as_ref().and_then(text).as_deref() {
            Some("ok") => {}
            Some(kind @ ("other_parent" | "cycle" | "node_state")) => {
                return Err(node_refusal(kind, reply, &args));
            }
            Some("group_full") => return Err(decode::group_full(reply)),
            Some("dedup_parent") => {
                let fields: Vec<String> = reply.by_ref().take(3).filter_map(|v| text(&v)).collect();
                let bad = || CoreError::Storage("redis: bad flow reply".into());
                let [index, owner, parent] = fields.as_slice() else {
                    return Err(bad());
                };
                let (at, dedup) = refused_node(&nodes, &args, path, index).ok_or_else(bad)?;
                let refusal = flow::check_dedup_owner(&dedup.id, owner, Some(parent));
                return Err(match refusal {
                    Err(CoreError::InvalidConfig(m)) => {
                        CoreError::InvalidConfig(format!("flow node {at}: {m}"))
                    }
                    _ => bad(),
                });
            }
            Some("dedup_cycle") => {
                let fields: Vec<String> = reply.by_ref().take(2).filter_map(|v| text(&v)).collect();
                let bad = || CoreError::Storage("redis: bad flow reply".into());
                let [index, owner] = fields.as_slice() else {
                    return Err(bad());
                };
                let (at, dedup) = refused_node(&nodes, &args, path, index).ok_or_else(bad)?;
                let key = format!("{}:{owner}", self.queue);
                let refusal =
                    flow::check_dedup_cycle(&dedup.id, owner, &key, std::slice::from_ref(&key));
                return Err(match refusal {
                    Err(CoreError::InvalidConfig(m)) => {
                        CoreError::InvalidConfig(format!("flow node {at}: {m}"))
                    }
                    _ => bad(),
                });
            }
            _ => {
                let mut refusal = vec![head.unwrap_or(Value::Nil)];
                refusal.extend(reply);
                let refusal = Value::Array(refusal);
                if token.is_empty() {
                    checked(parent_id, refusal, flow::TAKES_CHILDREN)?;
                } else {
                    decode::outcome(parent_id, refusal)?;
                }
                return Err(CoreError::Storage("redis: bad flow reply".into()));
            }
        }
        let placed = items(reply.next().unwrap_or(Value::Nil))?;
        let parent = parent.map(|(id, _)| ParentRef {
            queue: self.queue.clone(),
            id: id.to_owned(),
        });
        build(
            nodes,
            &self.queue,
            parent.as_ref(),
            &mut placed.into_iter(),
            now,
        )
    }

    pub async fn add_flow(
        &self,
        root: FlowNode,
        now: Millis,
        max_payload: usize,
    ) -> CoreResult<AddedNode> {
        if flow::is_single_job(&root, &self.queue) {
            let (job, _) = self
                .add_bulk(vec![root.job], now, max_payload)
                .await?
                .remove(0);
            return Ok(AddedNode {
                queue: self.queue.clone(),
                job,
                children: Vec::new(),
            });
        }
        self.check_flow(&[&root], "root", max_payload)?;
        let mut added = self.add_nodes(vec![root], "root", None, now).await?;
        added
            .pop()
            .ok_or_else(|| CoreError::Storage("redis: empty flow reply".into()))
    }

    pub async fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
        max_payload: usize,
    ) -> CoreResult<Vec<AddedNode>> {
        flow::check_children_count(&parent_id, children.len())?;
        let nodes: Vec<&FlowNode> = children.iter().collect();
        self.check_flow(&nodes, "children", max_payload)?;
        self.add_nodes(children, "children", Some((&parent_id, &token)), now)
            .await
    }

    /// Adds children to the job `parent_id` that is not running (`JobFlows::attach_children`):
    /// the same script as `add_children`, without a token.
    pub async fn attach_children(
        &self,
        parent_id: String,
        children: Vec<FlowNode>,
        now: Millis,
        max_payload: usize,
    ) -> CoreResult<Vec<AddedNode>> {
        self.add_children(parent_id, String::new(), children, now, max_payload)
            .await
    }

    pub async fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> CoreResult<Dependencies> {
        let mut args = vec!["deps".to_owned(), parent_id.clone()];
        args.extend(cursors.iter().map(usize::to_string));
        args.push(count.map(|c| c.to_string()).unwrap_or_default());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = self.change(&scripts::FLOWS_OP, 0, &args).await?;
        let mut values = checked(&parent_id, reply, "").map(Vec::into_iter)?;
        let short = || CoreError::Storage("redis: short dependencies reply".into());
        let mut next_value = || values.next().ok_or_else(short);
        let processed = pairs(next_value()?)?;
        let unprocessed = items(next_value()?)?.iter().filter_map(text).collect();
        let failed = pairs(next_value()?)?;
        let ignored = pairs(next_value()?)?;
        let mut next = [None; 4];
        for (slot, cursor) in next.iter_mut().zip(items(next_value()?)?) {
            *slot = text(&cursor).and_then(|c| c.parse().ok());
        }
        Ok(Dependencies {
            processed,
            unprocessed,
            failed,
            ignored,
            next,
        })
    }

    pub async fn get_dependencies_count(&self, parent_id: String) -> CoreResult<DependencyCounts> {
        let reply = self
            .change(&scripts::FLOWS_OP, 0, &["counts", &parent_id])
            .await?;
        let values = checked(&parent_id, reply, "")?;
        Ok(DependencyCounts {
            processed: count(values.first())?,
            unprocessed: count(values.get(1))?,
            failed: count(values.get(2))?,
            ignored: count(values.get(3))?,
        })
    }

    /// Detaches the child from its parent: its options lose the parent (rewritten here, and
    /// written only if nobody changed them since they were read) and the parent hears of it.
    pub async fn remove_child_dependency(&self, child_id: String, now: Millis) -> CoreResult<bool> {
        loop {
            let mut pipe = redis::pipe();
            let child = self.keys.job(&child_id);
            pipe.cmd("HGET").arg(&child).arg("state");
            pipe.cmd("HGET").arg(&child).arg("opts");
            let (state, read): (Option<String>, Option<String>) = self.query(&pipe).await?;
            if state.is_none() {
                return Err(CoreError::JobNotFound(child_id.clone()));
            }
            // Default options are not stored, and name no parent (`opts_of` in
            // lua/includes/common.lua).
            let Some(read) = read else {
                return Ok(false);
            };
            let mut options: JobOptions = serde_json::from_str(&read)
                .map_err(|e| CoreError::Storage(format!("redis: bad options: {e}")))?;
            if options.parent.take().is_none() {
                return Ok(false);
            }
            let detached =
                serde_json::to_string(&options).map_err(|e| CoreError::Storage(e.to_string()))?;
            let args = [
                "detach",
                child_id.as_str(),
                read.as_str(),
                detached.as_str(),
            ];
            let reply = self.change(&scripts::FLOWS_OP, now, &args).await?;
            if items(reply.clone())?.first().and_then(text).as_deref() == Some("retry") {
                continue;
            }
            let values = checked(&child_id, reply, "")?;
            return Ok(count(values.first())? == 1);
        }
    }

    pub async fn remove_unprocessed_children(
        &self,
        parent_id: String,
        now: Millis,
    ) -> CoreResult<usize> {
        let reply = self
            .change(&scripts::FLOWS_OP, now, &["prune", &parent_id])
            .await?;
        count(checked(&parent_id, reply, "")?.first())
    }
}

impl JobFlows for RedisJobBackend {
    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let limit = self.max_payload_bytes();
        call!(self, |b| b.add_flow(flow, now, limit))
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let limit = self.max_payload_bytes();
        call!(self, |b| b
            .add_children(parent_id, token, children, now, limit))
    }

    fn attach_children(
        &self,
        parent_id: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let limit = self.max_payload_bytes();
        call!(self, |b| b.attach_children(parent_id, children, now, limit))
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        call!(self, |b| b.get_dependencies(parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        call!(self, |b| b.get_dependencies_count(parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_child_dependency(child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.remove_unprocessed_children(parent_id, now))
    }
}
