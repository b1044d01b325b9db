//! The operator page at `/ui`: its files are served without a token (they
//! hold no data), each with its type and a Content-Security-Policy that
//! keeps the page to its origin; the page names only files that are served.
//! Anything else under `/ui` is 404, and it takes only `GET`/`HEAD`.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::{assert_error, assert_not_allowed, call};

const ASSETS: [(&str, &str); 11] = [
    ("/ui", "text/html"),
    ("/ui/", "text/html"),
    ("/ui/style.css", "text/css"),
    ("/ui/app.js", "text/javascript"),
    ("/ui/api.js", "text/javascript"),
    ("/ui/views.js", "text/javascript"),
    ("/ui/tail.js", "text/javascript"),
    ("/ui/dom.js", "text/javascript"),
    ("/ui/history.js", "text/javascript"),
    ("/ui/lineage.js", "text/javascript"),
    ("/ui/actions.js", "text/javascript"),
];

#[test]
fn every_file_of_the_page_is_served_without_a_token_and_kept_to_its_origin() {
    for (path, kind) in ASSETS {
        let reply = call("GET", path).no_token().send();
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.text());
        let content_type = reply.header("content-type").unwrap_or_default();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        let policy = reply.header("content-security-policy").unwrap_or_default();
        for directive in [
            "default-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(
                policy.contains(directive),
                "{path}: {policy:?} lacks {directive}"
            );
        }
        assert_eq!(
            reply.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert!(!reply.body.is_empty(), "{path} is empty");
    }
}

#[test]
fn head_on_the_page_sends_its_headers_without_a_body() {
    let got = call("GET", "/ui/app.js").no_token().send();
    let head = call("HEAD", "/ui/app.js").no_token().send();
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.header("content-type"), got.header("content-type"));
}

#[test]
fn the_page_names_only_files_that_are_served() {
    let page = call("GET", "/ui").no_token().send().text();
    let mut named = 0;
    for quoted in page.split(['"', '\'']) {
        if quoted.starts_with("/ui/") {
            named += 1;
            let reply = call("GET", quoted).no_token().send();
            assert_eq!(reply.status, 200, "the page names {quoted}");
        }
        assert!(
            !quoted.contains("://"),
            "the page loads {quoted} from elsewhere"
        );
    }
    assert!(
        named >= 2,
        "the page names its stylesheet and script: {page}"
    );
}

#[test]
fn other_paths_under_ui_are_not_found_and_writes_are_not_allowed() {
    for path in ["/ui/nope.js", "/ui/app.js/x", "/ui/index.htm"] {
        let reply = call("GET", path).no_token().send();
        assert_error(&reply, 404, "not_found");
    }
    // Only the page's own folder is public.
    assert_error(&call("GET", "/uix").no_token().send(), 401, "unauthorized");
    assert_error(&call("GET", "/uix").send(), 404, "not_found");
    let reply = call("POST", "/ui").no_token().body("x").send();
    assert_not_allowed(&reply, &["GET", "HEAD"]);
}
