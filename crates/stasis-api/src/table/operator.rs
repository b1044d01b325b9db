//! The operator's routes: the host's metrics and the operator page's files.

use super::{Answer, Body, Header, Operation, Route};
use crate::{endpoint::Endpoint, ui::Asset};
use http::Method;

/// The headers every file of the page carries (they keep it to its origin).
const PAGE_HEADERS: &[Header] = &[
    Header {
        name: "Content-Security-Policy",
        description: "`default-src 'self'` and the like: the page loads and calls nothing outside its origin.",
    },
    Header {
        name: "X-Content-Type-Options",
        description: "`nosniff`.",
    },
    Header {
        name: "Cache-Control",
        description: "`no-cache`: revalidated, never stale.",
    },
];

/// One file of the operator page: public, `GET` only, 200 with its bytes.
macro_rules! page_file {
    ($template:literal, $asset:expr, $media:expr) => {
        Route {
            template: $template,
            public: true,
            endpoint: |_| Endpoint::Ui($asset),
            operations: &[Operation {
                method: Method::GET,
                summary: "A file of the operator page (it holds no data; its calls carry a token).",
                request: Body::Empty,
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The file.",
                    body: Body::Bytes($media),
                    headers: PAGE_HEADERS,
                }],
                errors: &[],
            }],
        }
    };
}

const HTML: &str = "text/html";
const JS: &str = "text/javascript";

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/metrics",
        public: false,
        endpoint: |_| Endpoint::Metrics,
        operations: &[Operation {
            method: Method::GET,
            summary: "The host's metrics in the OpenMetrics text format (an admin token, read-only accepted).",
            request: Body::Empty,
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "Counters, gauges and histograms (README, \"Operating\").",
                body: Body::Bytes("application/openmetrics-text"),
                headers: &[],
            }],
            errors: &[(404, &["metrics_not_served"])],
        }],
    },
    page_file!("/ui", Asset::Index, HTML),
    page_file!("/ui/style.css", Asset::Style, "text/css"),
    page_file!("/ui/app.js", Asset::App, JS),
    page_file!("/ui/api.js", Asset::Api, JS),
    page_file!("/ui/views.js", Asset::Views, JS),
    page_file!("/ui/tail.js", Asset::Tail, JS),
    page_file!("/ui/dom.js", Asset::Dom, JS),
    page_file!("/ui/history.js", Asset::History, JS),
    page_file!("/ui/lineage.js", Asset::Lineage, JS),
    page_file!("/ui/actions.js", Asset::Actions, JS),
];
