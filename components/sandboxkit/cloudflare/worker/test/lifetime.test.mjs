// Hard lifetime cap: MAX_LIFETIME_SECONDS counts from the sandbox's first request (stored in the
// Durable Object), after which every route answers 410 and the container is stopped.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { baseBindings, bearer, events, startWorker, waitForEvents } from "../test-support/helpers.mjs";

const PATH = "/v1/tenants/acme/sessions/short-lived";

test("after MAX_LIFETIME_SECONDS the sandbox answers 410 for status, exec and delete", async () => {
  const worker = await startWorker({ bindings: baseBindings({ MAX_LIFETIME_SECONDS: "1" }) });
  try {
    const first = await worker.request(PATH, { headers: await bearer() });
    assert.equal(first.status, 200);
    const { sandboxId, startedAt, expiresAt } = await first.json();
    assert.equal(Date.parse(expiresAt) - Date.parse(startedAt), 1000);

    // Still inside the cap: the object keeps its start time and answers 200.
    const early = await worker.request(PATH, { headers: await bearer() });
    assert.equal(early.status, 200);
    assert.equal((await early.json()).startedAt, startedAt);

    // Wait past the cap (bounded: one sleep, computed from the reported deadline).
    const wait = Date.parse(expiresAt) + 250 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));

    const expired = {
      error: "sandbox_expired",
      message: "sandbox reached its maximum lifetime of 1 s and was stopped; start a new session",
      sandboxId,
      startedAt,
      expiredAt: expiresAt,
    };
    const status = await worker.request(PATH, { headers: await bearer() });
    assert.equal(status.status, 410);
    assert.deepEqual(await status.json(), expired);

    const exec = await worker.request(`${PATH}/exec`, {
      method: "POST",
      headers: await bearer(),
      body: JSON.stringify({ command: ["echo", "late"] }),
    });
    assert.equal(exec.status, 410);
    assert.deepEqual(await exec.json(), expired);

    const del = await worker.request(PATH, { method: "DELETE", headers: await bearer() });
    assert.equal(del.status, 410);
    assert.deepEqual(await del.json(), expired);

    // The refused command still gets its one audit line, and the end is recorded once.
    const audit = await waitForEvents(worker.stdout, "sandbox.exec", 1);
    assert.equal(audit.length, 1);
    assert.equal(audit[0].status, "sandbox_ended");
    assert.equal(audit[0].sandbox, sandboxId);
    const ended = events(worker.stdout, "sandbox.ended");
    assert.equal(ended.length, 1);
    assert.deepEqual(
      [ended[0].sandbox, ended[0].reason, ended[0].startedAt, ended[0].endedAt],
      [sandboxId, "expired", startedAt, expiresAt],
    );

    // Another session of the same tenant is unaffected.
    const other = await worker.request("/v1/tenants/acme/sessions/fresh", { headers: await bearer() });
    assert.equal(other.status, 200);
  } finally {
    await worker.dispose();
  }
});

test("the cap counts from the first request, not from each request", async () => {
  const worker = await startWorker({ bindings: baseBindings({ MAX_LIFETIME_SECONDS: "2" }) });
  try {
    const first = await (await worker.request(PATH, { headers: await bearer() })).json();
    // Keep touching the sandbox: activity must not extend a hard cap.
    const until = Date.parse(first.expiresAt) + 250;
    let last;
    for (let i = 0; i < 40 && Date.now() < until; i++) {
      last = await worker.request(PATH, { headers: await bearer() });
      if (last.status !== 200) break;
      assert.equal((await last.json()).startedAt, first.startedAt);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const response = last.status === 410 ? last : await worker.request(PATH, { headers: await bearer() });
    assert.equal(response.status, 410);
    assert.equal((await response.json()).expiredAt, first.expiresAt);
    assert.equal(events(worker.stdout, "sandbox.exec").length, 0);
  } finally {
    await worker.dispose();
  }
});

test("the lifetime alarm ends the sandbox with no request after the deadline", async () => {
  const worker = await startWorker({ bindings: baseBindings({ MAX_LIFETIME_SECONDS: "1" }) });
  try {
    const { sandboxId, startedAt, expiresAt } = await (await worker.request(PATH, { headers: await bearer() })).json();
    // No request from here on: only the Durable Object alarm can end it.
    const ended = await waitForEvents(worker.stdout, "sandbox.ended", 1, { timeoutMs: 4000 });
    assert.equal(ended.length, 1);
    assert.deepEqual(ended[0], {
      event: "sandbox.ended",
      sandbox: sandboxId,
      tenant: ended[0].tenant,
      reason: "expired",
      trigger: "alarm",
      startedAt,
      endedAt: expiresAt,
    });
    assert.equal((await worker.request(PATH, { headers: await bearer() })).status, 410);
  } finally {
    await worker.dispose();
  }
});

test("a lowered MAX_LIFETIME_SECONDS applies to running sandboxes at their next request", async () => {
  const persistDir = await mkdtemp(join(tmpdir(), "sandboxkit-cf-"));
  try {
    const first = await startWorker({ bindings: baseBindings({ MAX_LIFETIME_SECONDS: "3600" }), persistDir });
    let started;
    try {
      started = await (await first.request(PATH, { headers: await bearer() })).json();
      assert.equal(Date.parse(started.expiresAt) - Date.parse(started.startedAt), 3600 * 1000);
    } finally {
      await first.dispose();
    }
    // Redeploy with a 1 s cap. The alarm stored by the first run is an hour away, so only the
    // check on each request can end the sandbox now.
    const second = await startWorker({ bindings: baseBindings({ MAX_LIFETIME_SECONDS: "1" }), persistDir });
    try {
      const wait = Date.parse(started.startedAt) + 1100 - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const response = await second.request(PATH, { headers: await bearer() });
      assert.equal(response.status, 410);
      const expiredAt = new Date(Date.parse(started.startedAt) + 1000).toISOString();
      assert.deepEqual(await response.json(), {
        error: "sandbox_expired",
        message: "sandbox reached its maximum lifetime of 1 s and was stopped; start a new session",
        sandboxId: started.sandboxId,
        startedAt: started.startedAt,
        expiredAt,
      });
      const ended = await waitForEvents(second.stdout, "sandbox.ended", 1);
      assert.equal(ended.length, 1);
      assert.deepEqual([ended[0].trigger, ended[0].endedAt], ["request", expiredAt]);
    } finally {
      await second.dispose();
    }
  } finally {
    await rm(persistDir, { recursive: true, force: true });
  }
});
