//! Tidy tests of the user documentation: a README that fits a few screens, an architecture map
//! read in ten minutes, and docs that speak of the product, not of how it was made.
//!
//! - `README.md` has at most [`README_MAX_LINES`] lines;
//! - `ARCHITECTURE.md` has at most [`ARCHITECTURE_MAX_BYTES`] bytes and no line over
//!   [`ARCHITECTURE_MAX_LINE_CHARS`] characters, and every repository path it names exists;
//! - the user docs (the READMEs, `docs/` and its guide, the changelog) name no issue number of
//!   this project's tracker, no commit hash of this repository, and no path outside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::workspace_root;

/// The README's length limit: what a newcomer reads before the first command.
const README_MAX_LINES: usize = 250;

/// ARCHITECTURE.md's length limit: a map of the code a newcomer reads in ten minutes.
const ARCHITECTURE_MAX_BYTES: usize = 20_480;

/// ARCHITECTURE.md's longest line, in characters (not bytes).
const ARCHITECTURE_MAX_LINE_CHARS: usize = 200;

/// The endings of what ARCHITECTURE.md names as a file of the repository.
const FILE_ENDINGS: &[&str] = &[".rs", ".lua", ".md", ".toml"];

/// Spellings of paths outside the repository, written in parts so this file does not hold them.
const OUTSIDE_PATHS: &[&str] =
    &[concat!("../", "shared"), concat!("/", "work/"), concat!("/", "root/"), concat!("/", "home/")];

#[test]
fn the_readme_fits_a_few_screens() {
    let root = workspace_root();
    let lines = read(&root.join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, over {README_MAX_LINES}: move the detail into a guide chapter (docs/guide/)"
    );
}

#[test]
fn architecture_md_stays_dense() {
    let root = workspace_root();
    let text = read(&root.join("ARCHITECTURE.md"));
    let mut problems = Vec::new();
    if text.len() > ARCHITECTURE_MAX_BYTES {
        problems.push(format!("ARCHITECTURE.md is {} bytes, over {ARCHITECTURE_MAX_BYTES}", text.len()));
    }
    for (number, line) in text.lines().enumerate() {
        let chars = line.chars().count();
        if chars > ARCHITECTURE_MAX_LINE_CHARS {
            let start: String = line.chars().take(60).collect();
            problems.push(format!(
                "ARCHITECTURE.md:{}: {chars} characters, over {ARCHITECTURE_MAX_LINE_CHARS}: {start}...",
                number + 1
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md is the map a newcomer reads in ten minutes: say what each part is for and what must stay \
         true, name the type or file whose docs say the rest, and break a long sentence at a clause:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn architecture_md_names_only_paths_that_exist() {
    let root = workspace_root();
    let named = named_paths(&read(&root.join("ARCHITECTURE.md")));
    assert!(named.len() > 20, "ARCHITECTURE.md names almost no paths: is the extraction broken?");
    let missing: Vec<String> = named
        .iter()
        .filter(|named| !named.exists(&root))
        .map(|named| {
            let within = if named.section.is_empty() {
                String::new()
            } else {
                format!(" (nor in {})", named.section.join(", "))
            };
            format!("ARCHITECTURE.md:{}: `{}` is not in the repository{within}", named.line, named.path)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist; name them as they are now (from the repository root, or \
         relative to the crate whose section names them):\n  {}",
        missing.join("\n  ")
    );
}

/// What a span of ARCHITECTURE.md names: a path (`asynq-redis/src/keys.rs`, `docs/guide/`, or
/// `broker/quiet.rs` within a crate's section), or a bare file name within a crate's section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathKind {
    Path,
    FileName,
}

/// A repository path ARCHITECTURE.md names: its line, the path, and the directories named in the
/// heading of its `###` section (a crate), against which it may be relative.
#[derive(Debug, PartialEq, Eq)]
struct NamedPath {
    line: usize,
    path: String,
    kind: PathKind,
    section: Vec<String>,
}

impl NamedPath {
    /// A path exists from the root or from a section directory (or its `src/`); a bare file name
    /// exists anywhere under a section directory.
    fn exists(&self, root: &Path) -> bool {
        match self.kind {
            PathKind::Path => {
                let relative = self.path.trim_end_matches('/');
                let mut bases = vec![root.to_path_buf()];
                for dir in &self.section {
                    bases.push(root.join(dir));
                    bases.push(root.join(dir).join("src"));
                }
                bases
                    .iter()
                    .map(|base| base.join(relative))
                    .any(|path| if self.path.ends_with('/') { path.is_dir() } else { path.exists() })
            }
            PathKind::FileName => self.section.iter().any(|dir| file_named_under(&root.join(dir), &self.path)),
        }
    }
}

/// The repository paths `text` (ARCHITECTURE.md) names in backquotes or as link targets, outside
/// code blocks.
fn named_paths(text: &str) -> Vec<NamedPath> {
    let mut found = Vec::new();
    let mut section: Vec<String> = Vec::new();
    let mut in_code_block = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            section = code_spans(heading).into_iter().map(str::to_owned).collect();
            continue;
        }
        if line.starts_with('#') {
            section.clear();
            continue;
        }
        for span in code_spans(line).into_iter().chain(link_targets(line)) {
            match path_kind(span) {
                Some(PathKind::FileName) if section.is_empty() => {}
                Some(kind) => {
                    found.push(NamedPath { line: index + 1, path: span.to_owned(), kind, section: section.clone() })
                }
                None => {}
            }
        }
    }
    found
}

/// The backquoted spans of one line (an unclosed backquote opens none).
fn code_spans(line: &str) -> Vec<&str> {
    let parts: Vec<&str> = line.split('`').collect();
    (1..parts.len().saturating_sub(1)).step_by(2).map(|i| parts[i]).collect()
}

/// The targets of the line's Markdown links that point into the repository, without an anchor.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next().unwrap_or(target);
            let external = target.contains(':') || target.is_empty();
            (!external).then_some(target)
        })
        .collect()
}

