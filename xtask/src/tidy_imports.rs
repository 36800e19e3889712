//! Tidy test: the top-level modules of each library crate import each other without a cycle, so
//! each crate reads as layers, every module built only on the ones below it.
//!
//! A library crate is an `asynq-*/src` with a `lib.rs`; its top-level modules are its `src/*.rs`
//! files and folders (`foo/…` counts as part of `foo`). Module `a` uses module `b` when the code of
//! `a` names a path `crate::b…` (also inside `crate::{…}` groups, as `$crate::b…`, or through
//! enough `super::` to reach the crate root), or `crate::Item` where `lib.rs` re-exports `Item`
//! from `b`. Comments and `#[cfg(test)]` module blocks do not count: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use crate::tidy::{files_with_extension, read, relative};
use crate::workspace_root;

/// Cycles left in place: `(crate, the modules the cycle joins)`, each with why.
const ALLOWED_CYCLES: &[(&str, &[&str])] = &[
    // Errors carry the validated names; the names' constructors return those errors.
    ("asynq-core", &["error", "names"]),
    // `RedisBroker` holds the state of events and workflows, whose code implements the broker's
    // methods with its helpers.
    ("asynq-redis", &["broker", "events", "workflow"]),
];

/// Module name to the modules it uses, each with the first place that says so (`file:line`).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

#[test]
fn library_modules_import_each_other_without_a_cycle() {
    let root = workspace_root();
    let mut unexpected = Vec::new();
    let mut found = BTreeSet::new();
    for (name, src) in library_crates(&root) {
        let graph = module_graph(&root, &src);
        for cycle in cycles(&graph) {
            let allowed = ALLOWED_CYCLES
                .iter()
                .any(|(krate, modules)| *krate == name && modules.iter().copied().eq(cycle.iter().map(String::as_str)));
            if allowed {
                found.insert((name.clone(), cycle));
            } else {
                unexpected.push(format!("{name}: {}", describe_cycle(&graph, &cycle)));
            }
        }
    }
    let stale: Vec<String> = ALLOWED_CYCLES
        .iter()
        .filter(|(krate, modules)| {
            !found.contains(&(krate.to_string(), modules.iter().map(|m| m.to_string()).collect::<BTreeSet<_>>()))
        })
        .map(|(krate, modules)| format!("{krate}: {}", modules.join(", ")))
        .collect();
    assert!(
        unexpected.is_empty(),
        "these modules import each other in a circle; move what they share into a module that imports \
         none of them:\n  {}",
        unexpected.join("\n  ")
    );
    assert!(
        stale.is_empty(),
        "these allowed cycles are gone; remove them from ALLOWED_CYCLES:\n  {}",
        stale.join("\n  ")
    );
}

/// The library crates, `(name, src directory)`, sorted.
fn library_crates(root: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut crates: Vec<_> = std::fs::read_dir(root)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter_map(|dir| {
            let name = dir.file_name()?.to_str()?.to_owned();
            (name.starts_with("asynq-") && dir.join("src/lib.rs").is_file()).then(|| (name, dir.join("src")))
        })
        .collect();
    crates.sort();
    crates
}

/// The use graph of the top-level modules of the crate whose sources are in `src`.
fn module_graph(root: &Path, src: &Path) -> Graph {
    let mut files_of: BTreeMap<String, Vec<std::path::PathBuf>> = BTreeMap::new();
    for path in files_with_extension(src, "rs") {
        let inside = path.strip_prefix(src).expect("file under src");
        let first = inside.components().next().expect("a path component");
        let module = first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        if module != "lib" {
            files_of.entry(module).or_default().push(path);
        }
    }
    let modules: BTreeSet<String> = files_of.keys().cloned().collect();
    let reexports = reexports(&code(&read(&src.join("lib.rs"))), &modules);
    let mut graph = Graph::new();
    for (module, files) in &files_of {
        let uses = graph.entry(module.clone()).or_default();
        for path in files {
            let inside = path.strip_prefix(src).expect("file under src");
            // `foo.rs` and `foo/mod.rs` are one level below the root, `foo/bar.rs` two...
            let depth = inside.components().count() - usize::from(inside.ends_with("mod.rs"));
            let text = code(&read(path));
            for (offset, supers, name) in references(&text) {
                if supers != 0 && supers != depth {
                    continue;
                }
                let target = if modules.contains(&name) { Some(&name) } else { reexports.get(&name) };
                if let Some(target) = target.filter(|target| *target != module) {
                    let line = text[..offset].matches('\n').count() + 1;
                    uses.entry(target.clone()).or_insert_with(|| format!("{}:{line}", relative(root, path)));
                }
            }
        }
    }
    graph
}

