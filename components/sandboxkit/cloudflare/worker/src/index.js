// sandboxkit Cloudflare Worker: one hardened container sandbox per (tenant, session).
//
// Request path: client -> Worker fetch (signed token, scope, validation) -> Durable Object `Sandbox`
// (named by an HMAC, never by the client's string) -> the DO's own container via `ctx.container`.
// Container egress path: container -> Cloudflare's outbound interception (listed hosts only) -> `EgressGateway`
// (a WorkerEntrypoint of this script) -> `decideEgress` -> `fetch` only when allowed.
//
// Bindings (names are the deployment contract; see README.md):
//   SANDBOX               durable object namespace, class `Sandbox` (SQLite-backed)
//   JWT_SIGNING_KEY       secret_text, HS256 key of the short-lived tokens clients present
//   JWT_ISSUER            plain_text, the `iss` every token must carry
//   JWT_AUDIENCE          plain_text, the `aud` every token must carry (this deployment)
//   JWT_MAX_LIFETIME_SECONDS  plain_text integer, longest `exp - iat` a token may span
//   SANDBOX_ID_KEY        secret_text, HMAC key that turns (tenant, session) into a DO name
//   EGRESS_POLICY         plain_text JSON {"mode": "deny"|"allowlist"|"open", "allow": [...]}
//   IDLE_TIMEOUT_SECONDS  plain_text integer, container stops after this long without a command
//   MAX_LIFETIME_SECONDS  plain_text integer, hard cap from the sandbox's first request
//   EXEC_TIMEOUT_SECONDS  plain_text integer, per-command wall clock limit
//
// Single module on purpose: wrangler uploads this file alone and unbundled (`no_bundle`) as
// `index.js` (sandboxkit.cloudflare.wrangler_script), so the gate can judge it by its digest; it
// must not import sibling files or npm packages. That is why token verification is the few lines under
// "Client credentials" (one pinned algorithm; the MAC compare is crypto.subtle.verify's) rather
// than jose, whose Web API build is 45 modules; test/auth.test.mjs checks it against jose.

import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";

// The binding names above, as this file reads them. A copy of sandboxkit.boundary's
// *_BINDING names (tests/cloudflare/test_worker_contract.py fails when they differ).
export const BINDINGS = Object.freeze({
  sandbox: "SANDBOX",
  tokenKey: "JWT_SIGNING_KEY",
  tokenIssuer: "JWT_ISSUER",
  tokenAudience: "JWT_AUDIENCE",
  tokenMaxLifetime: "JWT_MAX_LIFETIME_SECONDS",
  sandboxIdKey: "SANDBOX_ID_KEY",
  egressPolicy: "EGRESS_POLICY",
  idleTimeout: "IDLE_TIMEOUT_SECONDS",
  maxLifetime: "MAX_LIFETIME_SECONDS",
  execTimeout: "EXEC_TIMEOUT_SECONDS",
});

// Tenant and session ids: a conservative charset keeps them safe in paths and logs, and it
// excludes NUL, which separates them in the HMAC message (no two pairs can share a message).
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

// Secrets shorter than this are almost certainly placeholders; refuse to run with them.
const MIN_SECRET_LENGTH = 32;

// Upper bound for the three *_SECONDS vars: a value past one week is most likely milliseconds
// passed where seconds were meant, so it is rejected rather than silently honoured.
const MAX_CONFIG_SECONDS = 7 * 24 * 3600;

// Exec request limits: the command travels in a JSON body; bigger payloads belong in files.
const MAX_EXEC_BODY_BYTES = 64 * 1024;
const MAX_ARGV_ITEMS = 256;

// Contract with the sandbox image: an exec agent listens on this port inside the container and
// answers GET /healthz and POST /exec (see README.md).
const CONTAINER_AGENT_PORT = 8080;
// Cold start budget for the container and its agent, bounded again by the lifetime deadline.
const CONTAINER_START_TIMEOUT_MS = 30_000;
const AGENT_POLL_INTERVAL_MS = 250;
// The agent enforces EXEC_TIMEOUT itself; the DO waits this much longer before it gives up on
// the agent and destroys the container so a runaway process cannot outlive its deadline.
const EXEC_GRACE_MS = 2_000;

const INTERNAL_ORIGIN = "https://sandbox.internal";
const HEADER_SANDBOX_ID = "x-sandboxkit-sandbox-id";
const HEADER_TENANT_HASH = "x-sandboxkit-tenant-hash";
// "1" when the caller's token may change the session (exec or delete): only such a token starts
// a session's lifetime. A status-only token reads a session it never starts, so handing one to a
// dashboard cannot run down the clock of every session in its scope.
const HEADER_MAY_START = "x-sandboxkit-may-start";

const EGRESS_MODES = new Set(["deny", "allowlist", "open"]);

// ---------------------------------------------------------------------------------------------
// Small helpers

function json(status, body, extraHeaders = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      ...extraHeaders,
    },
  });
}

function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const encoder = new TextEncoder();