/// Whether `span` names a repository path: a path with a `/` that ends in a file ending or in
/// `/` (a directory), or a bare file name. Patterns, placeholders, URLs and home paths are not.
fn path_kind(span: &str) -> Option<PathKind> {
    let pattern = span.contains(|c: char| c.is_whitespace() || "*<>{}$~?:".contains(c));
    if span.is_empty() || pattern {
        return None;
    }
    let file = FILE_ENDINGS.iter().any(|ending| span.len() > ending.len() && span.ends_with(ending));
    match (span.contains('/'), file || span.ends_with('/')) {
        (true, true) => Some(PathKind::Path),
        (false, true) if file => Some(PathKind::FileName),
        _ => None,
    }
}

/// Whether a file named `name` is somewhere under `dir`, skipping `target` and hidden directories.
fn file_named_under(dir: &Path, name: &str) -> bool {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let file_name = entry.file_name();
            let file_name = file_name.to_string_lossy();
            if path.is_dir() {
                if !(file_name.starts_with('.') || file_name == "target") {
                    pending.push(path);
                }
            } else if file_name == name {
                return true;
            }
        }
    }
    false
}

#[test]
fn user_docs_name_no_issue_number_commit_hash_or_outside_path() {
    let root = workspace_root();
    let docs = user_docs(&root);
    assert!(docs.len() > 20, "the user docs were not found under {}", root.display());
    let mut offenders = Vec::new();
    let mut candidates = Vec::new();
    for path in &docs {
        let name = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        for (number, line) in read(path).lines().enumerate() {
            let at = format!("{name}:{}", number + 1);
            if let Some(issue) = issue_number(line) {
                offenders.push(format!("{at}: names an issue: {issue:?}"));
            }
            for outside in OUTSIDE_PATHS {
                if line.contains(outside) {
                    offenders.push(format!("{at}: names a path outside the repository: {outside:?}"));
                }
            }
            candidates.extend(hex_words(line).into_iter().map(|word| (at.clone(), word.to_owned())));
        }
    }
    for (at, word) in commits_among(&root, &candidates) {
        offenders.push(format!("{at}: names a commit of this repository: {word}"));
    }
    assert!(
        offenders.is_empty(),
        "user docs speak of the product: say what changed and how to reproduce a figure (a date, a command), \
         not where or when it was made:\n  {}",
        offenders.join("\n  ")
    );
}

