//! Composes a script from the shared helpers it uses. Every call of a script runs its whole
//! prelude (each `local function` makes a closure, each table constructor a table), and the
//! garbage is the Lua GC's work, so a script is sent only the top-level definitions of
//! `lua/includes/common.lua`, `jobs.lua`, `flows.lua` and `schedulers.lua` that its body reaches,
//! directly or through other helpers, in their order in the files.
//!
//! The files are cut into top-level statements: one starts at a line at column 0 that begins
//! with a name (`local ...`, `name = function`, `bind(0)`), with the comments just above it;
//! everything indented, and `end`, continues it. A statement defines the names of its
//! `local function name`, `local a, b = ...` (or `local a, b`) or `name = function` (the
//! assignment of a forward declaration). It is needed when one of those names is referenced by
//! the body or by a needed statement (every identifier outside strings and comments, except
//! fields after `.` or `:`, counts, so a name never goes missing; a name that only looks like
//! one costs a helper, not an error). All statements defining a needed name are kept: the
//! declaration `local flow_on_finish, need_chain` and the later `need_chain = function`. A
//! statement that defines nothing (`bind(0)`) is always kept.
//!
//! From the statement under the line `-- compose: nested from here` (in `common.lua`) on, the
//! statements and the body run in one function nested in the script, `return (function() ...
//! end)()`: the names defined above it are that function's upvalues. Lua 5.1 makes a closure
//! by finding each captured local among the open upvalues (a walk past every local captured
//! so far), but copies an upvalue of the enclosing function; every helper captures some of the
//! keys, `F` or `NOW`, the first names defined.

use std::collections::{HashMap, HashSet};

/// The line above the first statement that runs in the nested function.
pub const NESTED_FROM: &str = "-- compose: nested from here";

/// One top-level statement of a helper file, with the comments just above it.
struct Statement<'a> {
    text: &'a str,
    /// `text` from its first line of code on (the comments above it cut off).
    code: &'a str,
    defines: Vec<&'a str>,
}

