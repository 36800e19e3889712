//! Searching every task of one state of a queue, in bounded steps.
//!
//! A search reads the state with the same paged listing the task tables use ([`PAGE`] tasks per
//! read: on Redis one short script per read, each well under 10 ms), looks through at most
//! [`STEP_TASKS`] tasks per request, and answers with the matches of that step and a cursor
//! where the next step starts; the page calls again until the cursor is `null`. A task that
//! moves while a search runs (a page's positions shift under it) may be missed or seen twice:
//! the page keeps each task once.
//!
//! The query syntax ([`Query`]): terms separated by spaces, every one of which must match.
//! - `text` matches a task whose ID, type, payload or result contains it, case-insensitively
//!   (payload and result read as UTF-8 text); `"two words"` is one term, spaces included.
//! - `field=value` matches a task whose payload is a JSON object with `field` equal to `value`:
//!   a string case-insensitively, a number numerically (`42` matches `42` and `42.0`), `true`,
//!   `false` and `null` as themselves, an array when an element does. `a.b=value` looks into
//!   nested objects (a number steps into an array: `items.0.sku=x`); `field="two words"` quotes
//!   a value with spaces. A field name is letters, digits, `_`, `-`, `.` and `$`.

use super::tasks::{MAX_SEARCH_LEN, TaskSummary, count};
use super::{path, query, queue_name, state as parse_state};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use asynq_core::broker::Page;
use asynq_core::{TaskInfo, TaskState};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::Uri;
use futures::{StreamExt as _, stream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tasks per read of the listing.
pub(crate) const PAGE: usize = 100;
/// The most tasks one step looks through.
pub(crate) const STEP_TASKS: usize = 5_000;
/// How many reads of a step are in flight at once.
const READS_AT_ONCE: usize = 4;
/// A step ends early once it has found this many matches (the page that passes it is kept whole).
pub(crate) const STEP_MATCHES: usize = 1_000;

/// One term of a [`Query`].
#[derive(Debug, Clone, PartialEq)]
enum Term {
    /// Lowercased text that an ID, type, payload or result contains.
    Text(String),
    /// A JSON payload field, by its path, and the value it must have.
    Field { path: Vec<String>, value: String },
}

/// A parsed search (see the module's documentation for the syntax).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    terms: Vec<Term>,
}

/// Whether `name` can be a field path: letters, digits, `_`, `-`, `.`, `$`, not starting with `.`.
fn field_path(name: &str) -> Option<Vec<String>> {
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..");
    valid.then(|| name.split('.').map(str::to_owned).collect())
}

impl Query {
    /// Parses `text`; a search of no term matches every task.
    pub(crate) fn parse(text: &str) -> ApiResult<Self> {
        if text.len() > MAX_SEARCH_LEN {
            return Err(ApiError::bad_request(
                "invalid_search",
                format!("search is longer than {MAX_SEARCH_LEN} bytes"),
            ));
        }
        let unclosed = || ApiError::bad_request("invalid_search", "a quote in the search is not closed");
        let mut terms = Vec::new();
        let mut chars = text.chars().peekable();
        loop {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            let Some(&first) = chars.peek() else { break };
            if first == '"' {
                chars.next();
                let mut quoted = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '"' {
                        closed = true;
                        break;
                    }
                    quoted.push(c);
                }
                if !closed {
                    return Err(unclosed());
                }
                if !quoted.trim().is_empty() {
                    terms.push(Term::Text(quoted.to_lowercase()));
                }
                continue;
            }
            let mut word = String::new();
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
                if c == '=' && chars.peek() == Some(&'"') {
                    chars.next();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '"' {
                            closed = true;
                            break;
                        }
                        word.push(c);
                    }
                    if !closed {
                        return Err(unclosed());
                    }
                    break;
                }
            }
            let field = word.split_once('=').and_then(|(name, value)| Some((field_path(name)?, value)));
            terms.push(match field {
                Some((path, value)) => Term::Field { path, value: value.to_owned() },
                None => Term::Text(word.to_lowercase()),
            });
        }
        Ok(Self { terms })
    }

    /// Whether it has no term (and so matches every task).
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `task` matches every term.
    pub(crate) fn matches(&self, task: &TaskInfo) -> bool {
        let mut texts: Option<[String; 4]> = None;
        let mut payload: Option<Option<Value>> = None;
        self.terms.iter().all(|term| match term {
            Term::Text(needle) => {
                let texts = texts.get_or_insert_with(|| {
                    [
                        task.id.to_lowercase(),
                        task.type_name.to_lowercase(),
                        String::from_utf8_lossy(&task.payload).to_lowercase(),
                        task.result.as_deref().map(|r| String::from_utf8_lossy(r).to_lowercase()).unwrap_or_default(),
                    ]
                });
                texts.iter().any(|text| text.contains(needle.as_str()))
            }
            Term::Field { path, value } => {
                let payload = payload.get_or_insert_with(|| {
                    let start = task.payload.iter().find(|b| !b.is_ascii_whitespace());
                    if start == Some(&b'{') { serde_json::from_slice(&task.payload).ok() } else { None }
                });
                payload.as_ref().and_then(|payload| lookup(payload, path)).is_some_and(|found| equals(found, value))
            }
        })
    }
}

