//! The single-page app's files, embedded in the binary, and the security headers every
//! response carries.
//!
//! `index.html` is never cached without revalidation; it names the scripts, `app.css` and the
//! icon with a version derived from their contents, so those are cached for a year and a new
//! binary still serves its own.

use crate::AppState;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::LazyLock;

const INDEX_HTML: &str = include_str!("../static/index.html");
/// The page's scripts, by name, in the order `index.html` loads them: classic scripts that share
/// their parts through `window.asynqDashboard`, from `core.js` (the helpers, the API) to
/// `app.js` (routing; it starts the page), then the metrics page, which registers with it.
/// Not ES modules: their imports would name files without the version, cached for a year, so
/// a new binary could run beside an old cached file.
const SCRIPTS: [(&str, &str); 8] = [
    ("core.js", include_str!("../static/core.js")),
    ("charts.js", include_str!("../static/charts.js")),
    ("overview.js", include_str!("../static/overview.js")),
    ("queue.js", include_str!("../static/queue.js")),
    ("workflows.js", include_str!("../static/workflows.js")),
    ("system.js", include_str!("../static/system.js")),
    ("app.js", include_str!("../static/app.js")),
    ("metrics.js", include_str!("../static/metrics.js")),
];
const APP_CSS: &str = include_str!("../static/app.css");
const FAVICON_SVG: &str = include_str!("../static/favicon.svg");

/// The Content-Security-Policy of every response: scripts, styles and fetches from this origin
/// only, no inline script or style, no framing, no plugins.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `index.html` with its asset links versioned by content.
static INDEX: LazyLock<String> = LazyLock::new(|| INDEX_HTML.replace("__ASSET_VERSION__", &asset_version()));

/// A short FNV-1a hash of the assets' contents.
fn asset_version() -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let scripts = SCRIPTS.iter().flat_map(|(_, body)| body.bytes());
    for byte in scripts.chain(APP_CSS.bytes()).chain(FAVICON_SVG.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The routes of the page and its assets.
pub(crate) fn routes() -> Router<AppState> {
    let router = Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/assets/app.css", get(|| asset("text/css; charset=utf-8", APP_CSS)))
        .route("/assets/favicon.svg", get(|| asset("image/svg+xml", FAVICON_SVG)));
    SCRIPTS.iter().fold(router, |router, &(name, body)| {
        router.route(&format!("/assets/{name}"), get(move || asset("text/javascript; charset=utf-8", body)))
    })
}

async fn index() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], INDEX.as_str())
        .into_response()
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "public, max-age=31536000, immutable")], body)
        .into_response()
}

/// Adds the security headers to every response, and `Cache-Control: no-store` to those that
/// set no caching of their own (the API's).
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 5] = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (HeaderName::from_static("cross-origin-opener-policy"), "same-origin"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_links_versioned_assets_and_no_inline_code() {
        assert!(!INDEX.contains("__ASSET_VERSION__"));
        assert!(INDEX.contains(&format!("/assets/app.css?v={}", asset_version())));
        assert!(!INDEX.contains("<script>") && !INDEX.contains("style=") && !INDEX.contains("<style"));
    }

    #[test]
    fn the_index_loads_every_script_in_order_and_nothing_else() {
        let loaded: Vec<&str> =
            INDEX.split("<script src=\"").skip(1).map(|tag| tag.split('"').next().unwrap()).collect();
        let expected: Vec<String> =
            SCRIPTS.iter().map(|(name, _)| format!("/assets/{name}?v={}", asset_version())).collect();
        assert_eq!(loaded, expected);
        // Deferred classic scripts run in document order, which is what shares their parts.
        assert_eq!(INDEX.matches(" defer></script>").count(), SCRIPTS.len());
    }
}
