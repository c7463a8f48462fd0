// Routing and sandbox identity: the Durable Object is named by HMAC(SANDBOX_ID_KEY, tenant NUL
// session), never by the client's string, so ids cannot be guessed across tenants.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  SANDBOX_ID_KEY,
  baseBindings,
  bearer,
  expectedSandboxName,
  startWorker,
} from "../test-support/helpers.mjs";

async function status(worker, tenant, session) {
  const response = await worker.request(`/v1/tenants/${tenant}/sessions/${session}`, { headers: await bearer({ tenant }) });
  assert.equal(response.status, 200);
  return response.json();
}

describe("routes", () => {
  let worker;
  before(async () => {
    worker = await startWorker();
  });
  after(async () => {
    await worker.dispose();
  });

  test("status reaches the Durable Object and reports its derived id and lifetime", async () => {
    const before = Date.now();
    const body = await status(worker, "acme", "status-1");
    const name = expectedSandboxName(SANDBOX_ID_KEY, "acme", "status-1");
    const namespace = await worker.sandboxNamespace();
    assert.deepEqual(body, {
      sandboxId: name,
      objectId: namespace.idFromName(name).toString(),
      startedAt: body.startedAt,
      expiresAt: new Date(Date.parse(body.startedAt) + 3600 * 1000).toISOString(),
      container: { runtime: "unavailable", running: null },
    });
    assert.ok(Date.parse(body.startedAt) >= before - 5);
    // The start time is stored: a second call reports the same one.
    assert.equal((await status(worker, "acme", "status-1")).startedAt, body.startedAt);
  });

  test("unknown paths are 404", async () => {
    for (const path of [
      "/",
      "/v1/tenants/acme/sessions",
      "/v1/tenants/acme/sessions/s1/",
      "/v1/tenants/acme/sessions/s1/run",
      "/v2/tenants/acme/sessions/s1",
      "/v1/tenants/acme/sessions/s1/exec/x",
    ]) {
      const response = await worker.request(path, { headers: await bearer() });
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { error: "not_found", message: "no such route" });
    }
  });

  test("wrong methods are 405 with Allow", async () => {
    for (const [method, path, allow] of [
      ["POST", "/v1/tenants/acme/sessions/s1", "GET, DELETE"],
      ["PUT", "/v1/tenants/acme/sessions/s1", "GET, DELETE"],
      ["GET", "/v1/tenants/acme/sessions/s1/exec", "POST"],
    ]) {
      const response = await worker.request(path, { method, headers: await bearer() });
      assert.equal(response.status, 405, `${method} ${path}`);
      assert.equal(response.headers.get("allow"), allow);
      assert.deepEqual(await response.json(), { error: "method_not_allowed", message: `use ${allow}` });
    }
  });

  test("tenant and session outside the charset or length are 400", async () => {
    for (const [tenant, session] of [
      ["acme", "a".repeat(65)],
      ["t".repeat(65), "s1"],
      ["acme", "-leading-dash"],
      ["acme", "dot.ted"],
      ["ac%00me", "s1"],
      ["acme", "s%2F1"],
      ["acme", "caf%C3%A9"],
      ["_x", "s1"],
    ]) {
      const response = await worker.request(`/v1/tenants/${tenant}/sessions/${session}`, { headers: await bearer() });
      assert.equal(response.status, 400, `${tenant}/${session}`);
      assert.deepEqual(await response.json(), {
        error: "invalid_id",
        message: "tenant and session must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit",
      });
    }
    // 64 characters is the limit, not 63.
    await status(worker, "acme", "a".repeat(64));
  });

  test("two tenants with the same session name get different Durable Objects", async () => {
    const a = await status(worker, "tenant-a", "shared");
    const b = await status(worker, "tenant-b", "shared");
    assert.notEqual(a.sandboxId, b.sandboxId);
    assert.notEqual(a.objectId, b.objectId);
    assert.equal(a.sandboxId, expectedSandboxName(SANDBOX_ID_KEY, "tenant-a", "shared"));
    assert.equal(b.sandboxId, expectedSandboxName(SANDBOX_ID_KEY, "tenant-b", "shared"));
  });

  test("tenant/session boundaries cannot be shifted to collide", async () => {
    const a = await status(worker, "a", "b-c");
    const b = await status(worker, "a-b", "c");
    assert.notEqual(a.objectId, b.objectId);
  });

  test("the client's strings are never used as the object name", async () => {
    const body = await status(worker, "acme", "guessable");
    const namespace = await worker.sandboxNamespace();
    for (const guess of ["guessable", "acme", "acme/guessable", "acme:guessable", "acme\u0000guessable", "acmeguessable"]) {
      assert.notEqual(namespace.idFromName(guess).toString(), body.objectId, JSON.stringify(guess));
    }
    // Only the HMAC under the deployment's key names it.
    assert.equal(
      namespace.idFromName(expectedSandboxName(SANDBOX_ID_KEY, "acme", "guessable")).toString(),
      body.objectId,
    );
    assert.notEqual(
      namespace.idFromName(expectedSandboxName(`${SANDBOX_ID_KEY}-other`, "acme", "guessable")).toString(),
      body.objectId,
    );
  });

  test("the object refuses an internal call whose name does not map to it", async () => {
    const namespace = await worker.sandboxNamespace();
    const name = expectedSandboxName(SANDBOX_ID_KEY, "acme", "victim");
    const other = expectedSandboxName(SANDBOX_ID_KEY, "mallory", "victim");
    const stub = namespace.get(namespace.idFromName(name));
    for (const forged of [other, "", "acme", name.toUpperCase()]) {
      const response = await stub.fetch("https://sandbox.internal/status", {
        method: "POST",
        headers: { "x-sandboxkit-sandbox-id": forged },
      });
      assert.equal(response.status, 403, JSON.stringify(forged));
      assert.deepEqual(await response.json(), {
        error: "forbidden",
        message: "sandbox id does not match this object",
      });
    }
  });

  test("the object validates an exec body itself", async () => {
    const namespace = await worker.sandboxNamespace();
    const name = expectedSandboxName(SANDBOX_ID_KEY, "acme", "direct-body");
    const response = await namespace.get(namespace.idFromName(name)).fetch("https://sandbox.internal/exec", {
      method: "POST",
      headers: { "x-sandboxkit-sandbox-id": name },
      body: JSON.stringify({ command: "rm -rf /" }),
    });
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      error: "invalid_body",
      message: "command must be an array of 1 to 256 strings",
    });
  });

  test("DELETE ends the sandbox; the pair then answers 410 for status and exec", async () => {
    const path = "/v1/tenants/acme/sessions/to-delete";
    const started = await status(worker, "acme", "to-delete");
    const deleted = await worker.request(path, { method: "DELETE", headers: await bearer() });
    assert.equal(deleted.status, 200);
    const deletedBody = await deleted.json();
    assert.deepEqual(deletedBody, { sandboxId: started.sandboxId, deleted: true, deletedAt: deletedBody.deletedAt });
    const gone = {
      error: "sandbox_deleted",
      message: "sandbox was deleted; start a new session",
      sandboxId: started.sandboxId,
      startedAt: started.startedAt,
      deletedAt: deletedBody.deletedAt,
    };
    for (const init of [
      { headers: await bearer() },
      { method: "DELETE", headers: await bearer() },
    ]) {
      const response = await worker.request(path, init);
      assert.equal(response.status, 410);
      assert.deepEqual(await response.json(), gone);
    }
    const exec = await worker.request(`${path}/exec`, {
      method: "POST",
      headers: await bearer(),
      body: JSON.stringify({ command: ["true"] }),
    });
    assert.equal(exec.status, 410);
    assert.deepEqual(await exec.json(), gone);
  });
});

test("a different SANDBOX_ID_KEY gives every pair a different Durable Object", async () => {
  const otherKey = "another-deployment-key-000000000000000000000000";
  const first = await startWorker();
  const second = await startWorker({ bindings: baseBindings({ SANDBOX_ID_KEY: otherKey }) });
  try {
    const a = await status(first, "acme", "s1");
    const b = await status(second, "acme", "s1");
    assert.equal(a.sandboxId, expectedSandboxName(SANDBOX_ID_KEY, "acme", "s1"));
    assert.equal(b.sandboxId, expectedSandboxName(otherKey, "acme", "s1"));
    assert.notEqual(a.sandboxId, b.sandboxId);
    assert.notEqual(a.objectId, b.objectId);
  } finally {
    await first.dispose();
    await second.dispose();
  }
});