/// The statements of the helper files, in order.
pub struct Prelude<'a> {
    statements: Vec<Statement<'a>>,
    /// name -> indices of the statements defining it
    definers: HashMap<&'a str, Vec<usize>>,
    /// The first statement of the nested function (past the last when there is none).
    nested: usize,
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `line` starts a top-level statement (see the module's comment).
fn starts_statement(line: &str) -> bool {
    let first = match line.as_bytes().first() {
        Some(&c) => c,
        None => return false,
    };
    if !is_name_start(first) {
        return false;
    }
    let word: &str = line
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("");
    !matches!(word, "end" | "else" | "elseif" | "until")
}

/// The names a statement's first line defines (none for a plain call such as `bind(0)`).
fn names_of(list: &str) -> Vec<&str> {
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect()
}

fn defined_names(head: &str) -> Vec<&str> {
    if let Some(rest) = head.strip_prefix("local function ") {
        return rest.split('(').next().map(str::trim).into_iter().collect();
    }
    if let Some(rest) = head.strip_prefix("local ") {
        // Up to `=` (not `==`, which cannot come before it), or the whole line.
        let list = rest.split('=').next().unwrap_or(rest);
        let list = list.split("--").next().unwrap_or(list);
        return names_of(list);
    }
    // `name = function ...`: a forward declaration's definition.
    let bytes = head.as_bytes();
    let end = bytes
        .iter()
        .position(|&c| !is_name_char(c))
        .unwrap_or(bytes.len());
    let after = head[end..].trim_start();
    if after.starts_with('=') && !after.starts_with("==") {
        return vec![&head[..end]];
    }
    Vec::new()
}

/// The identifiers of Lua source outside strings and comments, without fields (after `.` or
/// `:`) or numbers.
pub fn identifiers(source: &str) -> HashSet<&str> {
    let bytes = source.as_bytes();
    let mut out = HashSet::new();
    let mut i = 0;
    // The last significant byte before the current token, and the one before it.
    let (mut prev, mut prev2) = (b' ', b' ');
    // The level of a long bracket opening at `at` (`[[` = 0, `[=[` = 1, ...), if one does.
    let long_bracket = |at: usize| -> Option<usize> {
        if bytes.get(at) != Some(&b'[') {
            return None;
        }
        let mut level = 0;
        while bytes.get(at + 1 + level) == Some(&b'=') {
            level += 1;
        }
        (bytes.get(at + 1 + level) == Some(&b'[')).then_some(level)
    };
    // The index just past the long bracket of `level` closing at or after `from`.
    let close_long = |from: usize, level: usize| -> usize {
        let mut j = from;
        while j < bytes.len() {
            if bytes[j] == b']'
                && bytes[j + 1..].iter().take(level).all(|&c| c == b'=')
                && bytes.get(j + 1 + level) == Some(&b']')
            {
                return j + 2 + level;
            }
            j += 1;
        }
        bytes.len()
    };
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            i = match long_bracket(i + 2) {
                Some(level) => close_long(i + 4 + level, level),
                None => bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n),
            };
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            (prev2, prev) = (prev, b'"');
            continue;
        }
        if let Some(level) = long_bracket(i) {
            i = close_long(i + 2 + level, level);
            (prev2, prev) = (prev, b'"');
            continue;
        }
        if c.is_ascii_digit() {
            while i < bytes.len() && (is_name_char(bytes[i]) || bytes[i] == b'.') {
                i += 1;
            }
            (prev2, prev) = (prev, b'0');
            continue;
        }
        if is_name_start(c) {
            let start = i;
            while i < bytes.len() && is_name_char(bytes[i]) {
                i += 1;
            }
            let field = (prev == b'.' && prev2 != b'.') || (prev == b':' && prev2 != b':');
            if !field {
                out.insert(&source[start..i]);
            }
            (prev2, prev) = (prev, b'a');
            continue;
        }
        (prev2, prev) = (prev, c);
        i += 1;
    }
    out
}

