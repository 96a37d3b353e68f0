//! What the Lua scripts restate from the Rust side, held to Rust's definitions. The scripts run
//! inside Redis and cannot import a Rust constant, so each value they share with the other
//! backends (a reason, a limit, an event's name) or with this crate (key order, field order,
//! state codes) is written twice; these tests read the Lua copy out of the embedded sources and
//! fail when the two differ.

use lanemq_core::jobs::constants::{STACKTRACE_LIMIT, STALLED_REASON};
use lanemq_core::jobs::flow::child_failed_reason;
use lanemq_core::jobs::metrics::MINUTE;
use lanemq_core::jobs::{event_names, JobState};

use super::{file_name, COMMON, FLOWS, JOBS, OPS, SCHEDULERS};
use crate::events::{stream_event_name as known_event_name, stream_field_name as field_name};
use crate::keys::{queue_keys, Keys, JOB_FIELDS};

// ------------------------------------------------------------------ reading Lua source

/// Every embedded source, by file name (under `lua/`).
fn sources() -> Vec<(String, &'static str)> {
    let helpers = [
        ("includes/common.lua", COMMON),
        ("includes/jobs.lua", JOBS),
        ("includes/flows.lua", FLOWS),
        ("includes/schedulers.lua", SCHEDULERS),
    ];
    let helpers = helpers
        .into_iter()
        .map(|(name, text)| (name.to_owned(), text));
    let scripts = OPS.iter().map(|(op, text)| (file_name(op), *text));
    helpers.chain(scripts).collect()
}

/// The index just past the string literal opening at `at` (a `"` or `'`).
fn string_end(bytes: &[u8], at: usize) -> usize {
    let quote = bytes[at];
    let mut i = at + 1;
    while i < bytes.len() && bytes[i] != quote {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    i + 1
}

/// `source` without its comments (`--` to the end of the line, outside strings); lines stay
/// where they were. The scripts use no long comments or long strings (`[[`).
fn code(source: &str) -> String {
    assert!(
        !source.contains("[["),
        "a long bracket: the reader below does not know them"
    );
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' | b'\'' => i = string_end(bytes, i),
                b'-' if bytes.get(i + 1) == Some(&b'-') => break,
                _ => i += 1,
            }
        }
        out.push_str(line[..i.min(line.len())].trim_end());
        out.push('\n');
    }
    out
}

