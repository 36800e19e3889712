//! Tidy tests: the invariants of `ARCHITECTURE.md`, checked on every test run.
//!
//! - every `.rs` file starts with a `//!` doc comment saying what it is for;
//! - `asynq-core` depends on no runtime, Redis client or protobuf crate, and neither
//!   `asynq-client`, the operators' tools `asynq-cli` and `asynq-web`, nor `asynq-metrics` without
//!   its `server` feature depends on `asynq-server`;
//! - every Lua script of the Redis broker documents its `KEYS`, `ARGV` and return value;
//! - library code reads the time only through `asynq_core::Clock`: nothing under `asynq-*/src`
//!   except `asynq-core/src/clock.rs` calls `SystemTime::now` or `Instant::now`, unless the line
//!   (or a comment line right above it) says `// allow: wall-clock`. `tokio::time::Instant::now`,
//!   written out in full, is allowed: it is the timer layer, which follows tokio's paused time;
//! - no code of `asynq-core` or `asynq-memory` spells a Redis key name;
//! - every publishable crate carries its package metadata and a LICENSE file;
//! - library code takes a poisoned lock's data (`PoisonError::into_inner`), never panics on it;
//! - no code reads the reference folder beside the repository, which a user's clone does not
//!   have, except the bench's opt-in comparison with another crate (`--peer`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{cmd, workspace_root};

/// The comment that allows one wall-clock read outside `clock.rs`.
const WALL_CLOCK_ALLOW: &str = "// allow: wall-clock";

/// The calls that read the OS clock directly.
const WALL_CLOCK_CALLS: &[&str] = &["SystemTime::now", "Instant::now"];

/// Dependency edges that must not exist: `(package, crate it must not depend on)`, normal
/// (non-dev, non-build) dependencies, direct or not.
const FORBIDDEN_DEPENDENCIES: &[(&str, &str)] = &[
    ("asynq-core", "tokio"),
    ("asynq-core", "redis"),
    ("asynq-core", "prost"),
    ("asynq-client", "asynq-server"),
    ("asynq-cli", "asynq-server"),
    ("asynq-metrics", "asynq-server"),
    ("asynq-web", "asynq-server"),
    // A cron-only process does not compile the worker.
    ("asynq-scheduler", "asynq-server"),
    // The conformance suite is written against the broker traits alone.
    ("asynq-conformance", "asynq-client"),
    ("asynq-conformance", "asynq-memory"),
    ("asynq-conformance", "asynq-redis"),
    ("asynq-conformance", "asynq-server"),
];

#[test]
fn every_rust_file_starts_with_a_module_doc_comment() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for path in files_with_extension(&root, "rs") {
        let text = read(&path);
        let first = text.lines().map(str::trim).find(|line| !line.is_empty());
        // A facade whose documentation is its README includes it instead.
        if !first.is_some_and(|line| line.starts_with("//!") || line.starts_with("#![doc = include_str!(")) {
            offenders.push(relative(&root, &path));
        }
    }
    assert!(
        offenders.is_empty(),
        "these files do not start with a `//!` comment saying what the file is for:\n  {}",
        offenders.join("\n  ")
    );
}

/// The reference folder beside the repository, written in two parts so this file does not name it.
const OUTSIDE_FOLDER: &str = concat!("../", "shared");

/// Files allowed to name [`OUTSIDE_FOLDER`]: the bench's opt-in comparison (`--peer`), which
/// says what it needs when the folder is missing.
const MAY_READ_OUTSIDE: &[&str] = &["xtask/src/bench/peer.rs"];

