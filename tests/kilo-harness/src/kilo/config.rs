//! kilo's environment: offline, quiet, and configured for the fake model.

use crate::fake_model::MODEL_ID;
use serde::Serialize;

/// Nothing phones home, nothing is downloaded, no daemon stays behind
/// (with these, strace showed kilo 7.7.9 connecting to nothing but the
/// model).
pub(crate) const OFFLINE_ENV: &[(&str, &str)] = &[
    ("KILO_TELEMETRY_LEVEL", "off"),
    ("KILO_DISABLE_AUTOUPDATE", "1"),
    ("KILO_DISABLE_MODELS_FETCH", "1"),
    ("KILO_DISABLE_SHARE", "1"),
    ("KILO_NO_DAEMON", "1"),
    ("KILO_DISABLE_DEFAULT_PLUGINS", "1"),
    ("KILO_DISABLE_LSP_DOWNLOAD", "1"),
    ("KILO_AUTH_CONTENT", "{}"),
];

/// `KILO_CONFIG_CONTENT`: the fake model at `base_url` as the only one.
pub(crate) fn config_content(base_url: &str) -> serde_json::Result<String> {
    let model = format!("local/{MODEL_ID}");
    serde_json::to_string(&Config {
        model: &model,
        small_model: &model,
        enabled_providers: ["local"],
        share: "disabled",
        autoupdate: false,
        provider: Providers {
            local: Provider {
                npm: "@ai-sdk/openai-compatible",
                name: "Fake",
                options: ProviderOptions {
                    base_url,
                    api_key: "dummy",
                },
                models: Models {
                    fake: ModelConfig {
                        name: "Fake",
                        limit: Limit {
                            context: 128_000,
                            output: 4_096,
                        },
                    },
                },
            },
        },
    })
}

#[derive(Serialize)]
struct Config<'a> {
    model: &'a str,
    small_model: &'a str,
    enabled_providers: [&'static str; 1],
    share: &'static str,
    autoupdate: bool,
    provider: Providers<'a>,
}

#[derive(Serialize)]
struct Providers<'a> {
    local: Provider<'a>,
}

#[derive(Serialize)]
struct Provider<'a> {
    npm: &'static str,
    name: &'static str,
    options: ProviderOptions<'a>,
    models: Models,
}

#[derive(Serialize)]
struct ProviderOptions<'a> {
    #[serde(rename = "baseURL")]
    base_url: &'a str,
    #[serde(rename = "apiKey")]
    api_key: &'static str,
}

#[derive(Serialize)]
struct Models {
    fake: ModelConfig,
}

#[derive(Serialize)]
struct ModelConfig {
    name: &'static str,
    limit: Limit,
}

#[derive(Serialize)]
struct Limit {
    context: u32,
    output: u32,
}
