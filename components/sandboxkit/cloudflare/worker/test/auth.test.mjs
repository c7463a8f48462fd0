// Authentication at the Worker boundary: every request needs `Authorization: Bearer <JWT>`, a
// short-lived HS256 token whose claims name the tenant, the sessions and the operations it may
// touch. Tokens are minted with jose (the reference implementation); the hand-made ones below are
// the shapes an attacker would send. Nothing unauthenticated or out of scope reaches a Durable Object.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { jwtVerify } from "jose";
import {
  SANDBOX_ID_KEY,
  JWT_AUDIENCE,
  JWT_ISSUER,
  JWT_MAX_LIFETIME_SECONDS,
  JWT_SIGNING_KEY,
  baseBindings,
  bearer,
  events,
  expectedSandboxName,
  mintToken,
  startWorker,
  waitForEvents,
} from "../test-support/helpers.mjs";

const STATUS_PATH = "/v1/tenants/acme/sessions/s1";
const WWW_AUTHENTICATE = 'Bearer realm="sandboxkit"';
const MALFORMED = "malformed Authorization header; expected 'Bearer <JWT>'";
const OTHER_KEY = "another-signing-key-0123456789abcdefghijklmnopqrs";

const now = () => Math.floor(Date.now() / 1000);
const b64url = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** A compact JWS with any header and claims, signed HS256 under `key` (or with `signature`). */
function handMade(header, claims, { key = JWT_SIGNING_KEY, signature } = {}) {
  const input = `${b64url(header)}.${b64url(claims)}`;
  return `${input}.${signature ?? createHmac("sha256", key).update(input).digest("base64url")}`;
}

function goodClaims(overrides = {}) {
  const t = now();
  return {
    iss: JWT_ISSUER,
    aud: JWT_AUDIENCE,
    iat: t,
    exp: t + 300,
    tenant: "acme",
    sessions: ["s1"],
    ops: ["status", "exec", "delete"],
    ...overrides,
  };
}

async function expectUnauthorized(response, message) {
  assert.equal(response.status, 401);
  assert.equal(response.headers.get("www-authenticate"), WWW_AUTHENTICATE);
  assert.deepEqual(await response.json(), { error: "unauthorized", message });
}

async function expectForbidden(response, message) {
  assert.equal(response.status, 403);
  assert.equal(response.headers.get("www-authenticate"), `${WWW_AUTHENTICATE}, error="insufficient_scope"`);
  assert.deepEqual(await response.json(), { error: "forbidden", message });
}

