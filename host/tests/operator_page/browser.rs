//! Chromium under chromedriver (the distribution's packages, which
//! scripts/setup.sh installs), driven over WebDriver with fantoccini.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// How long the page may take to show what a step waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// A chromedriver process on a loopback port, killed on drop.
pub struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    /// Starts `chromedriver` (or `$CHROMEDRIVER`) and waits until it answers.
    pub fn start() -> Self {
        let program = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".to_owned());
        let port = super::free_port();
        let child = Command::new(&program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program} did not start ({e}); scripts/setup.sh installs chromium-driver")
            });
        let driver = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + PATIENCE;
        while ureq::get(format!("{}/status", driver.url)).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }

    /// A new headless Chromium window of 1280×900.
    pub async fn browser(&self) -> Client {
        let mut capabilities = serde_json::Map::new();
        let mut options = json!({"args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,900", "--no-first-run", "--disable-extensions",
        ]});
        if let Ok(binary) = std::env::var("CHROMIUM") {
            options["binary"] = json!(binary);
        }
        capabilities.insert("goog:chromeOptions".to_owned(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `script` (a function body that returns a value) in the page.
pub async fn eval(browser: &Client, script: &str) -> Value {
    browser
        .execute(script, Vec::new())
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// Waits until `script` returns something other than null, false or
/// undefined, and returns it; fails naming `what` after [`PATIENCE`].
pub async fn until(browser: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let value = eval(browser, script).await;
        if !matches!(value, Value::Null | Value::Bool(false)) {
            return value;
        }
        if Instant::now() > deadline {
            let page = eval(browser, "return document.body.innerText").await;
            panic!(
                "the page never showed {what}; it shows:\n{}",
                page.as_str().unwrap_or("")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The visible text of the element `css`.
pub async fn text(browser: &Client, css: &str) -> String {
    let element = browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"));
    element
        .text()
        .await
        .unwrap_or_else(|e| panic!("{css}'s text: {e}"))
}

/// Types `token` and `town` into the sign-in form and submits it.
pub async fn sign_in(browser: &Client, token: &str, town: &str) {
    for (css, value) in [("#token", token), ("#town", town)] {
        let field = browser
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} field: {e}"));
        field.clear().await.expect("clear a field");
        field.send_keys(value).await.expect("type into a field");
    }
    let submit = browser
        .find(Locator::Css("#sign-in-form button[type=submit]"))
        .await
        .expect("the sign-in button");
    submit.click().await.expect("submit");
}
