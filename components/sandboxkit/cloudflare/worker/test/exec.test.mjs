// The exec route without a container runtime (miniflare has none, and no Docker engine runs
// here): it must say so plainly, refuse when egress cannot be controlled, and audit every command.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  SANDBOX_ID_KEY,
  JWT_SIGNING_KEY,
  baseBindings,
  bearer,
  events,
  expectedSandboxName,
  startWorker,
  waitForEvents,
} from "../test-support/helpers.mjs";

const EXEC_PATH = "/v1/tenants/acme/sessions/exec-1/exec";

async function post(worker, body, path = EXEC_PATH, headers = undefined) {
  return worker.request(path, {
    method: "POST",
    headers: { ...(headers ?? (await bearer())), "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("exec", () => {
  let worker;
  before(async () => {
    worker = await startWorker();
  });
  after(async () => {
    await worker.dispose();
  });

  test("without a container runtime exec is 503 with one audit line and no command text", async () => {
    const secret = "s3cr3t-marker-7f1d";
    const command = ["sh", "-c", `curl -H 'token: ${secret}' https://pypi.org/`];
    const before = events(worker.stdout, "sandbox.exec").length;
    const response = await post(worker, { command });
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), {
      error: "container_runtime_unavailable",
      message: "container runtime unavailable: this Durable Object has no container attached",
    });

    const all = await waitForEvents(worker.stdout, "sandbox.exec", before + 1);
    assert.equal(all.length, before + 1, "exactly one audit line per command");
    const line = all.at(-1);
    const argvJson = JSON.stringify(command);
    assert.deepEqual(line, {
      event: "sandbox.exec",
      sandbox: expectedSandboxName(SANDBOX_ID_KEY, "acme", "exec-1"),
      tenant: createHmac("sha256", SANDBOX_ID_KEY).update("\u0001tenant\u0000acme").digest("hex"),
      commandArgs: 3,
      commandBytes: Buffer.byteLength(argvJson),
      commandHmac: createHmac("sha256", SANDBOX_ID_KEY).update(`\u0001command\u0000${argvJson}`).digest("hex"),
      status: "container_runtime_unavailable",
      exitCode: null,
      durationMs: line.durationMs,
    });
    assert.ok(Number.isInteger(line.durationMs) && line.durationMs >= 0);
    const printed = worker.stdout.join("\n");
    assert.equal(printed.includes(secret), false);
    assert.equal(printed.includes(JWT_SIGNING_KEY), false);
  });

  test("two commands give two audit lines", async () => {
    const before = events(worker.stdout, "sandbox.exec").length;
    assert.equal((await post(worker, { command: ["true"] })).status, 503);
    assert.equal((await post(worker, { command: ["false"] })).status, 503);
    const all = await waitForEvents(worker.stdout, "sandbox.exec", before + 2);
    assert.equal(all.length, before + 2);
    assert.notEqual(all.at(-1).commandHmac, all.at(-2).commandHmac);
  });

  for (const [label, body, message] of [
    ["not JSON", "command=ls", "body must be JSON"],
    ["an array", "[]", "body must be a JSON object"],
    ["no command", {}, "command must be an array of 1 to 256 strings"],
    ["a string command", { command: "ls -l" }, "command must be an array of 1 to 256 strings"],
    ["an empty command", { command: [] }, "command must be an array of 1 to 256 strings"],
    ["too many arguments", { command: Array(257).fill("x") }, "command must be an array of 1 to 256 strings"],
    ["a number argument", { command: ["ls", 1] }, "command items must be strings without NUL characters"],
    ["a NUL in an argument", { command: ["ls", "a\u0000b"] }, "command items must be strings without NUL characters"],
    ["an empty program", { command: ["", "x"] }, "command[0] must not be empty"],
    ["an unknown field", { command: ["ls"], env: { A: "1" } }, "unknown field 'env'"],
  ]) {
    test(`a body with ${label} is 400 and never reaches the object`, async () => {
      const before = events(worker.stdout, "sandbox.exec").length;
      const response = await post(worker, body);
      assert.equal(response.status, 400);
      assert.deepEqual(await response.json(), { error: "invalid_body", message });
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(events(worker.stdout, "sandbox.exec").length, before);
    });
  }

  test("a body over 64 KiB is 413, with or without Content-Length", async () => {
    const tooLarge = {
      error: "body_too_large",
      message: "exec body must be at most 65536 bytes",
    };
    const response = await post(worker, { command: ["echo", "x".repeat(64 * 1024)] });
    assert.equal(response.status, 413);
    assert.deepEqual(await response.json(), tooLarge);

    // Chunked: no Content-Length to refuse up front, so the stream itself is cut off.
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const chunked = await worker.request(EXEC_PATH, { method: "POST", headers: await bearer(), body, duplex: "half" });
    assert.equal(chunked.status, 413);
    assert.deepEqual(await chunked.json(), tooLarge);

    // Exactly at the limit is still read (and then judged on its content).
    const atLimit = JSON.stringify({ command: ["echo", ""] });
    const padded = atLimit.replace('""', `"${"y".repeat(64 * 1024 - atLimit.length)}"`);
    assert.equal(Buffer.byteLength(padded), 64 * 1024);
    const before = events(worker.stdout, "sandbox.exec").length;
    assert.equal((await post(worker, padded)).status, 503);
    // Only the accepted body reached the object and was audited.
    assert.equal((await waitForEvents(worker.stdout, "sandbox.exec", before + 1)).length, before + 1);
  });
});

