// Shared test support: starts the real Worker (src/index.js) in workerd through miniflare, on
// loopback only, and collects what the runtime prints. Lives outside test/ because
// `node --test test/` runs every module under test/ as a test file.

import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { SignJWT } from "jose";
import { Miniflare } from "miniflare";

export const WORKER_ROOT = fileURLToPath(new URL("..", import.meta.url));
export const SCRIPT_PATH = fileURLToPath(new URL("../src/index.js", import.meta.url));

// Any date from 2025-11-17 on enables ctx.exports, which the egress gateway needs.
export const COMPATIBILITY_DATE = "2026-07-01";
// The flags the kit deploys with (COMPATIBILITY_FLAGS in sandboxkit/cloudflare/plan.py).
export const COMPATIBILITY_FLAGS = ["global_fetch_strictly_public"];

export const JWT_SIGNING_KEY = "test-signing-key-0123456789abcdefghijklmnopqrstuvwxyz";
export const JWT_ISSUER = "sandboxkit-test-platform";
export const JWT_AUDIENCE = "sandboxkit-test";
export const JWT_MAX_LIFETIME_SECONDS = 900;
export const SANDBOX_ID_KEY = "test-id-key-ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210";

export const ALLOWLIST_POLICY = {
  mode: "allowlist",
  allow: [
    { host: "pypi.org", port: 443, wildcard: false },
    { host: "pythonhosted.org", port: 443, wildcard: true },
  ],
};

export function baseBindings(overrides = {}) {
  const bindings = {
    JWT_SIGNING_KEY,
    JWT_ISSUER,
    JWT_AUDIENCE,
    JWT_MAX_LIFETIME_SECONDS: String(JWT_MAX_LIFETIME_SECONDS),
    SANDBOX_ID_KEY,
    EGRESS_POLICY: JSON.stringify(ALLOWLIST_POLICY),
    IDLE_TIMEOUT_SECONDS: "300",
    MAX_LIFETIME_SECONDS: "3600",
    EXEC_TIMEOUT_SECONDS: "60",
    ...overrides,
  };
  for (const [name, value] of Object.entries(bindings)) {
    if (value === undefined) delete bindings[name];
  }
  return bindings;
}

/** Node-side reference for the DO name derivation the Worker must implement. */
export function expectedSandboxName(key, tenant, session) {
  return createHmac("sha256", key).update(`${tenant}\u0000${session}`).digest("hex");
}

/**
 * A token the way a platform mints one, with jose (github.com/panva/jose) as the reference
 * implementation: HS256 over JWT_SIGNING_KEY, iss/aud the test Worker's, iat now (seconds),
 * exp 300 s later. `claims` adds to or replaces the scope claims (default: tenant acme, every
 * session, every op); `times` replaces iat/exp/nbf; `key` signs with another key.
 */
export async function mintToken(claims = {}, { key = JWT_SIGNING_KEY, times = {}, issuer = JWT_ISSUER, audience = JWT_AUDIENCE } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const { iat = now, exp = now + 300, nbf } = times;
  const jwt = new SignJWT({ tenant: "acme", session_prefix: "", ops: ["status", "exec", "delete"], ...claims })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(iat)
    .setExpirationTime(exp);
  if (nbf !== undefined) jwt.setNotBefore(nbf);
  return jwt.sign(new TextEncoder().encode(key));
}

/** `{authorization: "Bearer <token>"}` for mintToken's token (same arguments). */
export async function bearer(claims = {}, options = {}) {
  return { authorization: `Bearer ${await mintToken(claims, options)}` };
}

/**
 * Starts test-support/decide-harness.js (which imports src/index.js) alone in workerd, on
 * loopback. `ask(body)` posts one request object and resolves to the harness's JSON answer.
 * `handleRuntimeStdio` receives the runtime's stdout and stderr streams (miniflare's option).
 */