/// `text` without comments and `#[cfg(test)]` module blocks; lines keep their numbers.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    let mut skipping: Option<i64> = None;
    while let Some(line) = lines.next() {
        let line = line.find("//").map_or(line, |at| &line[..at]);
        if let Some(depth) = skipping.as_mut() {
            *depth += braces(line);
            if *depth <= 0 {
                skipping = None;
            }
            out.push('\n');
            continue;
        }
        let next = lines.peek().map(|next| next.trim()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{') {
            skipping = Some(0);
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Opening minus closing braces on `line`.
fn braces(line: &str) -> i64 {
    line.chars().map(|c| i64::from(c == '{') - i64::from(c == '}')).sum()
}

/// The paths of `code` that start at the crate root or climb with `super::`: `(offset, how many
/// `super::` (0 for `crate::`), the first name after them)`, one per member of a `{…}` group.
fn references(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let (start_crate, start_super) = (rest.starts_with("crate::"), rest.starts_with("super::"));
        let starts_path =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':');
        if !(starts_path && (start_crate || start_super)) {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let mut after = at;
        let mut supers = 0;
        if start_crate {
            after += "crate::".len();
        } else {
            while code[after..].starts_with("super::") {
                after += "super::".len();
                supers += 1;
            }
        }
        for name in first_names(&code[after..]) {
            found.push((at, supers, name));
        }
        at = after;
    }
    found
}

/// The first name of a path, or of each member of the `{…}` group it starts with.
fn first_names(path: &str) -> Vec<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(group) = path.strip_prefix('{') else {
        return vec![ident(path)].into_iter().filter(|name| !name.is_empty()).collect();
    };
    let mut names = Vec::new();
    let mut depth = 0;
    let mut member_start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(&group[member_start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(&group[member_start..i]));
                member_start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

/// The names `lib.rs` (its code, `lib`) re-exports from one of `modules`: name to module.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some((_, path)) = statement.split_once("use ") else { continue };
        let path = path.trim().trim_start_matches("crate::").trim_start_matches("self::");
        let Some((module, rest)) = path.split_once("::") else { continue };
        if !modules.contains(module) {
            continue;
        }
        for name in rest.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && !["self", "as", "crate", "super"].contains(&name) && !modules.contains(name) {
                names.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    names
}

/// The cycles of `graph`: its strongly connected parts of more than one module.
fn cycles(graph: &Graph) -> Vec<BTreeSet<String>> {
    let reach: BTreeMap<&String, BTreeSet<&String>> = graph.keys().map(|m| (m, reachable(graph, m))).collect();
    let mut cycles: Vec<BTreeSet<String>> = Vec::new();
    for module in graph.keys() {
        let part: BTreeSet<String> =
            reach[module].iter().filter(|other| reach[*other].contains(module)).map(|m| (*m).clone()).collect();
        if part.len() > 1 && !cycles.contains(&part) {
            cycles.push(part);
        }
    }
    cycles
}

/// The modules reachable from `from` by one or more uses.
fn reachable<'a>(graph: &'a Graph, from: &String) -> BTreeSet<&'a String> {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<&String> = graph.get(from).into_iter().flat_map(|uses| uses.keys()).collect();
    while let Some(module) = pending.pop() {
        if seen.insert(module) {
            pending.extend(graph.get(module).into_iter().flat_map(|uses| uses.keys()));
        }
    }
    seen
}

/// One circle through the first module of `cycle`, each step with where it is written:
/// `a -> b (a.rs:3) -> a (b.rs:7)`; then the other modules of the cycle.
fn describe_cycle(graph: &Graph, cycle: &BTreeSet<String>) -> String {
    let start = cycle.first().expect("a cycle has modules");
    // Shortest way back to `start`, breadth first, within the cycle.
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    'search: while let Some(module) = queue.pop_front() {
        for next in graph[module].keys().filter(|next| cycle.contains(*next)) {
            if next == start {
                came_from.insert(start, module);
                break 'search;
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, module);
                queue.push_back(next);
            }
        }
    }
    let mut path = vec![start];
    let mut at = came_from[start];
    while at != start {
        path.push(at);
        at = came_from[at];
    }
    path.push(start);
    path.reverse();
    let mut text = start.clone();
    for step in path.windows(2) {
        text.push_str(&format!(" -> {} ({})", step[1], graph[step[0]][step[1]]));
    }
    let on_path: BTreeSet<&String> = path.iter().copied().collect();
    let others: Vec<&str> = cycle.iter().filter(|m| !on_path.contains(m)).map(String::as_str).collect();
    if !others.is_empty() {
        text.push_str(&format!("; the cycle also joins {}", others.join(", ")));
    }
    text
}