#[test]
fn nothing_reads_outside_the_repository() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for path in files_with_extension(&root, "rs") {
        let name = relative(&root, &path);
        if MAY_READ_OUTSIDE.contains(&name.as_str()) {
            continue;
        }
        for (number, line) in read(&path).lines().enumerate() {
            if line.contains(OUTSIDE_FOLDER) {
                offenders.push(format!("{name}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these lines name {OUTSIDE_FOLDER}, which a clone of the repository does not have; keep what \
         the tests need in the repository (as tests/fixtures/ does):\n  {}",
        offenders.join("\n  ")
    );
}

#[test]
fn every_publishable_crate_is_ready_to_publish() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for package in workspace_packages().into_iter().filter(|p| p.publishable) {
        let dir = package.manifest_path.parent().expect("a manifest has a directory");
        for (field, present) in [
            ("description", package.description.is_some()),
            ("license", package.license.is_some()),
            ("keywords", !package.keywords.is_empty()),
            ("categories", !package.categories.is_empty()),
            ("readme", package.readme.as_ref().is_some_and(|readme| readme.is_file())),
            ("documentation", package.documentation.is_some()),
            ("no repository until there is a real one", package.repository.is_none()),
        ] {
            if !present {
                offenders.push(format!("{}: {field}", package.name));
            }
        }
        if !dir.join("LICENSE").is_file() {
            offenders.push(format!("{}: a LICENSE file in {}", package.name, relative(&root, dir)));
        }
    }
    assert!(
        offenders.is_empty(),
        "publishable crates (those without `publish = false`) lack:\n  {}",
        offenders.join("\n  ")
    );
}

/// What a tidy test needs of one workspace member, from `cargo metadata`.
#[derive(serde::Deserialize)]
pub(crate) struct Package {
    pub(crate) name: String,
    manifest_path: PathBuf,
    description: Option<String>,
    license: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    readme: Option<PathBuf>,
    documentation: Option<String>,
    repository: Option<String>,
    /// `None` (any registry) unless the manifest says `publish = false` (`Some([])`).
    publish: Option<Vec<String>>,
    #[serde(skip)]
    pub(crate) publishable: bool,
}

/// The workspace's members, as `cargo metadata --no-deps` describes them.
pub(crate) fn workspace_packages() -> Vec<Package> {
    #[derive(serde::Deserialize)]
    struct Metadata {
        packages: Vec<Package>,
    }
    let output = cmd::cargo_command(["metadata", "--no-deps", "--format-version", "1"])
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: Metadata = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    metadata
        .packages
        .into_iter()
        .map(|mut package| {
            package.publishable = package.publish.as_ref().is_none_or(|registries| !registries.is_empty());
            if let Some(readme) = &package.readme {
                let dir = package.manifest_path.parent().expect("a manifest has a directory");
                package.readme = Some(dir.join(readme));
            }
            package
        })
        .collect()
}

#[test]
fn only_the_redis_broker_knows_redis_key_names() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for dir in ["asynq-core/src", "asynq-memory/src"] {
        for path in files_with_extension(&root.join(dir), "rs") {
            offenders.extend(key_names_in_code(&root, &path, "//"));
        }
    }
    assert!(
        offenders.is_empty(),
        "Redis key names (`asynq:{{<queue>}}:...`, `asynq:servers`, ...) belong in asynq-redis/src/keys.rs, \
         not in the code of the core or the memory broker:\n  {}",
        offenders.join("\n  ")
    );
}

#[test]
fn the_redis_broker_builds_every_key_in_its_namespace() {
    let root = workspace_root();
    let src = root.join("asynq-redis/src");
    let mut offenders = Vec::new();
    for path in files_with_extension(&src, "rs") {
        if path != src.join("keys.rs") {
            offenders.extend(key_names_in_code(&root, &path, "//"));
        }
    }
    for path in files_with_extension(&src, "lua") {
        offenders.extend(key_names_in_code(&root, &path, "--"));
    }
    assert!(
        offenders.is_empty(),
        "the Redis broker spells a key of Go's namespace: build it from the broker's `Namespace` \
         (asynq-redis/src/keys.rs), or pass it to the script, so that other namespaces get their own:\n  {}",
        offenders.join("\n  ")
    );
}

/// The lines of `path` that spell a Redis key of Go's layout in code: comments (starting with
/// `comment`) may name the key a structure stands for, and a Rust file's tests may use real keys.
fn key_names_in_code(root: &Path, path: &Path, comment: &str) -> Vec<String> {
    read(path)
        .lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| !line.trim_start().starts_with(comment) && redis_key_names(line))
        .map(|(index, line)| format!("{}:{}: {}", relative(root, path), index + 1, line.trim()))
        .collect()
}