describe("bearer token verification", () => {
  let worker;
  before(async () => {
    worker = await startWorker();
  });
  after(async () => {
    await worker.dispose();
  });

  const withToken = (token, path = STATUS_PATH, init = {}) =>
    worker.request(path, { ...init, headers: { authorization: `Bearer ${token}` } });

  test("no Authorization header is 401", async () => {
    await expectUnauthorized(await worker.request(STATUS_PATH), "missing bearer token");
  });

  test("a good token reaches the Durable Object; the scheme is case-insensitive", async () => {
    const response = await worker.request(STATUS_PATH, { headers: { authorization: `bearer ${await mintToken()}` } });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(Object.keys(body).sort(), ["container", "expiresAt", "objectId", "sandboxId", "startedAt"]);
    assert.equal(body.sandboxId, expectedSandboxName(SANDBOX_ID_KEY, "acme", "s1"));
  });

  test("the old shape, a shared static secret as bearer, is 401", async () => {
    for (const secret of [JWT_SIGNING_KEY, "test-token-0123456789abcdefghijklmnopqrstuvwxyz"]) {
      await expectUnauthorized(await withToken(secret), MALFORMED);
    }
  });

  test("malformed headers are 401", async () => {
    const token = await mintToken();
    for (const value of [
      `Basic ${token}`,
      "Bearer",
      token,
      `Bearer  ${token}`,
      `Bearer ${token} ${token}`,
      `Bearer ${token}.`,
      `Bearer ${token.split(".").slice(0, 2).join(".")}`,
      `Bearer ${token}=`,
      `Bearer ${token.slice(0, 20)}!${token.slice(21)}`,
      `Bearer ${handMade({ alg: "HS256" }, goodClaims())}${"A".repeat(8192)}`,
    ]) {
      await expectUnauthorized(await worker.request(STATUS_PATH, { headers: { authorization: value } }), MALFORMED);
    }
  });

  test("a token signed with another key (forged) is 401", async () => {
    await expectUnauthorized(await withToken(await mintToken({}, { key: OTHER_KEY })), "invalid token signature");
    await expectUnauthorized(
      await withToken(handMade({ alg: "HS256" }, goodClaims(), { key: OTHER_KEY })),
      "invalid token signature",
    );
  });

  test("claims changed after signing are 401", async () => {
    const [header, , signature] = (await mintToken({ tenant: "acme" })).split(".");
    const claims = b64url(goodClaims({ tenant: "globex" }));
    await expectUnauthorized(await withToken(`${header}.${claims}.${signature}`), "invalid token signature");
  });

  test("alg none and every other algorithm are 401, whatever the signature", async () => {
    // RFC 7519 section 6.1 writes an unsecured JWT with an empty third part: not even well formed here.
    await expectUnauthorized(await withToken(handMade({ alg: "none" }, goodClaims(), { signature: "" })), MALFORMED);
    for (const alg of ["none", "None", "NONE", "HS512", "HS384", "RS256", "ES256", "EdDSA", "hs256"]) {
      await expectUnauthorized(
        await withToken(handMade({ alg, typ: "JWT" }, goodClaims())),
        "token algorithm must be HS256",
      );
    }
    await expectUnauthorized(await withToken(handMade({ typ: "JWT" }, goodClaims())), "token algorithm must be HS256");
  });

  test("other header shapes are 401", async () => {
    await expectUnauthorized(await withToken(handMade({ alg: "HS256", typ: "at+jwt" }, goodClaims())), "token type must be JWT");
    await expectUnauthorized(
      await withToken(handMade({ alg: "HS256", crit: ["exp"], exp: 1 }, goodClaims())),
      "token header crit is not supported",
    );
    const token = handMade({ alg: "HS256" }, goodClaims());
    const [, claims, signature] = token.split(".");
    await expectUnauthorized(await withToken(`${b64url("[1]")}.${claims}.${signature}`), "malformed token header");
    await expectUnauthorized(await withToken(`${b64url("{not json")}.${claims}.${signature}`), "malformed token header");
    // The last character of a 32-byte signature carries two unused bits; a second spelling is refused.
    const last = signature.at(-1);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const twin = alphabet[alphabet.indexOf(last) ^ 1];
    await expectUnauthorized(await withToken(`${token.slice(0, -1)}${twin}`), "malformed token signature");
    await expectUnauthorized(await withToken(`${token.split(".").slice(0, 2).join(".")}.${signature.slice(0, 20)}`), "invalid token signature");
  });

  test("claims that are not a JSON object are 401 even when signed", async () => {
    await expectUnauthorized(await withToken(handMade({ alg: "HS256" }, "[1,2]")), "malformed token claims");
    await expectUnauthorized(await withToken(handMade({ alg: "HS256" }, "not json")), "malformed token claims");
  });

  test("an expired token is 401; the clock tolerance is 30 s", async () => {
    const t = now();
    await expectUnauthorized(await withToken(await mintToken({}, { times: { iat: t - 400, exp: t - 60 } })), "token expired");
    const within = await withToken(await mintToken({}, { times: { iat: t - 300, exp: t - 10 } }));
    assert.equal(within.status, 200);
  });

  test("a token not yet valid, or issued in the future, is 401", async () => {
    const t = now();
    await expectUnauthorized(
      await withToken(await mintToken({}, { times: { iat: t, nbf: t + 120, exp: t + 300 } })),
      "token not yet valid",
    );
    await expectUnauthorized(
      await withToken(await mintToken({}, { times: { iat: t + 120, exp: t + 300 } })),
      "token issued in the future",
    );
    await expectUnauthorized(await withToken(handMade({ alg: "HS256" }, goodClaims({ nbf: "0" }))), "token not yet valid");
  });

  test("a token spanning more than JWT_MAX_LIFETIME_SECONDS is 401", async () => {
    const t = now();
    await expectUnauthorized(
      await withToken(await mintToken({}, { times: { iat: t, exp: t + 901 } })),
      "token lifetime exceeds 900 seconds",
    );
    assert.equal((await withToken(await mintToken({}, { times: { iat: t, exp: t + 900 } }))).status, 200);
  });

  test("wrong audience or issuer is 401; an audience list holding ours is accepted", async () => {
    await expectUnauthorized(
      await withToken(await mintToken({}, { audience: "sandboxkit-other" })),
      "token audience is not this deployment",
    );
    await expectUnauthorized(await withToken(handMade({ alg: "HS256" }, goodClaims({ aud: undefined }))), "token audience is not this deployment");
    await expectUnauthorized(await withToken(await mintToken({}, { issuer: "someone-else" })), "token issuer is not accepted");
    const listed = await withToken(await mintToken({}, { audience: ["sandboxkit-other", JWT_AUDIENCE] }));
    assert.equal(listed.status, 200);
  });

  test("missing exp or iat is 401", async () => {
    for (const claim of ["exp", "iat"]) {
      await expectUnauthorized(
        await withToken(handMade({ alg: "HS256" }, goodClaims({ [claim]: undefined }))),
        "token must carry numeric exp and iat claims",
      );
    }
    await expectUnauthorized(
      await withToken(handMade({ alg: "HS256" }, goodClaims({ exp: String(now() + 60) }))),
      "token must carry numeric exp and iat claims",
    );
  });

  for (const [label, claims, message] of [
    ["no tenant", { tenant: undefined }, "token tenant claim is missing or invalid"],
    ["a tenant outside the id charset", { tenant: "acme/../globex" }, "token tenant claim is missing or invalid"],
    ["both sessions and session_prefix", { session_prefix: "s" }, "token must carry exactly one of the sessions and session_prefix claims"],
    ["neither sessions nor session_prefix", { sessions: undefined }, "token must carry exactly one of the sessions and session_prefix claims"],
    ["an empty sessions list", { sessions: [] }, "token sessions claim must list 1 to 64 session ids"],
    ["sessions as a string", { sessions: "s1" }, "token sessions claim must list 1 to 64 session ids"],
    ["65 sessions", { sessions: Array.from({ length: 65 }, (_, i) => `s${i}`) }, "token sessions claim must list 1 to 64 session ids"],
    ["a session_prefix outside the charset", { sessions: undefined, session_prefix: "-x" }, "token session_prefix claim is invalid"],
    ["no ops", { ops: undefined }, "token ops claim must list some of status, exec, delete"],
    ["an unknown op", { ops: ["status", "admin"] }, "token ops claim must list some of status, exec, delete"],
  ]) {
    test(`a signed token with ${label} is 401`, async () => {
      await expectUnauthorized(await withToken(handMade({ alg: "HS256" }, goodClaims(claims))), message);
    });
  }

  test("jose, verifying with the Worker's settings, agrees with the Worker on every token here", async () => {
    const t = now();
    const tokens = [
      await mintToken(),
      await mintToken({}, { key: OTHER_KEY }),
      await mintToken({}, { times: { iat: t - 400, exp: t - 60 } }),
      await mintToken({}, { times: { iat: t, nbf: t + 120, exp: t + 300 } }),
      await mintToken({}, { times: { iat: t + 120, exp: t + 300 } }),
      await mintToken({}, { audience: "sandboxkit-other" }),
      await mintToken({}, { issuer: "someone-else" }),
      handMade({ alg: "none" }, goodClaims()),
      handMade({ alg: "HS512" }, goodClaims()),
      handMade({ alg: "HS256", crit: ["exp"], exp: 1 }, goodClaims()),
      handMade({ alg: "HS256" }, goodClaims({ exp: undefined })),
    ];
    const key = new TextEncoder().encode(JWT_SIGNING_KEY);
    const verdicts = [];
    for (const token of tokens) {
      const jose = await jwtVerify(token, key, {
        algorithms: ["HS256"],
        issuer: JWT_ISSUER,
        audience: JWT_AUDIENCE,
        clockTolerance: 30,
        requiredClaims: ["exp", "iat"],
        // Makes jose refuse an iat in the future too, as the Worker does.
        maxTokenAge: JWT_MAX_LIFETIME_SECONDS,
      }).then(
        () => 200,
        () => 401,
      );
      verdicts.push([jose, (await withToken(token)).status]);
    }
    assert.deepEqual(verdicts, [[200, 200], ...Array(tokens.length - 1).fill([401, 401])]);
  });

  test("rejected requests never start a sandbox", async () => {
    // The lifetime clock starts at the object's first request, so a 401 or 403 that had reached
    // the object would show up as a start time before the first accepted call.
    const path = "/v1/tenants/acme/sessions/never-before";
    const rejected = [
      {},
      await bearer({}, { key: OTHER_KEY }),
      { authorization: `Bearer ${JWT_SIGNING_KEY}` },
      await bearer({ tenant: "globex" }),
      await bearer({ session_prefix: undefined, sessions: ["other"] }),
    ];
    for (const headers of rejected) {
      assert.ok([401, 403].includes((await worker.request(path, { headers })).status));
      const exec = await worker.request(`${path}/exec`, { method: "POST", headers, body: '{"command":["id"]}' });
      assert.ok([401, 403].includes(exec.status));
      assert.ok([401, 403].includes((await worker.request(path, { method: "DELETE", headers })).status));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const firstAccepted = Date.now();
    const response = await worker.request(path, { headers: await bearer() });
    assert.equal(response.status, 200);
    const { startedAt } = await response.json();
    assert.ok(Date.parse(startedAt) >= firstAccepted, `${startedAt} predates the first accepted call`);
  });
});

describe("scope: the claims decide which sandbox a request may touch", () => {
  let worker;
  before(async () => {
    worker = await startWorker();
  });
  after(async () => {
    await worker.dispose();
  });

  test("a token for tenant A never reaches tenant B's sandbox", async () => {
    const victim = "/v1/tenants/tenant-b/sessions/shared";
    const owner = await bearer({ tenant: "tenant-b" });
    const started = await (await worker.request(victim, { headers: owner })).json();
    const execLines = events(worker.stdout, "sandbox.exec").length;

    const intruder = await bearer({ tenant: "tenant-a" });
    await expectForbidden(await worker.request(victim, { headers: intruder }), "token is not valid for this tenant");
    await expectForbidden(
      await worker.request(`${victim}/exec`, { method: "POST", headers: intruder, body: '{"command":["id"]}' }),
      "token is not valid for this tenant",
    );
    await expectForbidden(
      await worker.request(victim, { method: "DELETE", headers: intruder }),
      "token is not valid for this tenant",
    );
    // The same session name under the intruder's own tenant is another sandbox altogether.
    const own = await (await worker.request("/v1/tenants/tenant-a/sessions/shared", { headers: intruder })).json();
    assert.equal(own.sandboxId, expectedSandboxName(SANDBOX_ID_KEY, "tenant-a", "shared"));
    assert.notEqual(own.sandboxId, started.sandboxId);

    // B's sandbox is untouched: not deleted, same start, and no exec reached it.
    const still = await worker.request(victim, { headers: owner });
    assert.equal(still.status, 200);
    assert.equal((await still.json()).startedAt, started.startedAt);
    assert.equal((await waitForEvents(worker.stdout, "sandbox.exec", execLines + 1, { timeoutMs: 300 })).length, execLines);
  });

  test("a sessions list admits exactly its sessions", async () => {
    const headers = await bearer({ session_prefix: undefined, sessions: ["job-1", "job-2"] });
    for (const session of ["job-1", "job-2"]) {
      assert.equal((await worker.request(`/v1/tenants/acme/sessions/${session}`, { headers })).status, 200);
    }
    for (const session of ["job-3", "job-10", "job-"]) {
      await expectForbidden(
        await worker.request(`/v1/tenants/acme/sessions/${session}`, { headers }),
        "token is not valid for this session",
      );
    }
  });

  test("a session_prefix admits the sessions that start with it", async () => {
    const headers = await bearer({ session_prefix: "job-42-" });
    assert.equal((await worker.request("/v1/tenants/acme/sessions/job-42-a", { headers })).status, 200);
    for (const session of ["job-420", "job-4", "xjob-42-a"]) {
      await expectForbidden(
        await worker.request(`/v1/tenants/acme/sessions/${session}`, { headers }),
        "token is not valid for this session",
      );
    }
  });

  test("ops limit what a token may do", async () => {
    const path = "/v1/tenants/acme/sessions/read-only";
    const readOnly = await bearer({ ops: ["status"] });
    assert.equal((await worker.request(path, { headers: readOnly })).status, 200);
    await expectForbidden(
      await worker.request(`${path}/exec`, { method: "POST", headers: readOnly, body: '{"command":["id"]}' }),
      "token does not allow exec",
    );
    await expectForbidden(await worker.request(path, { method: "DELETE", headers: readOnly }), "token does not allow delete");
    const execOnly = await bearer({ ops: ["exec"] });
    await expectForbidden(await worker.request(path, { headers: execOnly }), "token does not allow status");
    // The sandbox survived the refused DELETE.
    assert.equal((await worker.request(path, { headers: readOnly })).status, 200);
  });

  test("a status-only token never starts a session's lifetime", async () => {
    const path = "/v1/tenants/acme/sessions/watched";
    const readOnly = await bearer({ ops: ["status"] });
    const unstarted = {
      sandboxId: expectedSandboxName(SANDBOX_ID_KEY, "acme", "watched"),
      startedAt: null,
      expiresAt: null,
    };
    for (let i = 0; i < 2; i++) {
      const response = await worker.request(path, { headers: readOnly });
      assert.equal(response.status, 200);
      const { sandboxId, startedAt, expiresAt } = await response.json();
      assert.deepEqual({ sandboxId, startedAt, expiresAt }, unstarted);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const firstStarting = Date.now();
    // A token that may change the session starts it, even by reading it.
    const started = await (await worker.request(path, { headers: await bearer({ ops: ["status", "exec"] }) })).json();
    assert.ok(Date.parse(started.startedAt) >= firstStarting, `${started.startedAt} predates the first starting call`);
    assert.equal(Date.parse(started.expiresAt) - Date.parse(started.startedAt), 3600 * 1000);
    // From then on the status-only token reads the running clock.
    const seen = await (await worker.request(path, { headers: readOnly })).json();
    assert.deepEqual([seen.startedAt, seen.expiresAt], [started.startedAt, started.expiresAt]);
  });
});

describe("missing or weak token settings fail closed", () => {
  const STATUS = "/v1/tenants/acme/sessions/s1";
  for (const [name, value, message] of [
    ["JWT_SIGNING_KEY", undefined, "JWT_SIGNING_KEY secret is missing or shorter than 32 characters"],
    ["JWT_SIGNING_KEY", "short-signing-key", "JWT_SIGNING_KEY secret is missing or shorter than 32 characters"],
    ["JWT_ISSUER", undefined, "JWT_ISSUER must be a non-empty string"],
    ["JWT_AUDIENCE", "", "JWT_AUDIENCE must be a non-empty string"],
    ["JWT_MAX_LIFETIME_SECONDS", undefined, "JWT_MAX_LIFETIME_SECONDS must be a positive whole number of seconds"],
    ["JWT_MAX_LIFETIME_SECONDS", "3601", "JWT_MAX_LIFETIME_SECONDS must be at most 3600 seconds"],
  ]) {
    test(`${name}=${value} is 500 for every request, with or without a token`, async () => {
      const worker = await startWorker({ bindings: baseBindings({ [name]: value }) });
      try {
        for (const headers of [{}, await bearer(), await bearer({}, { key: "short-signing-key" })]) {
          const response = await worker.request(STATUS, { headers });
          assert.equal(response.status, 500);
          assert.deepEqual(await response.json(), { error: "misconfigured", message });
        }
      } finally {
        await worker.dispose();
      }
    });
  }

  test("without SANDBOX_ID_KEY authenticated requests are 500 and unauthenticated ones 401", async () => {
    const worker = await startWorker({ bindings: baseBindings({ SANDBOX_ID_KEY: undefined }) });
    try {
      const response = await worker.request(STATUS, { headers: await bearer() });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), {
        error: "misconfigured",
        message: "SANDBOX_ID_KEY secret is missing or shorter than 32 characters",
      });
      await expectUnauthorized(await worker.request(STATUS), "missing bearer token");
    } finally {
      await worker.dispose();
    }
  });

  for (const [name, value, message] of [
    ["MAX_LIFETIME_SECONDS", undefined, "MAX_LIFETIME_SECONDS must be a positive whole number of seconds"],
    ["IDLE_TIMEOUT_SECONDS", "0", "IDLE_TIMEOUT_SECONDS must be a positive whole number of seconds"],
    ["EXEC_TIMEOUT_SECONDS", "1.5", "EXEC_TIMEOUT_SECONDS must be a positive whole number of seconds"],
    ["MAX_LIFETIME_SECONDS", "3600000", "MAX_LIFETIME_SECONDS must be at most 604800 seconds"],
  ]) {
    test(`${name}=${value} is 500 with a message naming it`, async () => {
      const worker = await startWorker({ bindings: baseBindings({ [name]: value }) });
      try {
        const response = await worker.request(STATUS, { headers: await bearer() });
        assert.equal(response.status, 500);
        assert.deepEqual(await response.json(), { error: "misconfigured", message });
      } finally {
        await worker.dispose();
      }
    });
  }
});

test("the keys and tokens never appear in what the runtime prints", async () => {
  const worker = await startWorker();
  try {
    const token = await mintToken();
    const headers = { authorization: `Bearer ${token}` };
    await worker.request(STATUS_PATH, { headers });
    await worker.request(`${STATUS_PATH}/exec`, {
      method: "POST",
      headers,
      body: JSON.stringify({ command: ["sh", "-c", "true"] }),
    });
    await worker.request(STATUS_PATH, { headers: await bearer({}, { key: OTHER_KEY }) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const printed = worker.stdout.join("\n");
    assert.ok(printed.length > 0, "expected the exec audit line at least");
    for (const secret of [JWT_SIGNING_KEY, SANDBOX_ID_KEY, token, token.split(".")[2]]) {
      assert.equal(printed.includes(secret), false);
    }
  } finally {
    await worker.dispose();
  }
});