/// The checks' own logic, on made-up input.
mod self_tests {
    use super::*;

    #[test]
    fn paths_groups_and_supers_are_found() {
        let text = "use crate::{a::X, b, c::{d, e}};\nfn f() { crate::g::h(); super::super::k(); $crate::m::n }\n";
        let found: Vec<(usize, String)> = references(text).into_iter().map(|(_, s, n)| (s, n)).collect();
        let expected = [(0, "a"), (0, "b"), (0, "c"), (0, "g"), (2, "k"), (0, "m")];
        assert_eq!(found, expected.map(|(s, n)| (s, n.to_owned())));
        assert!(references("use my_crate::x; fn f() { self::super_x::y }").is_empty());
    }

    #[test]
    fn comments_and_test_modules_are_not_code() {
        let text = "use crate::a; // crate::b\n/// crate::c\n#[cfg(test)]\nmod tests {\n    fn f() {\n        crate::d;\n    }\n}\nuse crate::e;\n";
        let code = code(text);
        let names: Vec<String> = references(&code).into_iter().map(|(_, _, n)| n).collect();
        assert_eq!(names, ["a", "e"]);
        assert_eq!(code.lines().count(), text.lines().count(), "line numbers are kept");
    }

    #[test]
    fn root_reexports_name_their_module() {
        let modules: BTreeSet<String> = ["config", "server"].map(String::from).into();
        let lib = "mod config;\npub use config::{Config, Builder as B};\npub use server::Server;\npub use other::X;\n";
        let names = reexports(lib, &modules);
        let expected = [("B", "config"), ("Builder", "config"), ("Config", "config"), ("Server", "server")];
        assert_eq!(names, expected.map(|(a, b)| (a.to_owned(), b.to_owned())).into());
    }

    #[test]
    fn cycles_are_found_and_named_with_their_places() {
        let edge = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let mut graph = Graph::new();
        for (from, to) in [edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("c", "d"), edge("d", "e")] {
            graph.entry(from.clone()).or_default().insert(to.clone(), format!("{from}.rs:1"));
            graph.entry(to).or_default();
        }
        let found = cycles(&graph);
        let abc: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
        assert_eq!(found, [abc]);
        assert_eq!(describe_cycle(&graph, &found[0]), "a -> b (a.rs:1) -> c (b.rs:1) -> a (c.rs:1)");
        graph.get_mut("e").expect("e").insert("d".to_owned(), "e.rs:9".to_owned());
        assert_eq!(cycles(&graph).len(), 2);
    }
}
