// Authentication at the Worker boundary: every request needs `Authorization: Bearer <AUTH_TOKEN>`
// and nothing unauthenticated reaches a Durable Object.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AUTH_TOKEN, SANDBOX_ID_KEY, baseBindings, bearer, startWorker } from "../test-support/helpers.mjs";

const STATUS_PATH = "/v1/tenants/acme/sessions/s1";
const WWW_AUTHENTICATE = 'Bearer realm="sandboxkit"';

async function expectUnauthorized(response, message) {
  assert.equal(response.status, 401);
  assert.equal(response.headers.get("www-authenticate"), WWW_AUTHENTICATE);
  assert.deepEqual(await response.json(), { error: "unauthorized", message });
}

describe("bearer authentication", () => {
  let worker;
  before(async () => {
    worker = await startWorker();
  });
  after(async () => {
    await worker.dispose();
  });

  test("no Authorization header is 401", async () => {
    await expectUnauthorized(await worker.request(STATUS_PATH), "missing bearer token");
  });

  test("a wrong token is 401", async () => {
    await expectUnauthorized(
      await worker.request(STATUS_PATH, { headers: bearer(`${AUTH_TOKEN}x`) }),
      "invalid bearer token",
    );
    await expectUnauthorized(
      await worker.request(STATUS_PATH, { headers: bearer(AUTH_TOKEN.slice(0, -1)) }),
      "invalid bearer token",
    );
  });

  for (const [label, value] of [
    ["another scheme", `Basic ${AUTH_TOKEN}`],
    ["scheme without token", "Bearer"],
    ["token without scheme", AUTH_TOKEN],
    ["two spaces", `Bearer  ${AUTH_TOKEN}`],
    ["two tokens", `Bearer ${AUTH_TOKEN} ${AUTH_TOKEN}`],
    ["character outside b64token", `Bearer ${AUTH_TOKEN}!`],
  ]) {
    test(`a malformed header (${label}) is 401`, async () => {
      await expectUnauthorized(
        await worker.request(STATUS_PATH, { headers: { authorization: value } }),
        "malformed Authorization header; expected 'Bearer <token>'",
      );
    });
  }

  test("an unauthenticated request on an unknown path is 401, not 404", async () => {
    await expectUnauthorized(await worker.request("/nope"), "missing bearer token");
  });

  test("the right token reaches the Durable Object; the scheme is case-insensitive", async () => {
    const response = await worker.request(STATUS_PATH, { headers: { authorization: `bearer ${AUTH_TOKEN}` } });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(Object.keys(body).sort(), ["container", "expiresAt", "objectId", "sandboxId", "startedAt"]);
  });

  test("rejected requests never start a sandbox", async () => {
    // The lifetime clock starts at the object's first request, so a 401 that had reached the
    // object would show up as a start time before the first authenticated call.
    const path = "/v1/tenants/acme/sessions/never-before";
    for (const headers of [{}, bearer("wrong-token"), { authorization: "Basic abc" }]) {
      assert.equal((await worker.request(path, { headers })).status, 401);
      assert.equal(
        (await worker.request(`${path}/exec`, { method: "POST", headers, body: '{"command":["id"]}' })).status,
        401,
      );
      assert.equal((await worker.request(path, { method: "DELETE", headers })).status, 401);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const firstAuthenticated = Date.now();
    const response = await worker.request(path, { headers: bearer() });
    assert.equal(response.status, 200);
    const { startedAt } = await response.json();
    assert.ok(Date.parse(startedAt) >= firstAuthenticated, `${startedAt} predates the first authenticated call`);
  });
});

describe("missing or weak secrets fail closed", () => {
  test("without AUTH_TOKEN every request is 500, with or without credentials", async () => {
    const worker = await startWorker({ bindings: baseBindings({ AUTH_TOKEN: undefined }) });
    try {
      for (const headers of [{}, bearer(), bearer("")]) {
        const response = await worker.request(STATUS_PATH, { headers });
        assert.equal(response.status, 500);
        assert.deepEqual(await response.json(), {
          error: "misconfigured",
          message: "AUTH_TOKEN secret is missing or shorter than 32 characters",
        });
      }
    } finally {
      await worker.dispose();
    }
  });

  test("a short AUTH_TOKEN is refused rather than accepted", async () => {
    const worker = await startWorker({ bindings: baseBindings({ AUTH_TOKEN: "short-token" }) });
    try {
      const response = await worker.request(STATUS_PATH, { headers: bearer("short-token") });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), {
        error: "misconfigured",
        message: "AUTH_TOKEN secret is missing or shorter than 32 characters",
      });
    } finally {
      await worker.dispose();
    }
  });

  test("without SANDBOX_ID_KEY authenticated requests are 500 and unauthenticated ones 401", async () => {
    const worker = await startWorker({ bindings: baseBindings({ SANDBOX_ID_KEY: undefined }) });
    try {
      const response = await worker.request(STATUS_PATH, { headers: bearer() });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), {
        error: "misconfigured",
        message: "SANDBOX_ID_KEY secret is missing or shorter than 32 characters",
      });
      await expectUnauthorized(await worker.request(STATUS_PATH), "missing bearer token");
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
        const response = await worker.request(STATUS_PATH, { headers: bearer() });
        assert.equal(response.status, 500);
        assert.deepEqual(await response.json(), { error: "misconfigured", message });
      } finally {
        await worker.dispose();
      }
    });
  }
});

test("the secrets never appear in what the runtime prints", async () => {
  const worker = await startWorker();
  try {
    await worker.request(STATUS_PATH, { headers: bearer() });
    await worker.request(`${STATUS_PATH}/exec`, {
      method: "POST",
      headers: bearer(),
      body: JSON.stringify({ command: ["sh", "-c", "true"] }),
    });
    await worker.request(STATUS_PATH, { headers: bearer("not-the-token") });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const printed = worker.stdout.join("\n");
    assert.ok(printed.length > 0, "expected the exec audit line at least");
    assert.equal(printed.includes(AUTH_TOKEN), false);
    assert.equal(printed.includes(SANDBOX_ID_KEY), false);
  } finally {
    await worker.dispose();
  }
});