export async function startDecideHarness({ handleRuntimeStdio } = {}) {
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    cf: false,
    handleRuntimeStdio,
    workers: [
      {
        name: "decide-harness",
        modules: true,
        modulesRoot: WORKER_ROOT,
        modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
        scriptPath: fileURLToPath(new URL("./decide-harness.js", import.meta.url)),
        compatibilityDate: COMPATIBILITY_DATE,
        compatibilityFlags: COMPATIBILITY_FLAGS,
        // The decision code is pure: any fetch it made would be a bug, so none leaves.
        outboundService: () => new Response("test outbound refused", { status: 599 }),
      },
    ],
  });
  const harness = await mf.getWorker("decide-harness");
  return {
    async ask(body) {
      const response = await harness.fetch("http://harness/", { method: "POST", body: JSON.stringify(body) });
      return response.json();
    },
    dispose: () => mf.dispose(),
  };
}

/**
 * Starts the Worker. `persistDir` keeps Durable Object storage on disk so a second instance can
 * pick it up (a redeploy with other bindings). `outbound` handles every fetch the Worker makes (default: refuse and
 * record), so no test can send traffic past loopback. Returns helpers and a dispose function.
 */
export async function startWorker({
  bindings = baseBindings(),
  compatibilityDate = COMPATIBILITY_DATE,
  outbound,
  persistDir,
} = {}) {
  const stdout = [];
  const unexpectedOutbound = [];
  const outboundService =
    outbound ??
    ((request) => {
      unexpectedOutbound.push(request.url);
      return new Response("test outbound refused", { status: 599 });
    });
  const workers = [
    {
      name: "sandbox",
      modules: true,
      scriptPath: SCRIPT_PATH,
      // Module named "index.js", as the deployer uploads it.
      modulesRoot: fileURLToPath(new URL("../src/", import.meta.url)),
      compatibilityDate,
      compatibilityFlags: COMPATIBILITY_FLAGS,
      bindings,
      durableObjects: { SANDBOX: { className: "Sandbox", useSQLite: true } },
      outboundService,
    },
  ];
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    // false: use the built-in placeholder instead of downloading Request.cf data.
    cf: false,
    // In memory unless a test needs storage to outlive one runtime (then a temp dir it removes).
    durableObjectsPersist: persistDir ?? false,
    workers,
    handleRuntimeStdio(out, err) {
      let pending = "";
      out.setEncoding("utf8");
      out.on("data", (chunk) => {
        pending += chunk;
        const lines = pending.split("\n");
        pending = lines.pop();
        stdout.push(...lines);
      });
      err.setEncoding("utf8");
      err.on("data", (chunk) => stdout.push(...chunk.split("\n").filter((l) => l !== "")));
    },
  });
  const url = await mf.ready;
  return {
    mf,
    url,
    stdout,
    unexpectedOutbound,
    /** Real HTTP over loopback to the Worker. */
    request(path, init = {}) {
      return fetch(new URL(path, url), init);
    },
    async sandboxNamespace() {
      return mf.getDurableObjectNamespace("SANDBOX", "sandbox");
    },
    async dispose() {
      await mf.dispose();
    },
  };
}

/** Lines printed by the runtime that parse as JSON objects with the given event name. */
export function events(stdout, name) {
  const found = [];
  for (const line of stdout) {
    const start = line.indexOf("{");
    if (start === -1) continue;
    try {
      const value = JSON.parse(line.slice(start));
      if (value?.event === name) found.push(value);
    } catch {
      // Not a JSON line.
    }
  }
  return found;
}

/** Waits (bounded) until `count` events named `name` were printed, then a little longer. */
export async function waitForEvents(stdout, name, count, { timeoutMs = 3000, settleMs = 150 } = {}) {
  const until = Date.now() + timeoutMs;
  while (events(stdout, name).length < count && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  return events(stdout, name);
}

/** A loopback HTTP server standing in for an allowlisted internet host; records each request. */
export async function startStandIn(handler = (req, res) => res.end("stand-in ok")) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, path: req.url, headers: req.headers, body });
      handler(req, res);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    port,
    seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