/// `text` cut at its commas outside strings and brackets, up to the bracket that closes
/// before them (or the end); each part trimmed, empty ones left out.
fn split_top(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let (mut parts, mut start, mut depth, mut i) = (Vec::new(), 0, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' => {
                i = string_end(bytes, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => break,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(text[start..i].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// The value of a Lua string literal (`"..."` or `'...'`), or None for any other expression.
fn literal(expr: &str) -> Option<String> {
    let expr = expr.trim();
    let quote = *expr.as_bytes().first()?;
    if !(quote == b'"' || quote == b'\'') || string_end(expr.as_bytes(), 0) != expr.len() {
        return None;
    }
    let mut out = String::new();
    let mut chars = expr[1..expr.len() - 1].chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(c @ ('\\' | '"' | '\'')) => out.push(c),
            other => panic!("an escape this reader does not know: \\{other:?} in {expr}"),
        }
    }
    Some(out)
}

/// The top-level statements of `code` that start with `head` at column 0, each with the
/// indented lines that continue it, joined into one line.
fn statements(code: &str, head: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    (0..lines.len())
        .filter(|&i| lines[i].starts_with(head))
        .map(|i| {
            let more = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with(char::is_whitespace));
            std::iter::once(lines[i])
                .chain(more.copied())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// `[local] a, b = x, y` as (names, values).
fn assignment(statement: &str) -> (Vec<&str>, Vec<&str>) {
    let statement = statement.trim();
    let statement = statement.strip_prefix("local ").unwrap_or(statement);
    let (names, values) = statement
        .split_once(" = ")
        .unwrap_or_else(|| panic!("not an assignment: {statement}"));
    (split_top(names), split_top(values))
}

/// The entries of a table constructor `{...}`, each as (key, value): the key is None for a
/// list entry, `name` or `[expr]` otherwise.
fn table(constructor: &str) -> Vec<(Option<&str>, &str)> {
    let inner = constructor
        .trim()
        .strip_prefix('{')
        .unwrap_or_else(|| panic!("not a table: {constructor}"));
    split_top(inner)
        .into_iter()
        .map(|entry| match entry.split_once(" = ") {
            Some((key, value)) if literal(entry).is_none() => (Some(key.trim()), value.trim()),
            _ => (None, entry),
        })
        .collect()
}

/// The one definition, across every source, of the constant `local <name> = <value>`.
fn constant(name: &str) -> String {
    let head = format!("local {name} = ");
    let found: Vec<(String, String)> = sources()
        .into_iter()
        .flat_map(|(file, text)| {
            let code = code(text);
            let values: Vec<String> = statements(&code, &head)
                .iter()
                .map(|s| assignment(s).1.join(", "))
                .collect();
            values.into_iter().map(move |v| (file.clone(), v))
        })
        .collect();
    assert_eq!(found.len(), 1, "{name} is defined once in lua/: {found:?}");
    let uses: usize = sources()
        .iter()
        .map(|(_, text)| code(text).matches(name).count())
        .sum();
    assert!(uses > 1, "{name} is defined but never used");
    found.into_iter().next().unwrap().1
}

/// Every `emit(...)` call of the sources, as (file, its arguments).
fn emits() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (file, text) in sources() {
        let code = code(text);
        for (at, _) in code.match_indices("emit(") {
            let before = code.as_bytes()[..at].last().copied().unwrap_or(b' ');
            if before.is_ascii_alphanumeric() || before == b'_' || code[..at].ends_with("function ")
            {
                continue; // another name ending in `emit`, or the definition
            }
            let args = split_top(&code[at + "emit(".len()..]);
            out.push((file.clone(), args.into_iter().map(str::to_owned).collect()));
        }
        // emit_each(event, ids, n, key, values, value): n events `event ids[k] key value`, as
        // emit(event, id, key, value) would write each.
        for (at, _) in code.match_indices("emit_each(") {
            if code[..at].ends_with("function ") {
                continue;
            }
            let args = split_top(&code[at + "emit_each(".len()..]);
            let value = args.get(5).copied().unwrap_or(args[4]);
            let each = [args[0], args[1], args[3], value];
            out.push((file.clone(), each.into_iter().map(str::to_owned).collect()));
        }
    }
    out
}

/// Evaluates a concatenation of string literals and the names of `names` (`"a " .. id`), up
/// to the first part that is neither (the rest of its line: `then`, `end`, ...).
fn concatenation(expr: &str, names: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for part in expr.split("..") {
        let part = part.trim();
        if part.starts_with(['"', '\'']) {
            let end = string_end(part.as_bytes(), 0);
            out.push_str(&literal(&part[..end]).unwrap());
            if part[end..].trim().is_empty() {
                continue;
            }
            break;
        }
        let name_end = part
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(part.len());
        let value = names.iter().find(|(n, _)| *n == &part[..name_end]);
        let (_, value) = value.unwrap_or_else(|| panic!("an unknown name in {expr}"));
        out.push_str(value);
        if name_end < part.len() {
            break;
        }
    }
    out
}

/// The Lua name of a state's code: `WAITING_STATE` ... (`waiting_children` is `CHILDREN`).
fn state_constant(state: JobState) -> String {
    match state {
        JobState::WaitingChildren => "CHILDREN_STATE".to_owned(),
        _ => format!("{}_STATE", state.as_str().to_uppercase()),
    }
}

// ------------------------------------------------------------------ the values

#[test]
fn the_stalled_reason_is_the_cores() {
    assert_eq!(
        literal(&constant("STALLED_REASON")).as_deref(),
        Some(STALLED_REASON)
    );
    // No script spells the reason out instead of using the constant.
    let copies: usize = sources()
        .iter()
        .map(|(_, text)| text.matches(STALLED_REASON).count())
        .sum();
    assert_eq!(copies, 1, "the reason is written once in lua/");
}

#[test]
fn the_stack_trace_limit_is_the_cores() {
    assert_eq!(constant("STACKTRACE_LIMIT").parse(), Ok(STACKTRACE_LIMIT));
}

#[test]
fn the_metrics_minute_is_the_cores() {
    assert_eq!(constant("MINUTE_MS").parse(), Ok(MINUTE));
}

#[test]
fn a_parent_fails_for_its_child_with_the_cores_reason() {
    let names = [("child_id", "7"), ("value", "boom")];
    let (mut reasons, mut prefixes) = (0, 0);
    for (file, text) in sources() {
        let code = code(text);
        for (at, _) in code.match_indices("\"child \" ..") {
            let line_end = code[at..].find('\n').map_or(code.len(), |n| at + n);
            let built = concatenation(&code[at..line_end], &names);
            if built == child_failed_reason("7", "boom") {
                reasons += 1;
            } else {
                // The cause a retried child's parent recognises its failure by.
                assert_eq!(built, child_failed_reason("7", ""), "in {file}");
                prefixes += 1;
            }
        }
    }
    assert!(
        reasons >= 1 && prefixes >= 1,
        "{reasons} reasons, {prefixes} prefixes"
    );
}

#[test]
fn every_event_the_scripts_emit_is_one_the_reader_knows() {
    let emitted = emits();
    for (file, args) in &emitted {
        let name = literal(&args[0])
            .unwrap_or_else(|| panic!("{file}: an event named by an expression: {args:?}"));
        assert_eq!(
            known_event_name(&name),
            Some(name.as_str()),
            "{file}: {name}"
        );
        // Fields come as key, value pairs after the job id.
        for key in args.iter().skip(2).step_by(2) {
            let key = literal(key).unwrap_or_else(|| panic!("{file}: a field key {key}"));
            assert_eq!(field_name(&key), key, "{file}: field {key} of {name}");
            assert_eq!(
                known_event_name(&key),
                None,
                "{file}: field {key} is an event"
            );
        }
    }
    // And each name the Rust side knows is written by some script.
    let names: Vec<String> = emitted.iter().filter_map(|(_, a)| literal(&a[0])).collect();
    for name in event_names() {
        assert!(names.iter().any(|n| n == name), "no script emits {name}");
    }
    // emit is the only way to the stream: one XADD, in flush_events. (The other stream, of
    // cancel requests, has its own in cancel-2.lua.)
    let xadds: usize = sources()
        .iter()
        .map(|(_, text)| code(text).matches("\"XADD\", EVENTS").count())
        .sum();
    assert_eq!(xadds, 1);
    let others: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| {
            code(text).matches("\"XADD\"").count() > code(text).matches("\"XADD\", EVENTS").count()
        })
        .map(|(file, _)| file)
        .collect();
    assert_eq!(others, ["cancel-2.lua"]);
}

#[test]
fn the_state_codes_are_the_index_of_job_state_all() {
    let common = code(COMMON);
    let expected: Vec<String> = JobState::ALL.into_iter().map(state_constant).collect();
    let codes: Vec<String> = (0..JobState::ALL.len()).map(|i| i.to_string()).collect();
    let numbers = statements(&common, "local WAITING_STATE,").remove(0);
    let (names, values) = assignment(&numbers);
    assert_eq!(names, expected);
    assert_eq!(values, codes);
    let texts = statements(&common, "local WAITING_TEXT,").remove(0);
    let (names, values) = assignment(&texts);
    assert_eq!(names.len(), codes.len());
    let values: Vec<String> = values.iter().filter_map(|v| literal(v)).collect();
    assert_eq!(values, codes);
    // The state names of `removed` events (their `prev`) are JobState's.
    let flows = code(FLOWS);
    let state_names = statements(&flows, "local STATE_NAMES = ").remove(0);
    let (_, value) = assignment(&state_names);
    let entries = table(value[0]);
    assert_eq!(entries.len(), JobState::ALL.len());
    for (key, name) in entries {
        let key = key
            .and_then(|k| k.strip_prefix('[')?.strip_suffix(']'))
            .unwrap();
        let at = expected.iter().position(|c| c == key).unwrap();
        assert_eq!(literal(name).as_deref(), Some(JobState::ALL[at].as_str()));
    }
}

#[test]
fn the_field_list_is_job_fields() {
    let common = code(COMMON);
    let fields = statements(&common, "local FIELDS = ").remove(0);
    let (_, value) = assignment(&fields);
    let names: Vec<String> = table(value[0])
        .into_iter()
        .map(|(key, v)| {
            assert_eq!(key, None);
            literal(v).unwrap()
        })
        .collect();
    assert_eq!(names, JOB_FIELDS);
}

#[test]
fn bind_builds_the_block_from_meta_in_keys_order() {
    let common = code(COMMON);
    let body = common
        .split("local function bind(base)\n")
        .nth(1)
        .and_then(|rest| rest.split("\nend\n").next())
        .unwrap();
    // Statements start at the body's indentation (two spaces); deeper lines continue them.
    let mut lines: Vec<String> = Vec::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        match lines.last_mut() {
            Some(last) if line.starts_with("   ") => last.push_str(line),
            _ => lines.push(line.to_owned()),
        }
    }
    // META is the one key given; `local B` its base, `<prefix>:{<queue>}:`; each other key of
    // the block is `B .. "<name>"`. The job hashes' prefix (JOB) and the keys built from a
    // bound one (`waiting:0`) are no keys of the block.
    let mut bound: Vec<(String, String)> = Vec::new();
    for statement in &lines {
        let (names, values) = assignment(statement);
        assert_eq!(names.len(), values.len(), "{statement}");
        for (name, value) in names.iter().zip(values) {
            if *name == "B" {
                assert_eq!(value, "string.sub(META, 1, -5)", "{statement}");
            } else if *name == "JOB" {
                assert_eq!(value, "B .. \"job:\"", "{statement}");
            } else if value == "KEYS[base + 1]" {
                bound.push(("meta".to_owned(), (*name).to_owned()));
            } else if let Some(key) = value.strip_prefix("B .. ") {
                bound.push((key.trim_matches('"').to_owned(), (*name).to_owned()));
            } else {
                let from = value.split(" .. ").next().unwrap_or_default();
                assert!(bound.iter().any(|(_, n)| n == from), "{statement}");
            }
        }
    }
    let expected: Vec<(String, String)> = queue_keys()
        .map(|key| (key.to_owned(), key.to_uppercase().replace(':', "_")))
        .collect();
    assert_eq!(bound, expected);
    // The keys each queue's block has (META, the guard): flows.lua steps through the linked
    // queues' blocks by it.
    assert_eq!(
        constant("BLOCK"),
        Keys::new("p", "q").script_keys().len().to_string()
    );
}
