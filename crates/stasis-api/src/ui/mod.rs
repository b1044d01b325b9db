//! The operator page at `/ui`: static files compiled into both runtimes.
//!
//! The page holds no data: it is public, and every call it makes carries
//! the token the operator typed. Nothing it loads leaves the origin, which
//! its Content-Security-Policy enforces in the browser.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

/// One file of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asset {
    /// `/ui`: the page itself.
    Index,
    /// `/ui/style.css`
    Style,
    /// `/ui/app.js`: sign-in and navigation.
    App,
    /// `/ui/api.js`: authenticated calls and their errors.
    Api,
    /// `/ui/views.js`: the town, agent and log views.
    Views,
    /// `/ui/tail.js`: the live tail over SSE, resumed after a reconnect.
    Tail,
    /// `/ui/dom.js`: building elements (server text into text nodes only).
    Dom,
    /// `/ui/history.js`: an agent's kept versions and pins.
    History,
    /// `/ui/lineage.js`: the agent it was forked from, and its forks.
    Lineage,
    /// `/ui/actions.js`: restore (and its undo) and fork, with a token that may write.
    Actions,
}

impl Asset {
    /// Every file of the page.
    pub const ALL: [Asset; 10] = [
        Asset::Index,
        Asset::Style,
        Asset::App,
        Asset::Api,
        Asset::Views,
        Asset::Tail,
        Asset::Dom,
        Asset::History,
        Asset::Lineage,
        Asset::Actions,
    ];
}

/// Only the page's own files, scripts and calls; no frames, no plugins, no
/// forms posting elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Whether `path` lies under `/ui`: the page needs no token.
pub(crate) fn is_ui_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// 200 with the asset's bytes and the headers that keep it to its origin.
pub(crate) fn serve(asset: Asset) -> Response<Bytes> {
    let (body, content_type) = contents(asset);
    let mut response = Response::new(Bytes::from_static(body.as_bytes()));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    let mut set = |name, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(header::CONTENT_TYPE, content_type);
    set(header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::REFERRER_POLICY, "no-referrer");
    set(header::X_FRAME_OPTIONS, "DENY");
    // Small files that change with each release: revalidate, never stale.
    set(header::CACHE_CONTROL, "no-cache");
    response
}

fn contents(asset: Asset) -> (&'static str, &'static str) {
    const JS: &str = "text/javascript; charset=utf-8";
    match asset {
        Asset::Index => (include_str!("index.html"), "text/html; charset=utf-8"),
        Asset::Style => (include_str!("style.css"), "text/css; charset=utf-8"),
        Asset::App => (include_str!("app.js"), JS),
        Asset::Api => (include_str!("api.js"), JS),
        Asset::Views => (include_str!("views.js"), JS),
        Asset::Tail => (include_str!("tail.js"), JS),
        Asset::Dom => (include_str!("dom.js"), JS),
        Asset::History => (include_str!("history.js"), JS),
        Asset::Lineage => (include_str!("lineage.js"), JS),
        Asset::Actions => (include_str!("actions.js"), JS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_served_with_its_type_and_a_strict_policy() {
        for (asset, kind) in [
            (Asset::Index, "text/html"),
            (Asset::Style, "text/css"),
            (Asset::App, "text/javascript"),
            (Asset::Tail, "text/javascript"),
        ] {
            let response = serve(asset);
            let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok());
            assert!(header(header::CONTENT_TYPE).is_some_and(|t| t.starts_with(kind)));
            assert!(
                header(header::CONTENT_SECURITY_POLICY)
                    .is_some_and(|p| p.starts_with("default-src 'self'"))
            );
            assert!(!response.body().is_empty());
        }
    }

    #[test]
    fn the_page_loads_nothing_from_another_origin() {
        for asset in Asset::ALL {
            let (text, _) = contents(asset);
            for outside in ["http://", "https://", "//fonts", "cdn"] {
                assert!(!text.contains(outside), "{asset:?} mentions {outside:?}");
            }
        }
    }
}