/// True when `line` spells a Redis key of Go's layout: `asynq:` followed by a key part (an error
/// text such as `"asynq: task lease expired"` has a space there).
fn redis_key_names(line: &str) -> bool {
    line.match_indices("asynq:").any(|(at, _)| {
        line[at + "asynq:".len()..].chars().next().is_some_and(|next| next == '{' || next.is_ascii_alphanumeric())
    })
}

#[test]
fn crate_dependency_boundaries_hold() {
    let failures: Vec<String> = FORBIDDEN_DEPENDENCIES
        .iter()
        .filter_map(|(package, forbidden)| check_no_dependency(package, forbidden).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn lua_scripts_document_keys_argv_and_returns() {
    let root = workspace_root();
    let scripts = root.join("asynq-redis/src/scripts");
    if !scripts.is_dir() {
        return; // no scripts yet
    }
    let mut offenders = Vec::new();
    for path in files_with_extension(&scripts, "lua") {
        let header = lua_header(&read(&path));
        let missing: Vec<&str> =
            ["KEYS", "ARGV", "Returns"].into_iter().filter(|word| !header.contains(word)).collect();
        if !missing.is_empty() {
            offenders.push(format!("{} (header lacks {})", relative(&root, &path), missing.join(", ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "every Lua script must open with a comment describing its KEYS, ARGV and what it \
         Returns:\n  {}",
        offenders.join("\n  ")
    );
}

#[test]
fn library_code_reads_time_only_through_the_clock() {
    let root = workspace_root();
    let allowed = root.join("asynq-core/src/clock.rs");
    let mut offenders = Vec::new();
    for src in library_source_dirs(&root) {
        for path in files_with_extension(&src, "rs") {
            if path == allowed {
                continue;
            }
            for (line_number, call) in wall_clock_reads(&read(&path)) {
                offenders.push(format!("{}:{line_number}: {call}", relative(&root, &path)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "library code must read the time through `asynq_core::Clock` (see \
         asynq-core/src/clock.rs), not the OS clock; where real time is genuinely needed, end \
         the line with `{WALL_CLOCK_ALLOW}` (or put that comment on the line above):\n  {}",
        offenders.join("\n  ")
    );
}

/// Fails when `cargo tree` finds `forbidden` among `package`'s normal dependencies.
/// The calls that would panic on a poisoned lock, and what library code writes instead.
const POISON_PANICS: &[&str] = &[
    ".lock().expect(",
    ".lock().unwrap()",
    ".read().expect(",
    ".read().unwrap()",
    ".write().expect(",
    ".write().unwrap()",
];

#[test]
fn library_code_recovers_poisoned_locks_one_way() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for dir in library_source_dirs(&root) {
        for path in files_with_extension(&dir, "rs") {
            let text = read(&path);
            // The library part: what comes before the file's test module.
            let library = text.split("\n#[cfg(test)]\nmod tests").next().unwrap_or_default();
            let joined: String = library.split_whitespace().collect::<Vec<_>>().join("");
            for call in POISON_PANICS {
                if joined.contains(call) {
                    offenders.push(format!("{}: {call}", relative(&root, &path)));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "a lock guards data that stays consistent between statements, and a panic elsewhere must not take the \
         broker or server down with it: take a poisoned lock's data with `.unwrap_or_else(PoisonError::into_inner)`:\n  {}",
        offenders.join("\n  ")
    );
}

fn check_no_dependency(package: &str, forbidden: &str) -> Result<(), String> {
    let mut command = cmd::cargo_command(["tree", "-p", package, "-e", "normal", "-i", forbidden]);
    let shown = cmd::display(&command);
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|err| format!("could not run `{shown}`: {err}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        // Present in the lock file but not reachable from `package`: cargo prints nothing.
        if stdout.trim().is_empty() {
            return Ok(());
        }
        return Err(format!("{package} must not depend on {forbidden}, but `{shown}` found:\n{stdout}"));
    }
    // Absent from `package`'s dependency graph altogether.
    if stderr.contains("did not match any packages") {
        return Ok(());
    }
    Err(format!("`{shown}` failed ({}):\n{stderr}", output.status))
}

/// The comment block a Lua script opens with: its leading `--` lines (blank lines allowed) and
/// `--[[ ... ]]` blocks.
fn lua_header(text: &str) -> String {
    let mut header = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if in_block {
            in_block = !trimmed.contains("]]");
        } else if trimmed.starts_with("--[[") || trimmed.starts_with("--[=") {
            in_block = !trimmed["--[[".len()..].contains("]]");
        } else if !(trimmed.is_empty() || trimmed.starts_with("--")) {
            break;
        }
        header.push_str(line);
        header.push('\n');
    }
    header
}

/// The direct wall-clock reads in `text`, as `(line number, call)`. Comment lines and trailing
/// comments are ignored; lines carrying (or following a comment line carrying)
/// [`WALL_CLOCK_ALLOW`] are allowed.
fn wall_clock_reads(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    let mut previous_allows = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let allows = line.contains(WALL_CLOCK_ALLOW);
        if trimmed.starts_with("//") {
            previous_allows = allows;
            continue;
        }
        let code = line.split_once("//").map_or(line, |(code, _)| code);
        let code = code.replace("tokio::time::Instant::now", "");
        let allowed = allows || previous_allows;
        if let Some(call) = WALL_CLOCK_CALLS.iter().find(|call| !allowed && code.contains(*call)) {
            found.push((index + 1, *call));
        }
        previous_allows = false;
    }
    found
}

/// The `src` directories of the library crates: `asynq-*/src`.
fn library_source_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("asynq-")))
        .map(|crate_dir| crate_dir.join("src"))
        .filter(|src| src.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every file under `dir` whose name ends in `.{extension}`, skipping `target` and hidden
/// directories, sorted.
pub(crate) fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
        for entry in entries {
            let entry = entry.expect("readable directory entry");
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let file_type = entry.file_type().expect("readable file type");
            if file_type.is_dir() {
                if !(name.starts_with('.') || name == "target") {
                    pending.push(path);
                }
            } else if file_type.is_file() && path.extension().is_some_and(|ext| ext == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

pub(crate) fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

pub(crate) fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The checks' own logic, on made-up input.
mod self_tests {
    use super::*;

    #[test]
    fn wall_clock_reads_are_found_unless_allowed() {
        let text = "\
//! A module mentioning Instant::now in its docs.
use std::time::{Instant, SystemTime};
/// Unlike `SystemTime::now`, this is testable.
fn a() -> SystemTime { SystemTime::now() }
fn b() -> Instant { Instant::now() } // allow: wall-clock
fn c() -> Instant { tokio::time::Instant::now() }
fn e() -> Instant { Instant::now() }
fn d() -> Instant { std::time::Instant::now() } // not allowed
let url = \"http://x\"; // Instant::now
";
        assert_eq!(wall_clock_reads(text), vec![(4, "SystemTime::now"), (7, "Instant::now"), (8, "Instant::now")]);
    }

    #[test]
    fn redis_key_names_are_told_from_error_texts() {
        assert!(redis_key_names(r#"let key = format!("asynq:{{{queue}}}:unique");"#));
        assert!(redis_key_names(r#"const ALL: &str = "asynq:servers";"#));
        assert!(!redis_key_names(r#"const MESSAGE: &str = "asynq: task lease expired";"#));
    }

    #[test]
    fn lua_header_is_the_leading_comment_block() {
        let script = "\
-- Moves due tasks.
--
-- KEYS[1] -> asynq:{q}:scheduled
-- ARGV[1] -> now
-- Returns: the number moved
local n = 0 -- KEYS here does not count
return n
";
        let header = lua_header(script);
        assert!(header.contains("Returns"));
        assert!(!header.contains("local n"));

        let block = "--[[\nKEYS[1]: a\nARGV[1]: b\nReturns: c\n]]\nreturn 1\n";
        let header = lua_header(block);
        assert!(header.contains("Returns") && !header.contains("return 1"));

        assert!(!lua_header("return 1 -- KEYS ARGV Returns\n").contains("KEYS"));
    }

    #[test]
    fn a_dependency_absent_from_the_graph_passes_and_a_present_one_fails() {
        assert_eq!(check_no_dependency("xtask", "surely-not-a-crate-xtask"), Ok(()));
        let err = check_no_dependency("xtask", "anyhow").unwrap_err();
        assert!(err.contains("must not depend on anyhow"), "{err}");
    }
}