impl<'a> Prelude<'a> {
    /// Cuts the helper files, in the order they are loaded, into statements.
    pub fn new(files: &[&'a str]) -> Self {
        let mut statements = Vec::new();
        for file in files {
            // Byte offsets of the statements' starts, each moved up over the comments and
            // blank lines just above it.
            let mut starts = vec![0];
            let mut offset = 0;
            let mut comments_from: Option<usize> = None;
            for line in file.split_inclusive('\n') {
                let bare = line.trim_end();
                if bare.is_empty() || bare.starts_with("--") {
                    comments_from.get_or_insert(offset);
                } else {
                    if starts_statement(line) {
                        let at = comments_from.unwrap_or(offset);
                        if at > 0 {
                            starts.push(at);
                        }
                    }
                    comments_from = None;
                }
                offset += line.len();
            }
            starts.push(file.len());
            for pair in starts.windows(2) {
                let text = &file[pair[0]..pair[1]];
                let mut offset = 0;
                let code = text
                    .lines()
                    .find(|line| {
                        let found = starts_statement(line);
                        if !found {
                            offset += line.len() + 1;
                        }
                        found
                    })
                    .map_or("", |_| &text[offset..]);
                let head = code.lines().next().unwrap_or("");
                statements.push(Statement {
                    text,
                    code,
                    defines: defined_names(head),
                });
            }
        }
        let mut definers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (k, statement) in statements.iter().enumerate() {
            for name in &statement.defines {
                definers.entry(name).or_default().push(k);
            }
        }
        let nested = statements
            .iter()
            .position(|s| s.text.lines().any(|line| line.trim_end() == NESTED_FROM))
            .unwrap_or(statements.len());
        Prelude {
            statements,
            definers,
            nested,
        }
    }

    /// The statements `body` needs, then `body`.
    pub fn compose(&self, body: &str) -> String {
        let mut needed = vec![false; self.statements.len()];
        let mut pending: Vec<&str> = identifiers(body).into_iter().collect();
        for (k, statement) in self.statements.iter().enumerate() {
            if statement.defines.is_empty() {
                needed[k] = true;
                pending.extend(identifiers(statement.text));
            }
        }
        while let Some(name) = pending.pop() {
            for &k in self.definers.get(name).map_or(&[][..], Vec::as_slice) {
                if needed[k] {
                    continue;
                }
                needed[k] = true;
                let own = &self.statements[k].defines;
                pending.extend(
                    identifiers(self.statements[k].text)
                        .into_iter()
                        .filter(|n| !own.contains(n)),
                );
            }
        }
        let nested = self.nested < self.statements.len();
        let mut out = String::new();
        for (k, statement) in self.statements.iter().enumerate() {
            if nested && k == self.nested {
                out.push_str("return (function()\n");
            }
            if needed[k] {
                out.push_str(statement.text);
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(body);
        if nested {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("end)()\n");
        }
        out
    }

    /// Every helper and every script as one FUNCTION library named `name` (see
    /// `scripts::LIBRARY`), each script `(op, body)` registered as the function `<name>_<op>`,
    /// which returns through the helper `through` (called with what the body returns).
    ///
    /// The helpers are made once, when the library loads; what a script's text sets up on
    /// every call is redone by `reset(keys, args)` before each call, in file order: the calls
    /// that define nothing (`bind(0)`), and every value a module-level `local` gets (so per-call
    /// state such as event ids or the flows' caches starts afresh, and no value can leak from
    /// one call to the next), except constants: upper-case names given literals and other
    /// constants, which are never assigned again. A plain declaration is reset to nil, unless a
    /// later `name = function` statement defines it (the helpers declared ahead of use).
    pub fn library(&self, name: &str, ops: &[(&str, &str)], through: &str) -> String {
        let function_defined: HashSet<&str> = self
            .statements
            .iter()
            .filter(|s| !s.code.starts_with("local "))
            .flat_map(|s| s.defines.iter().copied())
            .collect();
        let mut constants: HashSet<&str> = HashSet::new();
        let mut out = format!("#!lua name={name}\nlocal KEYS, ARGV\n");
        let mut reset =
            String::from("local function reset(keys, args)\n  KEYS, ARGV = keys, args\n");
        for (index, statement) in self.statements.iter().enumerate() {
            if index == self.nested {
                // The helpers from here on are locals of a function of their own: Lua allows
                // a function 200 locals, which the library's main chunk alone would pass.
                out.push_str("(function()\n");
            }
            let code = statement.code;
            let comments = &statement.text[..statement.text.len() - code.len()];
            if statement.defines.is_empty() {
                reset.push_str(code);
                continue;
            }
            let Some(list) = code.strip_prefix("local ") else {
                out.push_str(statement.text); // `name = function`: made once
                continue;
            };
            if list.starts_with("function ") {
                out.push_str(statement.text);
                continue;
            }
            let names = statement.defines.join(", ");
            let value = list.split_once('=').map(|(_, value)| value);
            // A constant (an upper-case name given literals and other constants) is set once,
            // at load.
            let upper = |n: &str| n.bytes().all(|c| !c.is_ascii_lowercase());
            if value.is_some_and(|value| {
                statement.defines.iter().all(|n| upper(n))
                    && identifiers(value).iter().all(|n| constants.contains(n))
            }) {
                constants.extend(statement.defines.iter().copied());
                out.push_str(statement.text);
                continue;
            }
            out.push_str(comments);
            out.push_str(&format!("local {names}\n"));
            match value {
                Some(value) => reset.push_str(&format!("{names} ={value}")),
                None => {
                    for n in statement
                        .defines
                        .iter()
                        .filter(|n| !function_defined.contains(*n))
                    {
                        reset.push_str(&format!("{n} = nil\n"));
                    }
                }
            }
            if !reset.ends_with('\n') {
                reset.push('\n');
            }
        }
        reset.push_str("end\n");
        if self.nested >= self.statements.len() {
            out.push_str("(function()\n");
        }
        out.push_str(&reset);
        // The scripts are fields of one table, not a local each (the 200 locals' bound).
        out.push_str("local lanemq_ops = {}\n");
        for (op, body) in ops {
            out.push_str(&format!("lanemq_ops.{op} = function()\n{body}\nend\n"));
        }
        for (op, _) in ops {
            out.push_str(&format!(
                "do local op_{op} = lanemq_ops.{op} \
                 redis.register_function('{name}_{op}', \
                 function(keys, args) reset(keys, args) return {through}(op_{op}()) end) end\n"
            ));
        }
        out.push_str("end)()\n");
        out
    }

    /// The names defined above the nested function (its upvalues, at most).
    #[cfg(test)]
    pub fn outer_names(&self) -> Vec<&'a str> {
        self.statements[..self.nested]
            .iter()
            .flat_map(|s| s.defines.iter().copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_skip_strings_comments_fields_and_numbers() {
        let source = r#"local a = b .. "c -- d" .. 'e\'f' -- g h
            --[[ i
            j ]] k = l.m + n:o(p) + 0x1F + [==[ q ]] ]==] .. r..s"#;
        let mut got: Vec<&str> = identifiers(source).into_iter().collect();
        got.sort();
        assert_eq!(got, ["a", "b", "k", "l", "local", "n", "p", "r", "s"]);
    }

    #[test]
    fn statements_and_their_names() {
        assert_eq!(defined_names("local function f(x)"), ["f"]);
        assert_eq!(defined_names("local A, B, C = 1, 2, 3"), ["A", "B", "C"]);
        assert_eq!(defined_names("local A, B"), ["A", "B"]);
        assert_eq!(defined_names("need_chain = function(x)"), ["need_chain"]);
        assert!(defined_names("bind(0)").is_empty());
        assert!(!starts_statement("end"));
        assert!(!starts_statement("  local x = 1"));
        assert!(!starts_statement("-- local x"));
    }

    #[test]
    fn keeps_what_is_reached_in_order() {
        let common = "-- header\nlocal A, B\n-- f uses A\nlocal function f() return A end\n\
                      local function g() return B end\nlocal unused = {}\nsetup()\n";
        let jobs = "local h\nlocal function k() return f() .. \"g()\" end\n\
                    h = function() return g() end\n";
        let prelude = Prelude::new(&[common, jobs]);
        assert_eq!(
            prelude.compose("return k()"),
            "-- header\nlocal A, B\n-- f uses A\nlocal function f() return A end\nsetup()\n\
             local function k() return f() .. \"g()\" end\nreturn k()"
        );
        assert_eq!(
            prelude.compose("return h()"),
            "-- header\nlocal A, B\nlocal function g() return B end\nsetup()\nlocal h\n\
             h = function() return g() end\nreturn h()"
        );
    }

    #[test]
    fn runs_the_helpers_and_body_nested_from_the_marker() {
        let common = "local A\nlocal function f() return A end\n-- compose: nested from here\n\
                      local function g() return f() end\nlocal function unused() end\n";
        let prelude = Prelude::new(&[common, "local function h() return A end\n"]);
        assert_eq!(prelude.outer_names(), ["A", "f"]);
        assert_eq!(
            prelude.compose("return g()"),
            "local A\nlocal function f() return A end\nreturn (function()\n\
             -- compose: nested from here\nlocal function g() return f() end\nreturn g()\n\
             end)()\n"
        );
        // Nothing of the nested part needed: only the body runs nested.
        assert_eq!(
            prelude.compose("return A"),
            "local A\nreturn (function()\nreturn A\nend)()\n"
        );
    }
}
