//! The parts of an OpenAPI 3.1 document this API needs, as serde types.

use schemars::Schema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The document.
#[derive(Serialize)]
pub struct Document {
    pub openapi: &'static str,
    pub info: Info,
    pub paths: BTreeMap<&'static str, PathItem>,
    pub components: Components,
    pub security: Vec<BTreeMap<&'static str, [&'static str; 0]>>,
}

/// What the API is.
#[derive(Serialize)]
pub struct Info {
    pub title: &'static str,
    pub version: &'static str,
    pub description: &'static str,
}

/// The shared parts: body schemas and the bearer scheme.
#[derive(Serialize)]
pub struct Components {
    pub schemas: Map<String, Value>,
    #[serde(rename = "securitySchemes")]
    pub security_schemes: BTreeMap<&'static str, SecurityScheme>,
}

/// `Authorization: Bearer <JWT>`.
#[derive(Serialize)]
pub struct SecurityScheme {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub scheme: &'static str,
    #[serde(rename = "bearerFormat")]
    pub bearer_format: &'static str,
}

/// One path template: its parameters and its operations by method
/// (`get`, `put`, ...).
#[derive(Serialize)]
pub struct PathItem {
    pub parameters: Vec<Parameter>,
    #[serde(flatten)]
    pub operations: BTreeMap<String, Operation>,
}

/// A path, query or header parameter.
#[derive(Serialize)]
pub struct Parameter {
    pub name: &'static str,
    #[serde(rename = "in")]
    pub location: &'static str,
    pub required: bool,
    pub description: &'static str,
    pub schema: Schema,
}

/// One method on a path.
#[derive(Serialize)]
pub struct Operation {
    #[serde(rename = "operationId")]
    pub operation_id: String,
    pub summary: &'static str,
    /// Empty for a public operation (no token needed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<Vec<BTreeMap<&'static str, [&'static str; 0]>>>,
    pub parameters: Vec<Parameter>,
    #[serde(rename = "requestBody", skip_serializing_if = "Option::is_none")]
    pub request_body: Option<RequestBody>,
    pub responses: BTreeMap<String, Response>,
}

/// A request body.
#[derive(Serialize)]
pub struct RequestBody {
    pub required: bool,
    pub content: BTreeMap<&'static str, MediaType>,
}

/// One response.
#[derive(Serialize)]
pub struct Response {
    pub description: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<&'static str, ResponseHeader>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub content: BTreeMap<&'static str, MediaType>,
}

/// A response header the answer always carries.
#[derive(Serialize)]
pub struct ResponseHeader {
    pub description: &'static str,
    pub required: bool,
    pub schema: Schema,
}

/// A body of one media type; binary bodies have no schema.
#[derive(Serialize)]
pub struct MediaType {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Schema>,
}