describe("exec fails closed on egress configuration", () => {
  const refused = (detail) => ({
    error: "misconfigured",
    message: `egress policy invalid, all egress denied and exec refused: ${detail}`,
  });

  for (const [label, value, detail] of [
    ["missing", undefined, "EGRESS_POLICY is not set"],
    ["not JSON", "{mode: deny}", "EGRESS_POLICY is not valid JSON"],
    ["an unknown mode", '{"mode":"allow-all"}', "EGRESS_POLICY.mode must be one of deny, allowlist, open"],
    ["an allowlist without allow", '{"mode":"allowlist"}', "EGRESS_POLICY.allow is required when mode is allowlist"],
    [
      "an IP entry",
      '{"mode":"allowlist","allow":[{"host":"10.0.0.1","port":443}]}',
      "EGRESS_POLICY.allow[0].host must be a DNS name, not an IP address",
    ],
  ]) {
    test(`EGRESS_POLICY ${label}: exec is 500, status still works`, async () => {
      const worker = await startWorker({ bindings: baseBindings({ EGRESS_POLICY: value }) });
      try {
        const response = await post(worker, { command: ["true"] });
        assert.equal(response.status, 500);
        assert.deepEqual(await response.json(), refused(detail));
        const status = await worker.request("/v1/tenants/acme/sessions/exec-1", { headers: await bearer() });
        assert.equal(status.status, 200);
        // Refused by the Worker: the command never reached the object, so nothing was audited.
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.equal(events(worker.stdout, "sandbox.exec").length, 0);
      } finally {
        await worker.dispose();
      }
    });
  }

  test("the object refuses exec on its own when the policy is invalid", async () => {
    // Called past the Worker, as another script bound to the namespace could.
    const worker = await startWorker({ bindings: baseBindings({ EGRESS_POLICY: '{"mode":"open","x":1}' }) });
    try {
      const name = expectedSandboxName(SANDBOX_ID_KEY, "acme", "direct");
      const namespace = await worker.sandboxNamespace();
      const response = await namespace.get(namespace.idFromName(name)).fetch("https://sandbox.internal/exec", {
        method: "POST",
        headers: { "x-sandboxkit-sandbox-id": name, "content-type": "application/json" },
        body: JSON.stringify({ command: ["true"] }),
      });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), refused("EGRESS_POLICY has unknown key 'x'"));
      const audit = await waitForEvents(worker.stdout, "sandbox.exec", 1);
      assert.equal(audit.length, 1);
      assert.deepEqual([audit[0].sandbox, audit[0].status], [name, "egress_policy_invalid"]);
    } finally {
      await worker.dispose();
    }
  });

  test("without ctx.exports (compatibility date before 2025-11-17) no container is started", async () => {
    const worker = await startWorker({ compatibilityDate: "2025-11-16" });
    try {
      const response = await post(worker, { command: ["true"] });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), {
        error: "egress_gateway_unavailable",
        message:
          "ctx.exports.EgressGateway is not available (needs compatibility date 2025-11-17 or later); refusing to start a container without egress control",
      });
      const audit = await waitForEvents(worker.stdout, "sandbox.exec", 1);
      assert.equal(audit.length, 1);
      assert.equal(audit[0].status, "egress_gateway_unavailable");
    } finally {
      await worker.dispose();
    }
  });

  test("deny installs no interception, so it needs no gateway: exec goes on to the container", async () => {
    const worker = await startWorker({
      compatibilityDate: "2025-11-16",
      bindings: baseBindings({ EGRESS_POLICY: '{"mode":"deny","allow":[]}' }),
    });
    try {
      const response = await post(worker, { command: ["true"] });
      assert.equal(response.status, 503);
      assert.equal((await response.json()).error, "container_runtime_unavailable");
    } finally {
      await worker.dispose();
    }
  });
});
