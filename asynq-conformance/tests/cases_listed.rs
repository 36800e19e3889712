//! Every case the suite defines is one that `broker_conformance!` generates, in exactly one part,
//! so that a case cannot be written and then forgotten, and in the part whose bound it names, so
//! that a backend of that part alone runs it: this reads the crate's own sources.

use std::collections::BTreeMap;
use std::path::Path;

/// Every source file of `src/` with its text, as (module, text): a file of a module's folder
/// (`src/manage/bulk.rs`) counts as its module's (`manage`), which re-exports its cases.
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&src).expect("read src/") {
        let path = entry.expect("a directory entry").path();
        let module = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.extension().is_some_and(|e| e == "rs") {
            sources.push((module, std::fs::read_to_string(&path).expect("read a source file")));
        } else if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read a module's folder") {
                let path = entry.expect("a directory entry").path();
                if path.extension().is_some_and(|e| e == "rs") {
                    sources.push((module.clone(), std::fs::read_to_string(&path).expect("read a source file")));
                }
            }
        }
    }
    sources
}

/// Every `pub async fn case_...` of `src/`, as (module, case).
fn defined() -> Vec<(String, String)> {
    let mut cases = Vec::new();
    for (module, text) in sources() {
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("pub async fn case_") {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                cases.push((module.clone(), format!("case_{name}")));
            }
        }
    }
    cases.sort();
    assert!(cases.len() > 100, "found only {} cases: is src/ where the cases are?", cases.len());
    cases
}

/// The cases `broker_conformance!` lists, as (module, case) with the part that lists each.
fn listed_cases() -> Vec<((String, String), String)> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).expect("read lib.rs");
    let mut part = None;
    let mut cases = Vec::new();
    for line in lib.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("(@part ") {
            part = Some(rest.split(',').next().unwrap().to_owned());
            continue;
        }
        let Some((module, case)) = line.strip_suffix(',').and_then(|l| l.split_once("::")) else { continue };
        if case.starts_with("case_") && module.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            let part = part.clone().unwrap_or_else(|| panic!("{module}::{case} is listed outside a part"));
            cases.push(((module.to_owned(), case.to_owned()), part));
        }
    }
    cases
}

#[test]
fn every_case_is_listed_in_exactly_one_part() {
    let defined = defined();
    let mut listed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (case, part) in listed_cases() {
        listed.entry(case).or_default().push(part);
    }
    for case in &defined {
        match listed.get(case).map(Vec::as_slice) {
            Some([_]) => {}
            None => {
                panic!("{}::{} is never run: list it in a part of broker_conformance! (src/lib.rs)", case.0, case.1)
            }
            Some(parts) => panic!("{}::{} is listed more than once: in {parts:?}", case.0, case.1),
        }
    }
    for case in listed.keys() {
        assert!(
            defined.contains(case),
            "broker_conformance! lists {}::{}, which neither src/{}.rs nor src/{}/ defines",
            case.0,
            case.1,
            case.0,
            case.0
        );
    }
    let mut names: Vec<&String> = defined.iter().map(|(_, case)| case).collect();
    names.dedup();
    assert_eq!(names.len(), defined.len(), "two modules define a case of the same name");
}

#[test]
fn every_gated_case_exists() {
    let defined = defined();
    for (case, capability) in asynq_conformance::GATED {
        assert!(
            defined.iter().any(|(_, c)| c == case),
            "GATED lists {case} (needing {capability:?}), which is not a case"
        );
    }
}

/// The bound each part's cases put on the broker under test, as their signatures write it.
const PART_BOUNDS: &[(&str, &str)] = &[
    ("worker", "WorkerBroker"),
    ("producer", "asynq_core::broker::Enqueue"),
    ("manage", "OperatorBroker"),
    ("full", "asynq_core::Broker"),
];

/// Every case's bound on the broker under test (`BrokerFactory<Broker: ...>`), by case name.
fn bounds() -> BTreeMap<String, String> {
    let mut bounds = BTreeMap::new();
    for (_, text) in sources() {
        for (at, _) in text.match_indices("pub async fn case_") {
            let signature = &text[at..at + text[at..].find("factory: &F").expect("a case takes `factory: &F`")];
            let name: String =
                signature["pub async fn ".len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let bound = signature
                .split_once("BrokerFactory<Broker: ")
                .and_then(|(_, rest)| rest.split_once('>'))
                .map(|(bound, _)| bound.to_owned())
                .unwrap_or_else(|| panic!("{name} does not bound its broker as `F: BrokerFactory<Broker: ...>`"));
            bounds.insert(name, bound);
        }
    }
    bounds
}

#[test]
fn every_case_is_in_the_part_its_bound_names() {
    let bounds = bounds();
    assert_eq!(bounds.len(), defined().len(), "every case has a bound");
    for ((_, case), part) in listed_cases() {
        let want = PART_BOUNDS
            .iter()
            .find(|(p, _)| *p == part)
            .unwrap_or_else(|| panic!("part {part} has no bound in PART_BOUNDS"))
            .1;
        assert_eq!(bounds[&case], want, "{case} is listed in the {part} part, whose cases bound the broker by {want}");
    }
}