/// The value at `path` inside `value`: object fields by name, array elements by index.
fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, step| match value {
        Value::Object(map) => map.get(step),
        Value::Array(items) => items.get(step.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Whether JSON `found` equals the searched `wanted`.
fn equals(found: &Value, wanted: &str) -> bool {
    match found {
        Value::String(text) => text.to_lowercase() == wanted.to_lowercase(),
        Value::Number(number) => match (number.as_f64(), wanted.parse::<f64>()) {
            (Some(found), Ok(wanted)) => found == wanted,
            _ => number.to_string() == wanted,
        },
        Value::Bool(flag) => wanted == if *flag { "true" } else { "false" },
        Value::Null => wanted == "null",
        Value::Array(items) => items.iter().any(|item| equals(item, wanted)),
        Value::Object(_) => false,
    }
}

/// Where a search's next step starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    /// The listing's page of [`PAGE`] tasks, from 0.
    Page(usize),
    /// For aggregating tasks: a group (the first of those sorted from it on) and its page.
    Group { page: usize, group: String },
}

impl Cursor {
    fn parse(text: &str) -> ApiResult<Self> {
        let bad = || ApiError::bad_request("invalid_cursor", format!("{text:?} is no search cursor"));
        if let Some(page) = text.strip_prefix("p:") {
            return page.parse().map(Cursor::Page).map_err(|_| bad());
        }
        let rest = text.strip_prefix("g:").ok_or_else(bad)?;
        let (page, group) = rest.split_once(':').ok_or_else(bad)?;
        Ok(Cursor::Group { page: page.parse().map_err(|_| bad())?, group: group.to_owned() })
    }

    fn text(&self) -> String {
        match self {
            Cursor::Page(page) => format!("p:{page}"),
            Cursor::Group { page, group } => format!("g:{page}:{group}"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchParams {
    /// The search; none (or blank) matches every task.
    q: Option<String>,
    /// Where to go on; none for the first step.
    cursor: Option<String>,
}

/// One step of a search.
#[derive(Debug, Serialize)]
pub(crate) struct SearchStep {
    /// The tasks of this step that match, in listing order.
    matches: Vec<TaskSummary>,
    /// How many tasks this step looked at.
    scanned: usize,
    /// Where the next step starts; `null` once the whole state was looked through.
    cursor: Option<String>,
    /// How many tasks the state holds now.
    total: usize,
}

/// What one step found.
#[derive(Default)]
struct Found {
    matches: Vec<TaskInfo>,
    scanned: usize,
}

impl Found {
    /// Keeps the matches of `page`; true when the step must end (it looked at or found enough).
    fn take(&mut self, query: &Query, page: Vec<TaskInfo>) -> bool {
        self.scanned += page.len();
        self.matches.extend(page.into_iter().filter(|task| query.matches(task)));
        self.scanned >= STEP_TASKS || self.matches.len() >= STEP_MATCHES
    }
}

/// `GET /api/queues/{queue}/states/{state}/search?q=&cursor=`: one step of a search.
pub(crate) async fn step(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
    uri: Uri,
) -> ApiResult<Json<SearchStep>> {
    let (queue, state) = path(params)?;
    queue_name(&queue)?;
    let state = parse_state(&state)?;
    let SearchParams { q, cursor } = query(&uri)?;
    let search = Query::parse(q.as_deref().unwrap_or_default().trim())?;
    let start = cursor.as_deref().map(Cursor::parse).transpose()?;
    let info = app.inspector.queue_info(&queue).await?;
    let (found, next) = run_step(&app, &queue, state, &search, start).await?;
    let mut matches: Vec<TaskSummary> = found.matches.iter().map(Into::into).collect();
    if state == TaskState::Active {
        super::tasks::add_workers(&app, &mut matches).await?;
    }
    Ok(Json(SearchStep { matches, scanned: found.scanned, cursor: next.map(|c| c.text()), total: count(&info, state) }))
}

/// Every task of `state` of `queue` that matches `search`, step by step as [`step`] goes (so
/// each read of the backend stays short), and how many there are; keeps only the matches from
/// the `skip`th on, at most `keep` of them. A task that moves while it runs may be missed or
/// counted twice, as a paged search's may.
pub(crate) async fn every_match(
    app: &AppState,
    queue: &str,
    state: TaskState,
    search: &Query,
    skip: usize,
    keep: usize,
) -> ApiResult<(Vec<TaskInfo>, usize)> {
    let (mut kept, mut total) = (Vec::new(), 0);
    let mut cursor = None;
    loop {
        let (found, next) = run_step(app, queue, state, search, cursor).await?;
        for task in found.matches {
            if total >= skip && kept.len() < keep {
                kept.push(task);
            }
            total += 1;
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok((kept, total)),
        }
    }
}

/// One step of a search of `state` of `queue` from `start` (the state's start when `None`):
/// what it found, and where the next step starts (`None` once the state was looked through).
async fn run_step(
    app: &AppState,
    queue: &str,
    state: TaskState,
    search: &Query,
    start: Option<Cursor>,
) -> ApiResult<(Found, Option<Cursor>)> {
    let start = match start {
        Some(cursor) => cursor,
        None if state == TaskState::Aggregating => Cursor::Group { page: 0, group: String::new() },
        None => Cursor::Page(0),
    };
    let mut found = Found::default();
    let next = match start {
        Cursor::Page(first) => {
            // A few reads in flight at once: Redis runs each alone (and each is short) while
            // the pages before are looked through.
            let inspector = &app.inspector;
            let mut reads =
                stream::iter(first..first + STEP_TASKS.div_ceil(PAGE))
                    .map(|number| async move {
                        (number, inspector.list_tasks(queue, state, Page { size: PAGE, number }).await)
                    })
                    .buffered(READS_AT_ONCE);
            let mut next = None;
            while let Some((number, page)) = reads.next().await {
                let page = page?;
                let last = page.len() < PAGE;
                if found.take(search, page) && !last {
                    next = Some(Cursor::Page(number + 1));
                    break;
                }
                if last {
                    break;
                }
            }
            next
        }
        Cursor::Group { .. } if state != TaskState::Aggregating => {
            return Err(ApiError::bad_request("invalid_cursor", "a group cursor goes with aggregating tasks only"));
        }
        Cursor::Group { page: first, group: from } => {
            let mut groups: Vec<String> =
                app.inspector.group_names(queue).await?.into_iter().map(|g| g.as_str().to_owned()).collect();
            groups.sort();
            let mut next = None;
            'groups: for group in groups.into_iter().filter(|group| *group >= from) {
                let first = if group == from { first } else { 0 };
                for number in first.. {
                    let page = app.inspector.list_group_tasks(queue, &group, Page { size: PAGE, number }).await?;
                    let last = page.len() < PAGE;
                    let done = found.take(search, page);
                    if done {
                        next = Some(if last {
                            // Go on with the next group: the first one sorted after this.
                            Cursor::Group { page: 0, group: format!("{group}\u{0}") }
                        } else {
                            Cursor::Group { page: number + 1, group }
                        });
                        break 'groups;
                    }
                    if last {
                        break;
                    }
                }
            }
            next
        }
    };
    Ok((found, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use asynq_core::{QueueName, TaskId, TaskState};

    fn task(id: &str, type_name: &str, payload: &str) -> TaskInfo {
        let msg = asynq_core::StoredTask {
            payload: payload.to_owned().into(),
            ..asynq_core::StoredTask::new(TaskId::new(id).expect("an ID"), QueueName::from_static("q"), type_name)
        };
        TaskInfo::new(&msg, TaskState::Pending, None, None)
    }

    fn finds(query: &str, task: &TaskInfo) -> bool {
        Query::parse(query).expect("a valid search").matches(task)
    }

    #[test]
    fn text_matches_id_type_payload_and_result_case_insensitively() {
        let t = task("abc-123", "metrics:flush", r#"{"user_id":42,"name":"Ada Lovelace"}"#);
        for query in ["ABC", "Metrics:FLUSH", "lovelace", "user_id", "\"ada lovelace\"", "flush ada"] {
            assert!(finds(query, &t), "{query}");
        }
        for query in ["xyz", "flush xyz", "\"lovelace ada\""] {
            assert!(!finds(query, &t), "{query}");
        }
        let mut done = t.clone();
        done.result = Some(b"rows=17".to_vec().into());
        assert!(finds("\"rows=17\"", &done));
    }

    #[test]
    fn fields_match_json_values() {
        let t = task(
            "a",
            "t",
            r#"{"user_id":42,"name":"Ada Lovelace","ok":true,"tags":["x","urgent"],"o":{"n":[{"k":1.5}]}}"#,
        );
        for query in ["user_id=42", "user_id=42.0", "name=\"ada lovelace\"", "ok=true", "tags=urgent", "o.n.0.k=1.5"] {
            assert!(finds(query, &t), "{query}");
        }
        for query in ["user_id=4", "user_id=420", "name=ada", "ok=false", "missing=1", "o.n.1.k=1.5", "o=1"] {
            assert!(!finds(query, &t), "{query}");
        }
        // A field term needs a JSON object.
        assert!(!finds("user_id=42", &task("a", "t", "user_id=42")));
        assert!(finds("\"user_id=42\"", &task("a", "t", "user_id=42")));
    }

    #[test]
    fn bad_searches_are_refused() {
        assert!(Query::parse("   ").is_ok_and(|q| q.is_empty() && q.matches(&task("a", "t", ""))));
        for bad in ["\"open", "name=\"open", &"x".repeat(MAX_SEARCH_LEN + 1)] {
            assert_eq!(Query::parse(bad).map_err(|e| e.code()).err(), Some("invalid_search"), "{bad}");
        }
        assert_eq!(Cursor::parse("p:x").err().map(|e| e.code()), Some("invalid_cursor"));
        for cursor in [Cursor::Page(7), Cursor::Group { page: 2, group: "a:b".to_owned() }] {
            assert_eq!(Cursor::parse(&cursor.text()).ok(), Some(cursor));
        }
    }
}
