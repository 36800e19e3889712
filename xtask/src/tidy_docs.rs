//! Tidy tests of the user documentation: a README that fits a few screens, and docs that speak
//! of the product, not of how it was made.
//!
//! - `README.md` has at most [`README_MAX_LINES`] lines;
//! - the user docs (the READMEs, `docs/` and its guide, the changelog) name no issue number of
//!   this project's tracker, no commit hash of this repository, and no path outside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::workspace_root;

/// The README's length limit: what a newcomer reads before the first command.
const README_MAX_LINES: usize = 250;

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
    fn hex_words_skip_uuids_and_plain_words() {
        assert_eq!(hex_words("at 7ea92ee, on 2026-11-26"), ["7ea92ee"]);
        assert!(hex_words("e309bc25-1fb4-4f94-956f-db262bf16f99 deadbeef 1000000").is_empty());
    }
}
