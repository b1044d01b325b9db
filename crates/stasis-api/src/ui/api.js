// Calls to the stasis API from the operator page. Every call carries the
// operator's token (kept in this tab's sessionStorage only); a refusal
// becomes an ApiError with the contract's code, reason and message.

const TOKEN_KEY = "stasis.operator.token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? "",
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, error) {
    super(error.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error.code ?? `http_${status}`;
    this.reason = error.reason ?? null;
    this.detail = error;
  }

  // Whether the token itself was refused: signing in again is the fix.
  get isAuth() {
    return this.status === 401 || this.status === 403;
  }
}

// "/api/towns/t/rigs/r/agents/a/events" from its segments, each encoded.
export function apiPath(...segments) {
  return "/api/" + segments.map((s) => encodeURIComponent(String(s))).join("/");
}

export function authHeaders(extra = {}) {
  return { Authorization: `Bearer ${token.get()}`, ...extra };
}

// GET `path` (with `query` parameters) and its JSON.
export async function getJson(path, query = {}) {
  const params = new URLSearchParams(query).toString();
  const url = params ? `${path}?${params}` : path;
  const response = await fetch(url, {
    headers: authHeaders({ Accept: "application/json" }),
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

// The contract's error object of a refused response.
export async function errorOf(response) {
  let error = {};
  try {
    error = (await response.json())?.error ?? {};
  } catch {
    error = { message: `HTTP ${response.status} ${response.statusText}` };
  }
  return new ApiError(response.status, error);
}

// What to tell the operator about a refused token.
export function explainAuth(err) {
  const why = {
    missing: "no token was sent",
    malformed: "this is not a stasis token",
    expired: "the token has expired: mint a new one (stasis token)",
    unknown_key: "the token was signed by a key this server does not hold",
    bad_signature: "the token's signature does not match",
    other_town: "the token does not reach this town",
  }[err.reason];
  return why ? `Token refused: ${why}.` : `Token refused: ${err.message}`;
}

// Whether the token held may write: not read-only, not a bootstrap token
// (which does nothing but its exchange). The page offers restore and fork
// only then; the server decides anyway.
export function mayWrite() {
  const claims = claimsOf(token.get());
  return Boolean(claims) && !claims.read_only && claims.scope !== "bootstrap";
}

// POST `body` as JSON to `path`; the answer's JSON.
export async function postJson(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: authHeaders({ Accept: "application/json", "Content-Type": "application/json" }),
    body: JSON.stringify(body),
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

// The size of what GET `path` would answer, from a HEAD's Content-Length.
export async function headSize(path, query = {}) {
  const params = new URLSearchParams(query).toString();
  const response = await fetch(params ? `${path}?${params}` : path, {
    method: "HEAD",
    headers: authHeaders(),
    cache: "no-store",
  });
  if (!response.ok) throw new ApiError(response.status, {});
  return Number(response.headers.get("Content-Length"));
}

// The length in bytes of GET `path`'s body.
export async function bodySize(path, query = {}) {
  const params = new URLSearchParams(query).toString();
  const response = await fetch(params ? `${path}?${params}` : path, {
    headers: authHeaders(),
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.arrayBuffer()).byteLength;
}

// The claims of a JWT, read without verifying (the server verifies): only
// to show the operator what the token says.
export function claimsOf(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part));
  } catch {
    return null;
  }
}

// The newest `count` events of a log (an agent's or the town's).
export async function newestEvents(path, count) {
  const probe = await getJson(path, { limit: 1 });
  const first = Math.max(probe.first_seq - 1, 0);
  const after = Math.max(probe.last_seq - count, first);
  return getJson(path, { after, limit: count });
}
