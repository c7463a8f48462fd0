// test-support/decide.mjs: the JSON-lines front of the Worker's own egress code for callers
// outside JavaScript (sandboxkit's egress reader), run as the separate process they start.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const POLICY = { mode: "allowlist", allow: [{ host: "pypi.org", port: 443 }] };

test("decide.mjs answers one JSON line per request line, in order", async () => {
  const script = fileURLToPath(new URL("../test-support/decide.mjs", import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stdin.end(
    [
      JSON.stringify({ op: "probe", policy: POLICY, probes: [{ host: "pypi.org", port: 443 }, { host: "evil.example", port: 443 }] }),
      "",
      "not json",
      JSON.stringify({ op: "decide", cases: [{ policy: { mode: "deny" }, url: "https://pypi.org/" }] }),
      JSON.stringify({ op: "nope" }),
    ].join("\n"),
  );
  const code = await new Promise((resolve) => child.on("close", resolve));
  assert.equal(code, 0);
  assert.deepEqual(stdout.trimEnd().split("\n").map((line) => JSON.parse(line)), [
    [
      { admitted: true, stage: "gateway", reason: "pypi.org:443 matches pypi.org:443", interception: 'interceptOutboundHttps("pypi.org")' },
      { admitted: false, stage: "platform", reason: "no interception for evil.example:443; enableInternet false drops it", interception: null },
    ],
    { error: "request is not JSON" },
    [{ allowed: false, reason: "egress mode 'deny' blocks all requests" }],
    { error: 'unknown op "nope"' },
  ]);
});