/// The Markdown a user reads: every README, `docs/` (with the guide) and the changelog.
fn user_docs(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let entries = std::fs::read_dir(root).expect("the workspace root is readable");
    for entry in entries.flatten() {
        let readme = entry.path().join("README.md");
        if entry.path().is_dir() && readme.is_file() && !readme.is_symlink() {
            docs.push(readme);
        }
    }
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    docs
}

/// "issue 20", "issues 12 and 14", "#609": a reference to an issue tracker.
fn issue_number(line: &str) -> Option<String> {
    let lower = line.to_lowercase();
    for (start, _) in lower.match_indices("issue") {
        let rest = lower[start + "issue".len()..].trim_start_matches('s').trim_start();
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let end = line.len().min(start + 16);
            return Some(line[start..end].to_owned());
        }
    }
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices('#') {
        let before_ok = i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'(';
        let digits = line[i + 1..].chars().take_while(char::is_ascii_digit).count();
        if before_ok && digits >= 1 && !line[i + 1 + digits..].starts_with(|c: char| c.is_alphanumeric()) {
            return Some(line[i..i + 1 + digits].to_owned());
        }
    }
    None
}

/// Words of 7 to 40 lowercase hex digits, with a letter and a digit, standing alone (not part of
/// a UUID or a longer word): what an abbreviated commit hash looks like.
fn hex_words(line: &str) -> Vec<&str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|word| (7..=40).contains(&word.len()))
        .filter(|word| word.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)))
        .filter(|word| word.chars().any(|c| c.is_ascii_digit()) && word.chars().any(|c| c.is_ascii_alphabetic()))
        .collect()
}

/// Those of `candidates` that name a commit of the repository at `root`; none when git or the
/// history is not there (a source archive).
fn commits_among(root: &Path, candidates: &[(String, String)]) -> Vec<(String, String)> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let input: String = candidates.iter().map(|(_, word)| format!("{word}^{{commit}}\n")).collect();
    let child = Command::new("git")
        .args(["cat-file", "--batch-check"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return Vec::new() };
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let _ = stdin.write_all(input.as_bytes());
    }
    let Ok(output) = child.wait_with_output() else { return Vec::new() };
    let answers = String::from_utf8_lossy(&output.stdout);
    candidates
        .iter()
        .zip(answers.lines())
        .filter(|(_, answer)| answer.split_whitespace().nth(1) == Some("commit"))
        .map(|(candidate, _)| candidate.clone())
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_references_are_found_and_other_numbers_are_not() {
        assert!(issue_number("as issue 20 sets it").is_some());
        assert!(issue_number("(issues #175, #195)").is_some());
        assert!(issue_number("see #609 upstream").is_some());
        assert!(issue_number("the issue is that 3 tasks").is_none());
        assert!(issue_number("## 0.1.0").is_none());
        assert!(issue_number("a `#[non_exhaustive]` enum, color #fff").is_none());
    }

    #[test]
    fn named_paths_are_backquoted_paths_and_links_outside_code_blocks() {
        let text = "\
# Title
See `docs/a.md`, [the guide](docs/guide/), [Go](https://example.com/x.md) and `a.rs` (no section).
### `asynq-x` (a crate)
`src/b.rs`, `c.lua`, `dir/`, `tests/*.rs`, `redis://`, `<ns>/d.rs`, `~/.x.toml`, `x/metrics`, `Error::kind()`.
```text
`in/code.rs`
```
## Next
`e.lua` and `f/g.toml`
";
        let named = named_paths(text);
        let found: Vec<(usize, &str, PathKind, usize)> =
            named.iter().map(|n| (n.line, n.path.as_str(), n.kind, n.section.len())).collect();
        assert_eq!(
            found,
            [
                (2, "docs/a.md", PathKind::Path, 0),
                (2, "docs/guide/", PathKind::Path, 0),
                (4, "src/b.rs", PathKind::Path, 1),
                (4, "c.lua", PathKind::FileName, 1),
                (4, "dir/", PathKind::Path, 1),
                (9, "f/g.toml", PathKind::Path, 0),
            ]
        );
    }

    #[test]
    fn hex_words_skip_uuids_and_plain_words() {
        assert_eq!(hex_words("at 7ea92ee, on 2026-11-26"), ["7ea92ee"]);
        assert!(hex_words("e309bc25-1fb4-4f94-956f-db262bf16f99 deadbeef 1000000").is_empty());
    }
}