function toHex(buffer) {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// An HMAC-SHA-256 key from a secret's text, usable only for `usage` ("sign" or "verify").
function hmacKey(keyString, usage) {
  return crypto.subtle.importKey("raw", encoder.encode(keyString), { name: "HMAC", hash: "SHA-256" }, false, [
    usage,
  ]);
}

async function hmacSha256(keyString, message) {
  return crypto.subtle.sign("HMAC", await hmacKey(keyString, "sign"), encoder.encode(message));
}

async function hmacHex(keyString, message) {
  return toHex(await hmacSha256(keyString, message));
}

/**
 * Derives the Durable Object name for a (tenant, session) pair: HMAC-SHA256 keyed with
 * SANDBOX_ID_KEY over `tenant + "\u0000" + session`, as 64 lowercase hex characters. Without the
 * key nobody can compute or guess another tenant's name.
 */
export async function deriveSandboxName(idKey, tenant, session) {
  return hmacHex(idKey, `${tenant}\u0000${session}`);
}

// Audit-only identifiers. The leading \u0001 keeps these messages apart from sandbox names,
// whose messages always start with an id character.
async function tenantHash(idKey, tenant) {
  return hmacHex(idKey, `\u0001tenant\u0000${tenant}`);
}

async function commandDigest(idKey, argv) {
  // Keyed, so a short secret inside a command cannot be recovered by hashing guesses.
  return hmacHex(idKey, `\u0001command\u0000${JSON.stringify(argv)}`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function iso(ms) {
  return new Date(ms).toISOString();
}

// ---------------------------------------------------------------------------------------------
// Configuration (fail closed: a missing or malformed value refuses service, never opens it)

function readSecret(env, name) {
  const value = env[name];
  if (typeof value !== "string" || value.length < MIN_SECRET_LENGTH) {
    return { ok: false, error: `${name} secret is missing or shorter than ${MIN_SECRET_LENGTH} characters` };
  }
  return { ok: true, value };
}

function readSeconds(env, name, max = MAX_CONFIG_SECONDS) {
  const raw = env[name];
  const text = typeof raw === "number" ? String(raw) : raw;
  if (typeof text !== "string" || !/^[1-9][0-9]{0,9}$/.test(text)) {
    return { ok: false, error: `${name} must be a positive whole number of seconds` };
  }
  const value = Number(text);
  if (value > max) {
    return { ok: false, error: `${name} must be at most ${max} seconds` };
  }
  return { ok: true, value };
}

/** Settings every sandbox route needs; EGRESS_POLICY is checked separately (exec only). */
function loadLimits(env) {
  const idKey = readSecret(env, BINDINGS.sandboxIdKey);
  if (!idKey.ok) return idKey;
  const out = { ok: true, idKey: idKey.value };
  for (const [name, field] of [
    [BINDINGS.idleTimeout, "idleSeconds"],
    [BINDINGS.maxLifetime, "maxLifetimeSeconds"],
    [BINDINGS.execTimeout, "execTimeoutSeconds"],
  ]) {
    const parsed = readSeconds(env, name);
    if (!parsed.ok) return parsed;
    out[field] = parsed.value;
  }
  return out;
}

function misconfigured(message) {
  return json(500, { error: "misconfigured", message });
}

// ---------------------------------------------------------------------------------------------
// Egress policy
//
// The kit's egress contract (sandboxkit's egress model; README "EGRESS_POLICY"): an exact name
// matches only itself; `*.x` matches every name below x at any depth and never x; a port belongs
// to its entry only; `deny` admits nothing (this target needs no control-plane host: the Durable
// Object reaches its container through `getTcpPort`, which is ingress); `open` admits public
// destinations only.

// Copies of sandboxkit.boundary (NON_PUBLIC_IPV4, NON_PUBLIC_IPV6, INTERNAL_SUFFIXES) and of the
// globally reachable IANA rows inside NON_PUBLIC_IPV4 (sandboxkit.addresses): this file cannot
// import Python, so tests/cloudflare/test_worker_contract.py fails when the copies differ.
// NON_PUBLIC_* are the blocks `open` takes out whole: every block IANA's special-purpose
// registries do not call globally reachable, multicast, IPv6 outside 2000::/3, and every IPv6
// prefix carrying an IPv4 address (NAT64 and IPv4-mapped inside ::/8, 6to4, Teredo).
export const NON_PUBLIC_IPV4 = Object.freeze([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
]);
export const NON_PUBLIC_IPV6 = Object.freeze([
  "::/8",
  "100::/8",
  "200::/7",
  "400::/6",
  "800::/5",
  "1000::/4",
  "2001::/23",
  "2001:db8::/32",
  "2002::/16",
  "3fff::/20",
  "4000::/3",
  "6000::/3",
  "8000::/3",
  "a000::/3",
  "c000::/3",
  "e000::/4",
  "f000::/5",
  "f800::/6",
  "fc00::/7",
  "fe00::/9",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
]);
// Globally reachable rows inside NON_PUBLIC_IPV4 (IETF anycast): still excluded as part of their
// block, but an IPv4 address an ISATAP identifier carries is judged by its own row.
export const PUBLIC_INSIDE_NON_PUBLIC_IPV4 = Object.freeze(["192.0.0.9/32", "192.0.0.10/32"]);
export const INTERNAL_SUFFIXES = Object.freeze([
  ".internal",
  ".local",
  ".localhost",
  ".localdomain",
  ".svc",
  ".goog",
  ".home.arpa",
  ".default",
]);

// Cloudflare Containers route only ports 80 (HTTP) and 443 (HTTPS) through outbound
// interception; with enableInternet false every other port is dropped ("Handle outbound
// traffic" > "Non-HTTP traffic", developers.cloudflare.com/containers/configuration/outbound-traffic/).
const INTERCEPTED = Object.freeze({ 80: "interceptOutboundHttp", 443: "interceptOutboundHttps" });

const DNS_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

function isDnsName(host) {
  if (host.length === 0 || host.length > 253) return false;
  return host.split(".").every((label) => DNS_LABEL.test(label));
}

function looksLikeIpLiteral(host) {
  // WHATWG URL parsing already turns decimal, hex, octal and short IPv4 forms into dotted
  // decimal and keeps IPv6 bracketed; an all-numeric last label is IPv4-like in any case.
  if (host.startsWith("[") || host.includes(":")) return true;
  const last = host.split(".").filter((label) => label !== "").pop() ?? "";
  return /^(0x[0-9a-f]*|[0-9]+)$/i.test(last);
}

/** Dotted-decimal IPv4 (as WHATWG URL serialises it) as a BigInt, or null. */
function ipv4Value(text) {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** IPv6 text of hex groups with at most one "::" (WHATWG URL's serialisation) as a BigInt, or null. */
function ipv6Value(text) {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = halves.map((half) => (half === "" ? [] : half.split(":")));
  const missing = 8 - groups.reduce((n, g) => n + g.length, 0);
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = halves.length === 1 ? groups[0] : [...groups[0], ...Array(missing).fill("0"), ...groups[1]];
  let value = 0n;
  for (const group of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return null;
    value = (value << 16n) | BigInt(`0x${group}`);
  }
  return value;
}

function parseCidr(text) {
  const [address, bits] = text.split("/");
  const family = address.includes(":") ? 6 : 4;
  const width = family === 6 ? 128n : 32n;
  const value = family === 6 ? ipv6Value(address) : ipv4Value(address);
  return { text, family, shift: width - BigInt(bits), value };
}

const NON_PUBLIC_RANGES = [...NON_PUBLIC_IPV4, ...NON_PUBLIC_IPV6].map(parseCidr);
const PUBLIC_EXCEPTIONS_IPV4 = PUBLIC_INSIDE_NON_PUBLIC_IPV4.map(parseCidr);

function rangeOf(ranges, family, value) {
  return ranges.find((r) => r.family === family && value >> r.shift === r.value >> r.shift)?.text ?? null;
}

/**
 * Why an IP literal host (URL form: dotted IPv4 or bracketed IPv6) is not a public destination,
 * or null when it is one; the contract's `open` test (sandboxkit.addresses.open_admits):
 * - inside a NON_PUBLIC block: refused, whole blocks, so every IPv6 prefix that carries an IPv4
 *   address is refused whatever it carries (`[64:ff9b::a9fe:a9fe]` is 169.254.169.254 through
 *   NAT64, inside ::/8);
 * - an ISATAP interface identifier (RFC 5214 section 6.1: 0000:5efe or 0200:5efe in bits 64-95)
 *   follows any prefix, so it is judged by the IPv4 address in its last 32 bits: refused when
 *   that address is inside NON_PUBLIC_IPV4 and not one of its globally reachable rows.
 * A host that does not parse is refused (fail closed).
 */
function nonPublicReason(host) {
  const family = host.startsWith("[") ? 6 : 4;
  const value = family === 6 ? ipv6Value(host.slice(1, -1)) : ipv4Value(host);
  if (value === null) return "not an address the gateway can read";
  const range = rangeOf(NON_PUBLIC_RANGES, family, value);
  if (range !== null) return range;
  if (family === 6 && ((value >> 48n) & 0xfdffn) === 0n && ((value >> 32n) & 0xffffn) === 0x5efen) {
    const carried = value & 0xffffffffn;
    const block = rangeOf(NON_PUBLIC_RANGES, 4, carried);
    if (block !== null && rangeOf(PUBLIC_EXCEPTIONS_IPV4, 4, carried) === null) {
      return `ISATAP identifier carrying ${[24n, 16n, 8n, 0n].map((b) => (carried >> b) & 255n).join(".")}, inside ${block}`;
    }
  }
  return null;
}

/** The INTERNAL_SUFFIXES entry a DNS name ends with (or is, without the dot), or null. */
function internalSuffix(name) {
  return INTERNAL_SUFFIXES.find((suffix) => `.${name}`.endsWith(suffix)) ?? null;
}

/**
 * Validates EGRESS_POLICY (a JSON string or an already parsed object).
 *
 * Shape: {"mode": "deny"|"allowlist"|"open", "allow": [{"host": str, "port": 80|443, "wildcard"?: bool}]}.
 * `allow` is required for "allowlist". Hosts are public DNS names (lowercased, one trailing dot
 * dropped), never IP literals, `*` patterns or names under INTERNAL_SUFFIXES; `wildcard: true`
 * means every name below `host` (never `host` itself) and needs a host of two or more labels.
 * Ports are 80 or 443 only: Cloudflare Containers intercept no other port, so an entry on
 * another port could never be reached.
 * Unknown keys are errors so that a typo cannot silently change the meaning of a policy.
 *
 * @returns {{ok: true, policy: {mode: string, allow: {host: string, port: number, wildcard: boolean}[]}} | {ok: false, error: string}}
 */
export function parseEgressPolicy(raw) {
  if (raw === undefined || raw === null || raw === "") {
    return { ok: false, error: `${BINDINGS.egressPolicy} is not set` };
  }
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return { ok: false, error: `${BINDINGS.egressPolicy} is not valid JSON` };
    }
  }
  if (!isPlainObject(value)) return { ok: false, error: `${BINDINGS.egressPolicy} must be a JSON object` };
  for (const key of Object.keys(value)) {
    if (key !== "mode" && key !== "allow") {
      return { ok: false, error: `${BINDINGS.egressPolicy} has unknown key '${key}'` };
    }
  }
  if (!EGRESS_MODES.has(value.mode)) {
    return { ok: false, error: `${BINDINGS.egressPolicy}.mode must be one of deny, allowlist, open` };
  }
  if (value.allow === undefined && value.mode === "allowlist") {
    return { ok: false, error: `${BINDINGS.egressPolicy}.allow is required when mode is allowlist` };
  }
  const entries = value.allow ?? [];
  if (!Array.isArray(entries)) return { ok: false, error: `${BINDINGS.egressPolicy}.allow must be an array` };
  const allow = [];
  for (const [i, entry] of entries.entries()) {
    const parsed = parseAllowEntry(entry, `${BINDINGS.egressPolicy}.allow[${i}]`);
    if (parsed.error !== undefined) return { ok: false, error: parsed.error };
    allow.push(parsed.entry);
  }
  return { ok: true, policy: { mode: value.mode, allow } };
}

function parseAllowEntry(entry, where) {
  if (!isPlainObject(entry)) return { error: `${where} must be an object` };
  for (const key of Object.keys(entry)) {
    if (key !== "host" && key !== "port" && key !== "wildcard") {
      return { error: `${where} has unknown key '${key}'` };
    }
  }
  if (typeof entry.host !== "string") return { error: `${where}.host must be a string` };
  let host = entry.host.toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host.includes("*")) {
    return { error: `${where}.host must not contain '*'; set wildcard: true instead` };
  }
  if (looksLikeIpLiteral(host)) return { error: `${where}.host must be a DNS name, not an IP address` };
  if (!isDnsName(host)) return { error: `${where}.host is not a valid DNS name` };
  const suffix = internalSuffix(host);
  if (suffix !== null) {
    return { error: `${where}.host ${host} is an internal name (${suffix}); sandboxes reach public hosts only` };
  }
  if (!Number.isInteger(entry.port) || entry.port < 1 || entry.port > 65535) {
    return { error: `${where}.port must be an integer from 1 to 65535` };
  }
  if (INTERCEPTED[entry.port] === undefined) {
    return { error: `${where}.port must be 80 or 443: Cloudflare Containers intercept no other port` };
  }
  if (entry.wildcard !== undefined && typeof entry.wildcard !== "boolean") {
    return { error: `${where}.wildcard must be a boolean` };
  }
  if (entry.wildcard === true && !host.includes(".")) {
    // `*.com` would open a whole top-level domain; say so instead of allowing it.
    return { error: `${where}.host needs at least two labels when wildcard is true` };
  }
  return { entry: { host, port: entry.port, wildcard: entry.wildcard === true } };
}

/**
 * Parses an outbound URL the way the gateway will forward it. The decision and the forwarded
 * request both use this one parse, so what is checked is exactly what is fetched.
 *
 * One trailing dot is dropped from DNS names (`pypi.org.` is the fully qualified spelling of
 * `pypi.org`) and the URL is rewritten without it; a second dot or an empty label is invalid.
 */
export function parseEgressTarget(input) {
  let url;
  try {
    url = new URL(String(input));
  } catch {
    return { ok: false, reason: "URL could not be parsed" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, reason: `scheme '${url.protocol}' is not allowed; only http and https are` };
  }
  const isIp = looksLikeIpLiteral(url.hostname);
  let host = url.hostname;
  if (!isIp && host.endsWith(".")) {
    host = host.slice(0, -1);
    url.hostname = host;
    if (url.hostname !== host) return { ok: false, reason: "URL could not be parsed" };
  }
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  return {
    ok: true,
    url,
    host,
    port,
    isIp,
    hasUserinfo: url.username !== "" || url.password !== "",
    validName: isIp || isDnsName(host),
  };
}

/**
 * Decides whether the sandbox may reach `url` under `policy` (EGRESS_POLICY as a JSON string
 * or object). Pure: no I/O, no clock.
 *
 * deny      blocks everything.
 * open      allows http/https URLs to public destinations, on any port: IP literals that
 *           nonPublicReason passes (outside every NON_PUBLIC block, no ISATAP identifier
 *           carrying a non-public IPv4 address) and DNS names of two or more labels outside
 *           INTERNAL_SUFFIXES.
 * allowlist allows a URL only when its host and port equal a listed entry (port from the URL,
 *           else 443 for https and 80 for http; `wildcard: true` entries match every name below
 *           the entry at any depth, never the entry itself). IP literals in any spelling are denied.
 * In every mode other than deny, userinfo and malformed names are denied; an invalid policy
 * denies everything.
 *
 * @returns {{allowed: boolean, reason: string}}
 */
export function decideEgress(policy, url) {
  const parsed = parseEgressPolicy(policy);
  if (!parsed.ok) return { allowed: false, reason: `invalid egress policy: ${parsed.error}` };
  const { mode, allow } = parsed.policy;
  if (mode === "deny") return { allowed: false, reason: "egress mode 'deny' blocks all requests" };
  const target = parseEgressTarget(url);
  if (!target.ok) return { allowed: false, reason: target.reason };
  if (target.hasUserinfo) {
    return { allowed: false, reason: "URLs with userinfo (user@host) are not allowed" };
  }
  if (!target.validName) return { allowed: false, reason: "host is not a valid DNS name" };
  if (mode === "open") return decideOpen(target);
  if (target.isIp) return { allowed: false, reason: "IP literal hosts are not allowed" };
  for (const entry of allow) {
    if (entry.port !== target.port) continue;
    if (!entry.wildcard && target.host === entry.host) {
      return { allowed: true, reason: `${target.host}:${target.port} matches ${entry.host}:${entry.port}` };
    }
    if (entry.wildcard && target.host.endsWith(`.${entry.host}`)) {
      return { allowed: true, reason: `${target.host}:${target.port} matches *.${entry.host}:${entry.port}` };
    }
  }
  return { allowed: false, reason: `${target.host}:${target.port} is not in the allowlist` };
}

function decideOpen(target) {
  const where = `${target.host}:${target.port}`;
  if (target.isIp) {
    const why = nonPublicReason(target.host);
    if (why !== null) return { allowed: false, reason: `${where} is not a public address (${why})` };
  } else {
    const suffix = internalSuffix(target.host);
    if (suffix !== null) return { allowed: false, reason: `${where} is an internal name (${suffix})` };
    if (!target.host.includes(".")) {
      return { allowed: false, reason: `${where} is a single-label name, not a public one` };
    }
  }
  return { allowed: true, reason: `egress mode 'open' allows the public destination ${where}` };
}

/**
 * The outbound interceptions that give the container a path to EgressGateway under `policy`
 * (as decideEgress takes it), in install order: `[{method, pattern?}]` where `method` names a
 * `ctx.container` method (Durable Object Container API,
 * developers.cloudflare.com/containers/api/durable-object-container/).
 *
 * deny      none: with enableInternet false nothing leaves the container.
 * allowlist one per distinct (port, host pattern): `interceptOutboundHttp(host)` for port 80,
 *           `interceptOutboundHttps(host)` for 443; a wildcard entry installs the glob `*.host`,
 *           where `*` matches any sequence of characters (same page), so every name below host
 *           and never host. An unlisted name gets no interception and so no path at all.
 * open      the catch-alls `interceptAllOutboundHttp` and `interceptOutboundHttps("*")`; the
 *           gateway then refuses non-public destinations.
 * An invalid policy gets none (nothing is routed; exec also refuses to start a container).
 *
 * @returns {{method: string, pattern?: string}[]}
 */
export function egressInterceptions(policy) {
  const parsed = parseEgressPolicy(policy);
  if (!parsed.ok || parsed.policy.mode === "deny") return [];
  if (parsed.policy.mode === "open") {
    return [{ method: "interceptAllOutboundHttp" }, { method: "interceptOutboundHttps", pattern: "*" }];
  }
  const plan = [];
  const seen = new Set();
  for (const entry of parsed.policy.allow) {
    const step = { method: INTERCEPTED[entry.port], pattern: entry.wildcard ? `*.${entry.host}` : entry.host };
    const key = `${step.method} ${step.pattern}`;
    if (!seen.has(key)) {
      seen.add(key);
      plan.push(step);
    }
  }
  return plan;
}

/** Installs `plan` (from egressInterceptions) on `container` (`ctx.container`), in order. */
export async function installEgressInterceptions(container, plan, gateway) {
  for (const { method, pattern } of plan) {
    if (pattern === undefined) await container[method](gateway);
    else await container[method](pattern, gateway);
  }
}

// Headers that describe the hop between container and gateway, not the request itself.
const HOP_HEADERS = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Outbound handler for the container. The Durable Object installs it with the interceptions
 * egressInterceptions(EGRESS_POLICY) lists (Durable Object Container API,
 * developers.cloudflare.com/containers/api/durable-object-container/ #interceptoutboundhttp, and
 * "Handle outbound traffic" > "Direct API", developers.cloudflare.com/containers/configuration/outbound-traffic/):
 * the runtime calls this `fetch` for the container's HTTP (port 80) and HTTPS (port 443, the
 * platform terminating TLS with its per-container CA) requests whose Host or SNI matches one of
 * them; `enableInternet: false` drops everything else.
 *
 * The gateway is the authority whatever reached it: it decides on the URL it is handed and
 * re-issues the request itself to exactly that URL (Host header dropped, so upstream Host and SNI
 * are the checked name and the port is the checked port), never to the address the container
 * dialled. A name the container claims for another address therefore reaches only the named host.
 * Allowed requests use `redirect: "manual"`, so a redirect goes back to the container and its
 * next hop is decided again rather than followed here.
 */
export class EgressGateway extends WorkerEntrypoint {
  async fetch(request) {
    const decision = decideEgress(this.env[BINDINGS.egressPolicy], request.url);
    const target = parseEgressTarget(request.url);
    console.log(
      JSON.stringify({
        event: "sandbox.egress",
        sandbox: this.ctx.props?.sandboxId ?? null,
        allowed: decision.allowed,
        reason: decision.reason,
        scheme: target.ok ? target.url.protocol.slice(0, -1) : null,
        host: target.ok ? target.host.slice(0, 253) : null,
        port: target.ok ? target.port : null,
      }),
    );
    if (!decision.allowed) {
      return json(403, { error: "egress_denied", reason: decision.reason });
    }
    const headers = new Headers();
    for (const [name, value] of request.headers) {
      if (!HOP_HEADERS.has(name)) headers.append(name, value);
    }
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    return fetch(
      new Request(target.url.href, {
        method: request.method,
        headers,
        body: hasBody ? request.body : null,
        redirect: "manual",
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Worker entry: authentication, validation, routing

const WWW_AUTHENTICATE = 'Bearer realm="sandboxkit"';

function unauthorized(message) {
  return json(401, { error: "unauthorized", message }, { "www-authenticate": WWW_AUTHENTICATE });
}

function forbidden(message) {
  return json(
    403,
    { error: "forbidden", message },
    { "www-authenticate": `${WWW_AUTHENTICATE}, error="insufficient_scope"` },
  );
}

// Client credentials: a JWS compact serialisation (RFC 7515) of a JWT (RFC 7519), HS256 only.
// The algorithm is pinned here, never read from the token: a header naming anything else
// (`none`, RS256 with the key as a "public key", ...) is refused before any signature check.
const TOKEN_ALG = "HS256";
export const TOKEN_LIMITS = Object.freeze({
  // Clock skew accepted between the platform that mints tokens and Cloudflare, on exp, nbf, iat.
  clockToleranceSeconds: 30,
  // Upper bound of JWT_MAX_LIFETIME_SECONDS: tokens are minted per job or per call, so a bound
  // above an hour would only widen what a leaked token opens (a copy of
  // sandboxkit.cloudflare.spec's MAX_TOKEN_LIFETIME_SECONDS, under
  // tests/cloudflare/test_worker_contract.py).
  maxLifetimeSeconds: 3600,
});
// A bearer credential larger than this is not one the kit's claim set produces.
const MAX_TOKEN_CHARS = 8192;
// What a token's `ops` claim may list: the Worker's three routes.
export const TOKEN_OPS = Object.freeze(["status", "exec", "delete"]);
// A token lists at most this many sessions; wider scopes use `session_prefix`.
const MAX_TOKEN_SESSIONS = 64;
// A prefix of a session id; the empty prefix scopes the token to every session of its tenant.
const SESSION_PREFIX_PATTERN = /^([A-Za-z0-9][A-Za-z0-9_-]{0,63})?$/;
const BEARER_JWT = /^bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/i;

/** Strict, unpadded base64url (RFC 7515 section 2) to bytes; null for any other spelling. */
function base64urlBytes(text) {
  if (text.length % 4 === 1) return null;
  let binary;
  try {
    binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return null;
  }
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  // One spelling per value: non-zero unused bits would let one signature have several forms.
  const again = btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  return again === text ? bytes : null;
}

function base64urlJson(text) {
  const bytes = base64urlBytes(text);
  if (bytes === null) return null;
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return isPlainObject(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Reads the token settings (fail closed): `JWT_SIGNING_KEY` (at least 32 characters),
 * `JWT_ISSUER` and `JWT_AUDIENCE` (non-empty) and `JWT_MAX_LIFETIME_SECONDS` (1 to
 * TOKEN_LIMITS.maxLifetimeSeconds).
 */
function loadTokenConfig(env) {
  const key = readSecret(env, BINDINGS.tokenKey);
  if (!key.ok) return key;
  const out = { ok: true, key: key.value };
  for (const [name, field] of [
    [BINDINGS.tokenIssuer, "issuer"],
    [BINDINGS.tokenAudience, "audience"],
  ]) {
    if (typeof env[name] !== "string" || env[name].length === 0) {
      return { ok: false, error: `${name} must be a non-empty string` };
    }
    out[field] = env[name];
  }
  const lifetime = readSeconds(env, BINDINGS.tokenMaxLifetime, TOKEN_LIMITS.maxLifetimeSeconds);
  if (!lifetime.ok) return lifetime;
  out.maxLifetimeSeconds = lifetime.value;
  return out;
}

function isNumericDate(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/** The token's scope claims, or an error: tenant, exactly one of sessions / session_prefix, ops. */
function readScope(claims) {
  const { tenant, sessions, session_prefix: prefix, ops } = claims;
  if (typeof tenant !== "string" || !ID_PATTERN.test(tenant)) return { error: "token tenant claim is missing or invalid" };
  if ((sessions === undefined) === (prefix === undefined)) {
    return { error: "token must carry exactly one of the sessions and session_prefix claims" };
  }
  if (
    sessions !== undefined &&
    (!Array.isArray(sessions) ||
      sessions.length === 0 ||
      sessions.length > MAX_TOKEN_SESSIONS ||
      !sessions.every((s) => typeof s === "string" && ID_PATTERN.test(s)))
  ) {
    return { error: `token sessions claim must list 1 to ${MAX_TOKEN_SESSIONS} session ids` };
  }
  if (prefix !== undefined && (typeof prefix !== "string" || !SESSION_PREFIX_PATTERN.test(prefix))) {
    return { error: "token session_prefix claim is invalid" };
  }
  if (!Array.isArray(ops) || ops.length === 0 || !ops.every((op) => TOKEN_OPS.includes(op))) {
    return { error: `token ops claim must list some of ${TOKEN_OPS.join(", ")}` };
  }
  return { scope: { tenant, sessions: sessions ?? null, sessionPrefix: prefix ?? null, ops: [...new Set(ops)] } };
}

/**
 * Verifies the bearer token of an `Authorization` header value against `config` (from
 * loadTokenConfig) at `now` (seconds since the epoch).
 *
 * Accepted: `Bearer <header>.<payload>.<signature>`, each strict unpadded base64url; header a
 * JSON object with `alg` exactly "HS256", `typ` absent or "JWT", no `crit`; signature the
 * HMAC-SHA256 of `<header>.<payload>` under JWT_SIGNING_KEY (checked by crypto.subtle.verify,
 * before any claim is read); claims `iss` equal to JWT_ISSUER, `aud` equal to (or a list
 * holding) JWT_AUDIENCE, numeric `exp` and `iat` with `iat <= now + tolerance`,
 * `exp > now - tolerance` and `exp - iat <= JWT_MAX_LIFETIME_SECONDS`, `nbf` (optional)
 * `<= now + tolerance`, and the scope claims readScope reads.
 *
 * @returns {Promise<{ok: true, scope: {tenant: string, sessions: string[]|null, sessionPrefix: string|null, ops: string[]}} | {ok: false, error: string}>}
 */
export async function verifyToken(header, config, now) {
  if (header === null) return { ok: false, error: "missing bearer token" };
  const match = header.length <= MAX_TOKEN_CHARS ? BEARER_JWT.exec(header) : null;
  if (match === null) return { ok: false, error: "malformed Authorization header; expected 'Bearer <JWT>'" };
  const [, encodedHeader, encodedClaims, encodedSignature] = match;
  const protectedHeader = base64urlJson(encodedHeader);
  if (protectedHeader === null) return { ok: false, error: "malformed token header" };
  if (protectedHeader.alg !== TOKEN_ALG) return { ok: false, error: `token algorithm must be ${TOKEN_ALG}` };
  if (protectedHeader.typ !== undefined && String(protectedHeader.typ).toUpperCase() !== "JWT") {
    return { ok: false, error: "token type must be JWT" };
  }
  if (protectedHeader.crit !== undefined) return { ok: false, error: "token header crit is not supported" };
  const signature = base64urlBytes(encodedSignature);
  if (signature === null) return { ok: false, error: "malformed token signature" };
  const key = await hmacKey(config.key, "verify");
  const signed = encoder.encode(`${encodedHeader}.${encodedClaims}`);
  if (!(await crypto.subtle.verify("HMAC", key, signature, signed))) {
    return { ok: false, error: "invalid token signature" };
  }
  const claims = base64urlJson(encodedClaims);
  if (claims === null) return { ok: false, error: "malformed token claims" };
  if (claims.iss !== config.issuer) return { ok: false, error: "token issuer is not accepted" };
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(config.audience)) return { ok: false, error: "token audience is not this deployment" };
  if (!isNumericDate(claims.exp) || !isNumericDate(claims.iat)) {
    return { ok: false, error: "token must carry numeric exp and iat claims" };
  }
  const tolerance = TOKEN_LIMITS.clockToleranceSeconds;
  if (claims.exp <= now - tolerance) return { ok: false, error: "token expired" };
  if (claims.iat > now + tolerance) return { ok: false, error: "token issued in the future" };
  if (claims.nbf !== undefined && (!isNumericDate(claims.nbf) || claims.nbf > now + tolerance)) {
    return { ok: false, error: "token not yet valid" };
  }
  if (claims.exp - claims.iat > config.maxLifetimeSeconds) {
    return { ok: false, error: `token lifetime exceeds ${config.maxLifetimeSeconds} seconds` };
  }
  const scope = readScope(claims);
  if (scope.error !== undefined) return { ok: false, error: scope.error };
  return { ok: true, scope: scope.scope };
}

/** Why `scope` (verifyToken's) does not cover `op` on (tenant, session), or null when it does. */
export function scopeProblem(scope, tenant, session, op) {
  if (tenant !== scope.tenant) return "token is not valid for this tenant";
  const inScope = scope.sessions !== null ? scope.sessions.includes(session) : session.startsWith(scope.sessionPrefix);
  if (!inScope) return "token is not valid for this session";
  if (!scope.ops.includes(op)) return `token does not allow ${op}`;
  return null;
}

/** Matches /v1/tenants/{tenant}/sessions/{session}[/exec]; null when the path is not a route. */
function matchRoute(pathname) {
  const parts = pathname.split("/");
  if (parts.length < 6 || parts.length > 7) return null;
  const [empty, version, tenants, tenant, sessions, session, action] = parts;
  if (empty !== "" || version !== "v1" || tenants !== "tenants" || sessions !== "sessions") return null;
  if (action === undefined) return { tenant, session, resource: "session", allow: "GET, DELETE" };
  if (action === "exec") return { tenant, session, resource: "exec", allow: "POST" };
  return null;
}

/** Validates an exec body: {"command": ["argv0", ...]}; returns {command} or {error}. */
function parseExecBody(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: "body must be JSON" };
  }
  if (!isPlainObject(body)) return { error: "body must be a JSON object" };
  for (const key of Object.keys(body)) {
    if (key !== "command") return { error: `unknown field '${key}'` };
  }
  const { command } = body;
  if (!Array.isArray(command) || command.length === 0 || command.length > MAX_ARGV_ITEMS) {
    return { error: `command must be an array of 1 to ${MAX_ARGV_ITEMS} strings` };
  }
  for (const arg of command) {
    if (typeof arg !== "string" || arg.includes("\u0000")) {
      return { error: "command items must be strings without NUL characters" };
    }
  }
  if (command[0].length === 0) return { error: "command[0] must not be empty" };
  return { command };
}

/** Reads at most `limit` bytes of the body; null when it is longer (chunked bodies included). */
async function readBoundedText(request, limit) {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) return null;
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

export default {
  async fetch(request, env) {
    const tokens = loadTokenConfig(env);
    if (!tokens.ok) return misconfigured(tokens.error);
    const verified = await verifyToken(request.headers.get("authorization"), tokens, Date.now() / 1000);
    if (!verified.ok) return unauthorized(verified.error);
    const { scope } = verified;

    const limits = loadLimits(env);
    if (!limits.ok) return misconfigured(limits.error);
    if (env[BINDINGS.sandbox] === undefined) return misconfigured(`${BINDINGS.sandbox} durable object binding is missing`);

    const route = matchRoute(new URL(request.url).pathname);
    if (route === null) return json(404, { error: "not_found", message: "no such route" });
    const allowed = route.allow.split(", ");
    if (!allowed.includes(request.method)) {
      return json(405, { error: "method_not_allowed", message: `use ${route.allow}` }, { allow: route.allow });
    }
    if (!ID_PATTERN.test(route.tenant) || !ID_PATTERN.test(route.session)) {
      return json(400, {
        error: "invalid_id",
        message: "tenant and session must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit",
      });
    }
    const op = route.resource === "exec" ? "exec" : request.method === "GET" ? "status" : "delete";
    // The path only names the sandbox; the verified claims decide whether it may be touched.
    const outOfScope = scopeProblem(scope, route.tenant, route.session, op);
    if (outOfScope !== null) return forbidden(outOfScope);

    let body = null;
    if (op === "exec") {
      const policy = parseEgressPolicy(env[BINDINGS.egressPolicy]);
      if (!policy.ok) {
        return misconfigured(`egress policy invalid, all egress denied and exec refused: ${policy.error}`);
      }
      const text = await readBoundedText(request, MAX_EXEC_BODY_BYTES);
      if (text === null) {
        return json(413, { error: "body_too_large", message: `exec body must be at most ${MAX_EXEC_BODY_BYTES} bytes` });
      }
      const parsed = parseExecBody(text);
      if (parsed.error !== undefined) return json(400, { error: "invalid_body", message: parsed.error });
      body = JSON.stringify({ command: parsed.command });
    }

    // Tenant from the claims (scopeProblem checked the path names the same one).
    const name = await deriveSandboxName(limits.idKey, scope.tenant, route.session);
    const namespace = env[BINDINGS.sandbox];
    const stub = namespace.get(namespace.idFromName(name));
    // A fresh internal request: client headers (the bearer token above all) never reach the DO.
    return stub.fetch(
      new Request(`${INTERNAL_ORIGIN}/${op}`, {
        method: "POST",
        headers: {
          [HEADER_SANDBOX_ID]: name,
          [HEADER_TENANT_HASH]: await tenantHash(limits.idKey, scope.tenant),
          [HEADER_MAY_START]: scope.ops.some((granted) => granted !== "status") ? "1" : "0",
          "content-type": "application/json",
        },
        body,
      }),
    );
  },
};

// ---------------------------------------------------------------------------------------------
// Durable Object: one sandbox, one container

/**
 * Owns one container. Storage keys: sandboxId, tenantHash, startedAt (ms, first request),
 * lastActivityAt (ms), endedAt (ms) and endReason ("expired" | "deleted"). Once ended, a sandbox
 * answers 410 for good: a (tenant, session) pair is single-use.
 */
export class Sandbox extends DurableObject {
  #inflight = 0;
  #starting = null;
  #interceptsInstalled = false;

  async fetch(request) {
    const op = new URL(request.url).pathname.slice(1);
    const name = request.headers.get(HEADER_SANDBOX_ID) ?? "";
    // Only this script's Worker calls here; still check that the name really maps to this object.
    if (!/^[0-9a-f]{64}$/.test(name) || !this.env[BINDINGS.sandbox].idFromName(name).equals(this.ctx.id)) {
      return json(403, { error: "forbidden", message: "sandbox id does not match this object" });
    }
    if (op !== "status" && op !== "delete" && op !== "exec") {
      return json(404, { error: "not_found", message: "no such sandbox operation" });
    }
    const limits = loadLimits(this.env);
    if (!limits.ok) return misconfigured(limits.error);

    const received = Date.now();
    let argv = null;
    if (op === "exec") {
      // The Worker validated it already; the object does not rely on its caller for that.
      const parsed = parseExecBody(await request.text());
      if (parsed.error !== undefined) return json(400, { error: "invalid_body", message: parsed.error });
      argv = parsed.command;
    }
    if (op === "status" && request.headers.get(HEADER_MAY_START) !== "1") {
      const stored = await this.#load();
      if (stored.startedAt === undefined) return json(200, this.#status({ sandboxId: name }, limits));
    }
    const state = await this.#begin(name, request.headers.get(HEADER_TENANT_HASH) ?? "", limits);
    let current = state;
    const deadline = state.startedAt + limits.maxLifetimeSeconds * 1000;
    if (current.endedAt === undefined && received >= deadline) {
      current = await this.#end("expired", deadline, "request");
    }
    if (current.endedAt !== undefined) {
      if (argv !== null) await this.#auditExec(current, argv, "sandbox_ended", null, received, limits);
      return this.#endedResponse(current, limits);
    }
    if (op === "status") return json(200, this.#status(current, limits));
    if (op === "delete") {
      const after = await this.#end("deleted", received, "request");
      return json(200, { sandboxId: after.sandboxId, deleted: true, deletedAt: iso(after.endedAt) });
    }
    return this.#exec(argv, current, limits, deadline, received);
  }

  /**
   * Sends one request through the very handler the container's outbound traffic takes (the
   * `EgressGateway` fetcher built by #egressGateway). Lets the egress path be exercised without a
   * container; only code holding the SANDBOX namespace binding can call it, and it can reach
   * nothing the policy does not allow.
   */
  async probeEgress(url, init) {
    const gateway = this.#egressGateway((await this.ctx.storage.get("sandboxId")) ?? null);
    if (gateway === null) {
      return json(500, { error: "egress_gateway_unavailable", message: "ctx.exports.EgressGateway is not available" });
    }
    // "manual": hand back exactly what the container's client would receive, redirects included.
    return gateway.fetch(new Request(url, { ...init, redirect: "manual" }));
  }

  async alarm() {
    const state = await this.#load();
    if (state.startedAt === undefined || state.endedAt !== undefined) return;
    const limits = loadLimits(this.env);
    if (!limits.ok) {
      // Cannot tell the deadlines apart from a broken config: stop the container, stay stopped.
      await this.#destroyContainer(`misconfigured: ${limits.error}`);
      return;
    }
    const now = Date.now();
    const deadline = state.startedAt + limits.maxLifetimeSeconds * 1000;
    if (now >= deadline) {
      await this.#end("expired", deadline, "alarm");
      return;
    }
    const lastActivity = state.lastActivityAt ?? state.startedAt;
    if (this.#inflight === 0 && now >= lastActivity + limits.idleSeconds * 1000) {
      // Idle sleep backstop for setInactivityTimeout: the next command starts a fresh container.
      await this.#destroyContainer("idle timeout");
    }
    await this.#scheduleAlarm(state, limits);
  }

  // --- state

  async #load() {
    const values = await this.ctx.storage.get([
      "sandboxId",
      "tenantHash",
      "startedAt",
      "lastActivityAt",
      "endedAt",
      "endReason",
    ]);
    return Object.fromEntries(values);
  }

  async #begin(name, tenant, limits) {
    const state = await this.#load();
    if (state.startedAt !== undefined) return state;
    const fresh = { sandboxId: name, tenantHash: tenant, startedAt: Date.now() };
    await this.ctx.storage.put(fresh);
    await this.#scheduleAlarm(fresh, limits);
    return fresh;
  }

  async #scheduleAlarm(state, limits) {
    const deadline = state.startedAt + limits.maxLifetimeSeconds * 1000;
    const idleAt = (state.lastActivityAt ?? state.startedAt) + limits.idleSeconds * 1000;
    const running = this.ctx.container?.running === true;
    await this.ctx.storage.setAlarm(running ? Math.min(deadline, idleAt) : deadline);
  }

  /** Ends the sandbox for good; `trigger` (alarm, request, exec) only feeds the audit line. */
  async #end(reason, at, trigger) {
    await this.ctx.storage.put({ endedAt: at, endReason: reason });
    await this.ctx.storage.deleteAlarm();
    await this.#destroyContainer(reason === "expired" ? "maximum lifetime reached" : "sandbox deleted");
    const state = await this.#load();
    console.log(
      JSON.stringify({
        event: "sandbox.ended",
        sandbox: state.sandboxId,
        tenant: state.tenantHash,
        reason,
        trigger,
        startedAt: iso(state.startedAt),
        endedAt: iso(at),
      }),
    );
    return state;
  }

  #endedResponse(state, limits) {
    if (state.endedAt === undefined) return null;
    if (state.endReason === "expired") {
      return json(410, {
        error: "sandbox_expired",
        message: `sandbox reached its maximum lifetime of ${limits.maxLifetimeSeconds} s and was stopped; start a new session`,
        sandboxId: state.sandboxId,
        startedAt: iso(state.startedAt),
        expiredAt: iso(state.endedAt),
      });
    }
    return json(410, {
      error: "sandbox_deleted",
      message: "sandbox was deleted; start a new session",
      sandboxId: state.sandboxId,
      startedAt: iso(state.startedAt),
      deletedAt: iso(state.endedAt),
    });
  }

  /** The status body; `startedAt` and `expiresAt` are null for a session not started yet. */
  #status(state, limits) {
    const container = this.ctx.container;
    const started = state.startedAt !== undefined;
    return {
      sandboxId: state.sandboxId,
      objectId: this.ctx.id.toString(),
      startedAt: started ? iso(state.startedAt) : null,
      expiresAt: started ? iso(state.startedAt + limits.maxLifetimeSeconds * 1000) : null,
      container:
        container === undefined
          ? { runtime: "unavailable", running: null }
          : { runtime: "available", running: container.running },
    };
  }

  // --- exec

  async #exec(argv, state, limits, deadline, started) {
    this.#inflight++;
    let status = "error";
    let exitCode = null;
    try {
      const policy = parseEgressPolicy(this.env[BINDINGS.egressPolicy]);
      if (!policy.ok) {
        status = "egress_policy_invalid";
        return misconfigured(`egress policy invalid, all egress denied and exec refused: ${policy.error}`);
      }
      // Only the listed hosts get a path out (none in deny); everything else is dropped.
      const plan = egressInterceptions(policy.policy);
      const gateway = plan.length === 0 ? null : this.#egressGateway(state.sandboxId);
      if (plan.length > 0 && gateway === null) {
        status = "egress_gateway_unavailable";
        return json(500, {
          error: "egress_gateway_unavailable",
          message:
            "ctx.exports.EgressGateway is not available (needs compatibility date 2025-11-17 or later); refusing to start a container without egress control",
        });
      }
      const container = this.ctx.container;
      if (container === undefined) {
        status = "container_runtime_unavailable";
        return json(503, {
          error: "container_runtime_unavailable",
          message: "container runtime unavailable: this Durable Object has no container attached",
        });
      }
      const startError = await this.#ensureContainer(container, { plan, gateway }, state.sandboxId, limits, deadline);
      if (startError !== null) {
        status = "container_start_failed";
        return json(503, { error: "container_start_failed", message: startError });
      }
      const timeoutMs = Math.min(limits.execTimeoutSeconds * 1000, deadline - Date.now());
      if (timeoutMs <= 0) {
        status = "sandbox_ended";
        return this.#endedResponse(await this.#end("expired", deadline, "exec"), limits);
      }
      const result = await this.#runInAgent(container, argv, timeoutMs);
      if (result.timedOut) {
        status = "timeout";
        return json(504, {
          error: "exec_timeout",
          message: `command did not finish within ${Math.ceil(timeoutMs / 1000)} s; the container was stopped`,
        });
      }
      if (result.error !== undefined) {
        status = "agent_error";
        return json(502, { error: "agent_error", message: result.error });
      }
      exitCode = result.exitCode;
      status = exitCode === 0 ? "ok" : "nonzero_exit";
      return json(200, {
        exitCode,
        stdout: result.stdout,
        stderr: result.stderr,
        durationMs: Date.now() - started,
      });
    } finally {
      this.#inflight--;
      await this.#auditExec(state, argv, status, exitCode, started, limits);
      const now = Date.now();
      const after = await this.#load();
      if (after.endedAt === undefined) {
        await this.ctx.storage.put("lastActivityAt", now);
        await this.#scheduleAlarm({ ...after, lastActivityAt: now }, limits);
      }
    }
  }

  /** Writes the one audit line of a command: ids, sizes and a keyed digest, never its text. */
  async #auditExec(state, argv, status, exitCode, started, limits) {
    const digest = await commandDigest(limits.idKey, argv);
    console.log(
      JSON.stringify({
        event: "sandbox.exec",
        sandbox: state.sandboxId,
        tenant: state.tenantHash,
        commandArgs: argv.length,
        commandBytes: encoder.encode(JSON.stringify(argv)).length,
        commandHmac: digest,
        status,
        exitCode,
        durationMs: Date.now() - started,
      }),
    );
  }

  #egressGateway(sandboxId) {
    const factory = this.ctx.exports?.EgressGateway;
    if (typeof factory !== "function") return null;
    return factory({ props: { sandboxId } });
  }

  /**
   * Starts the container once, behind `egress` ({plan, gateway}: the interceptions of
   * egressInterceptions and the EgressGateway fetcher they route to); returns an error message
   * or null.
   */
  async #ensureContainer(container, egress, sandboxId, limits, deadline) {
    if (this.#starting === null) {
      this.#starting = this.#startContainer(container, egress, sandboxId, limits, deadline).finally(() => {
        this.#starting = null;
      });
    }
    return this.#starting;
  }

  async #startContainer(container, egress, sandboxId, limits, deadline) {
    if (!this.#interceptsInstalled || !container.running) {
      try {
        // Installed before start so no request can leave before the gateway sees it. The
        // gateway still decides each request against EGRESS_POLICY as it is at that moment, so
        // an entry removed by a redeploy is refused even while an old interception lingers.
        await installEgressInterceptions(container, egress.plan, egress.gateway);
        this.#interceptsInstalled = true;
      } catch (error) {
        // A running container whose interception is unknown is not kept.
        await this.#destroyContainer("egress interception failed");
        return `egress interception could not be installed: ${String(error)}`;
      }
    }
    if (!container.running) {
      container.start({
        // Never direct internet: intercepted HTTP(S) goes through EgressGateway, all else is
        // dropped (DNS aside, see README "DNS").
        enableInternet: false,
        env: { SANDBOXKIT_AGENT_PORT: String(CONTAINER_AGENT_PORT) },
      });
      this.ctx.waitUntil(
        container.monitor().then(
          () => console.log(JSON.stringify({ event: "sandbox.container_exit", sandbox: sandboxId })),
          (error) =>
            console.log(JSON.stringify({ event: "sandbox.container_error", sandbox: sandboxId, error: String(error) })),
        ),
      );
      // Idle sleep in the runtime itself (the Container class calls this sleepAfter); the alarm
      // in alarm() is the backstop where the method is missing.
      if (typeof container.setInactivityTimeout === "function") {
        await container.setInactivityTimeout(limits.idleSeconds * 1000);
      }
    }
    const readyBy = Math.min(Date.now() + CONTAINER_START_TIMEOUT_MS, deadline);
    while (Date.now() < readyBy) {
      try {
        const res = await container.getTcpPort(CONTAINER_AGENT_PORT).fetch("http://container/healthz");
        if (res.ok) return null;
      } catch {
        // Not listening yet.
      }
      await sleep(AGENT_POLL_INTERVAL_MS);
    }
    await this.#destroyContainer("agent not ready in time");
    return `container agent did not become ready within ${CONTAINER_START_TIMEOUT_MS / 1000} s`;
  }

  async #runInAgent(container, argv, timeoutMs) {
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), timeoutMs + EXEC_GRACE_MS);
    });
    const call = (async () => {
      const res = await container.getTcpPort(CONTAINER_AGENT_PORT).fetch("http://container/exec", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ argv, timeoutMs }),
      });
      const out = await res.json().catch(() => null);
      if (out?.timedOut === true) return { timedOut: true };
      if (!res.ok || !Number.isInteger(out?.exitCode) || typeof out.stdout !== "string" || typeof out.stderr !== "string") {
        return { error: `agent answered ${res.status} without a valid result` };
      }
      return { exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr };
    })().catch((error) => ({ error: `agent request failed: ${String(error)}` }));
    try {
      const result = await Promise.race([call, timeout]);
      if (result.timedOut) await this.#destroyContainer("exec timeout");
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  async #destroyContainer(reason) {
    const container = this.ctx.container;
    this.#interceptsInstalled = false;
    if (container === undefined || !container.running) return;
    try {
      await container.destroy(reason);
    } catch (error) {
      console.log(JSON.stringify({ event: "sandbox.destroy_failed", object: this.ctx.id.toString(), error: String(error) }));
    }
  }
}
