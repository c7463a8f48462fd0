// Egress at the Worker boundary, inside workerd: requests go through Sandbox.probeEgress, which
// calls the same EgressGateway fetcher the Durable Object hands to
// ctx.container.interceptAllOutboundHttp. miniflare's outboundService maps the allowlisted
// hostnames to a loopback stand-in server; any other outbound request is recorded as unexpected.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  SANDBOX_ID_KEY,
  baseBindings,
  bearer,
  events,
  expectedSandboxName,
  startStandIn,
  startWorker,
} from "../test-support/helpers.mjs";

/** outboundService that forwards `hosts` (or every host when null) to the stand-in. */
function mapTo(standIn, unexpected, hosts) {
  return async (request) => {
    const url = new URL(request.url);
    if (hosts !== null && !hosts.has(url.hostname)) {
      unexpected.push(request.url);
      return new Response("unexpected outbound", { status: 599 });
    }
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    const upstream = await fetch(`http://127.0.0.1:${standIn.port}${url.pathname}${url.search}`, {
      method: request.method,
      headers: { "x-original-url": request.url, "content-type": request.headers.get("content-type") ?? "text/plain" },
      body: hasBody ? await request.arrayBuffer() : undefined,
      redirect: "manual",
    });
    return new Response(await upstream.arrayBuffer(), { status: upstream.status, headers: upstream.headers });
  };
}

function denied(reason) {
  return { error: "egress_denied", reason };
}

describe("allowlist policy at the gateway", () => {
  let standIn;
  let worker;
  let stub;
  const unexpected = [];

  before(async () => {
    standIn = await startStandIn((req, res) => {
      if (req.url === "/redirect") {
        res.writeHead(302, { location: "https://evil.example/collect" });
        res.end();
        return;
      }
      res.end("stand-in ok");
    });
    worker = await startWorker({
      outbound: mapTo(
        standIn,
        unexpected,
        new Set(["pypi.org", "files.pythonhosted.org", "a.b.c.pythonhosted.org", "log-probe.pythonhosted.org"]),
      ),
    });
    // Give the object its sandbox id through the Worker so egress log lines carry it.
    assert.equal((await worker.request("/v1/tenants/acme/sessions/egress", { headers: await bearer() })).status, 200);
    const namespace = await worker.sandboxNamespace();
    stub = namespace.get(namespace.idFromName(expectedSandboxName(SANDBOX_ID_KEY, "acme", "egress")));
  });

  after(async () => {
    await worker.dispose();
    await standIn.close();
  });

  test("a listed host and port passes and reaches the stand-in", async () => {
    const seenBefore = standIn.seen.length;
    const response = await stub.probeEgress("https://pypi.org/simple/requests/");
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "stand-in ok");
    assert.equal(standIn.seen.length, seenBefore + 1);
    const seen = standIn.seen.at(-1);
    assert.equal(seen.method, "GET");
    assert.equal(seen.path, "/simple/requests/");
    assert.equal(seen.headers["x-original-url"], "https://pypi.org/simple/requests/");
  });

  test("a wildcard entry passes subdomains, with method and body intact", async () => {
    const response = await stub.probeEgress("https://files.pythonhosted.org/packages/upload", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "payload-1",
    });
    assert.equal(response.status, 200);
    const seen = standIn.seen.at(-1);
    assert.deepEqual([seen.method, seen.path, seen.body], ["POST", "/packages/upload", "payload-1"]);
  });

  test("a wildcard entry passes names at any depth below it", async () => {
    const response = await stub.probeEgress("https://A.B.C.PythonHosted.org./simple/");
    assert.equal(response.status, 200);
    assert.equal(standIn.seen.at(-1).headers["x-original-url"], "https://a.b.c.pythonhosted.org/simple/");
  });

  test("a trailing-dot host is normalised before both the decision and the forward", async () => {
    const response = await stub.probeEgress("https://PyPI.org./simple/");
    assert.equal(response.status, 200);
    assert.equal(standIn.seen.at(-1).headers["x-original-url"], "https://pypi.org/simple/");
  });

  for (const [url, reason] of [
    ["https://evil.example/", "evil.example:443 is not in the allowlist"],
    ["https://pythonhosted.org/", "pythonhosted.org:443 is not in the allowlist"],
    ["https://pypi.org.evil.example/", "pypi.org.evil.example:443 is not in the allowlist"],
    ["https://pypi.org:8443/simple/", "pypi.org:8443 is not in the allowlist"],
    ["http://pypi.org/simple/", "pypi.org:80 is not in the allowlist"],
    ["http://127.0.0.1/", "IP literal hosts are not allowed"],
    ["http://2130706433/", "IP literal hosts are not allowed"],
    ["http://0x7f.1/", "IP literal hosts are not allowed"],
    ["http://[::1]/", "IP literal hosts are not allowed"],
    ["http://169.254.169.254/latest/meta-data/", "IP literal hosts are not allowed"],
    ["http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "IP literal hosts are not allowed"],
    ["https://pythonhosted.org./", "pythonhosted.org:443 is not in the allowlist"],
    // workerd drops userinfo when the URL becomes a Request, so the gateway judges the real
    // host; decideEgress also refuses userinfo on its own (see decide-egress.test.mjs).
    ["https://pypi.org@evil.example/", "evil.example:443 is not in the allowlist"],
    ["https://pypi.org:443@evil.example/", "evil.example:443 is not in the allowlist"],
  ]) {
    test(`blocked: ${url}`, async () => {
      const seenBefore = standIn.seen.length;
      const unexpectedBefore = unexpected.length;
      const response = await stub.probeEgress(url);
      assert.equal(response.status, 403);
      assert.deepEqual(await response.json(), denied(reason));
      // Blocked in the gateway: neither the stand-in nor any other outbound target saw it.
      assert.equal(standIn.seen.length, seenBefore);
      assert.equal(unexpected.length, unexpectedBefore);
    });
  }

  test("redirects go back to the container instead of being followed", async () => {
    const unexpectedBefore = unexpected.length;
    const response = await stub.probeEgress("https://pypi.org/redirect");
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), "https://evil.example/collect");
    assert.equal(standIn.seen.at(-1).path, "/redirect");
    assert.equal(unexpected.length, unexpectedBefore);
    // The container's next hop is decided afresh.
    const next = await stub.probeEgress(response.headers.get("location"));
    assert.equal(next.status, 403);
  });

  test("each decision is logged once with the sandbox id, never with the path or query", async () => {
    // Hosts used by no other test, so earlier lines still in flight cannot be confused with these.
    assert.equal((await stub.probeEgress("https://log-probe.pythonhosted.org/simple/?token=abc123")).status, 200);
    assert.equal((await stub.probeEgress("https://log-probe.example/exfil?data=abc123")).status, 403);
    const mine = () =>
      events(worker.stdout, "sandbox.egress").filter((line) => line.host?.startsWith("log-probe."));
    const until = Date.now() + 3000;
    while (mine().length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 150));
    const lines = mine();
    const sandbox = expectedSandboxName(SANDBOX_ID_KEY, "acme", "egress");
    assert.deepEqual(lines, [
      {
        event: "sandbox.egress",
        sandbox,
        allowed: true,
        reason: "log-probe.pythonhosted.org:443 matches *.pythonhosted.org:443",
        scheme: "https",
        host: "log-probe.pythonhosted.org",
        port: 443,
      },
      {
        event: "sandbox.egress",
        sandbox,
        allowed: false,
        reason: "log-probe.example:443 is not in the allowlist",
        scheme: "https",
        host: "log-probe.example",
        port: 443,
      },
    ]);
    assert.equal(worker.stdout.join("\n").includes("abc123"), false);
  });

});

describe("other modes at the gateway", () => {
  let standIn;
  before(async () => {
    standIn = await startStandIn();
  });
  after(async () => {
    await standIn.close();
  });

  async function withPolicy(policy, fn) {
    const unexpected = [];
    const worker = await startWorker({
      bindings: baseBindings({ EGRESS_POLICY: policy }),
      outbound: mapTo(standIn, unexpected, null),
    });
    try {
      const namespace = await worker.sandboxNamespace();
      await fn(namespace.get(namespace.idFromName("probe")), worker);
      assert.deepEqual(unexpected, []);
    } finally {
      await worker.dispose();
    }
  }

  test("deny blocks even hosts that an allow list names", async () => {
    const policy = JSON.stringify({ mode: "deny", allow: [{ host: "pypi.org", port: 443 }] });
    await withPolicy(policy, async (stub) => {
      const seenBefore = standIn.seen.length;
      for (const url of ["https://pypi.org/simple/", "http://127.0.0.1/", "https://example.com/"]) {
        const response = await stub.probeEgress(url);
        assert.equal(response.status, 403, url);
        assert.deepEqual(await response.json(), denied("egress mode 'deny' blocks all requests"));
      }
      assert.equal(standIn.seen.length, seenBefore);
    });
  });

  test("an invalid policy blocks everything", async () => {
    await withPolicy('{"mode":"allowlist","allow":[{"host":"pypi.org"}]}', async (stub) => {
      const seenBefore = standIn.seen.length;
      const response = await stub.probeEgress("https://pypi.org/simple/");
      assert.equal(response.status, 403);
      assert.deepEqual(
        await response.json(),
        denied("invalid egress policy: EGRESS_POLICY.allow[0].port must be an integer from 1 to 65535"),
      );
      assert.equal(standIn.seen.length, seenBefore);
    });
  });

  test("open forwards public http(s) destinations on any port, IP literals included", async () => {
    await withPolicy('{"mode":"open"}', async (stub) => {
      const seenBefore = standIn.seen.length;
      for (const url of ["https://example.com/a", "http://198.51.99.7:8080/b", "https://[2a04:4e42::223]/c"]) {
        const response = await stub.probeEgress(url);
        assert.equal(response.status, 200, url);
        assert.equal(await response.text(), "stand-in ok");
      }
      assert.deepEqual(
        standIn.seen.slice(seenBefore).map((seen) => seen.headers["x-original-url"]),
        ["https://example.com/a", "http://198.51.99.7:8080/b", "https://[2a04:4e42::223]/c"],
      );
    });
  });

  test("open refuses non-public destinations before any fetch", async () => {
    await withPolicy('{"mode":"open"}', async (stub) => {
      const seenBefore = standIn.seen.length;
      for (const [url, reason] of [
        ["http://169.254.169.254/latest/meta-data/", "169.254.169.254:80 is not a public address (169.254.0.0/16)"],
        ["http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "[64:ff9b::a9fe:a9fe]:80 is not a public address (::/8)"],
        ["http://[::ffff:a9fe:a9fe]/", "[::ffff:a9fe:a9fe]:80 is not a public address (::/8)"],
        ["http://127.1:8080/", "127.0.0.1:8080 is not a public address (127.0.0.0/8)"],
        ["http://metadata.google.internal/", "metadata.google.internal:80 is an internal name (.internal)"],
      ]) {
        const response = await stub.probeEgress(url);
        assert.equal(response.status, 403, url);
        assert.deepEqual(await response.json(), denied(reason));
      }
      assert.equal(standIn.seen.length, seenBefore);
    });
  });

  test("a port belongs to its entry only", async () => {
    const policy = JSON.stringify({ mode: "allowlist", allow: [{ host: "github.com", port: 80 }] });
    await withPolicy(policy, async (stub) => {
      const seenBefore = standIn.seen.length;
      assert.equal((await stub.probeEgress("http://github.com/x")).status, 200);
      const response = await stub.probeEgress("https://github.com/x");
      assert.equal(response.status, 403);
      assert.deepEqual(await response.json(), denied("github.com:443 is not in the allowlist"));
      assert.deepEqual(
        standIn.seen.slice(seenBefore).map((seen) => seen.headers["x-original-url"]),
        ["http://github.com/x"],
      );
    });
  });
});

test("probeEgress sees an unset policy as deny", async () => {
  const unexpected = [];
  const standIn = await startStandIn();
  const worker = await startWorker({
    bindings: baseBindings({ EGRESS_POLICY: undefined }),
    outbound: mapTo(standIn, unexpected, null),
  });
  try {
    const namespace = await worker.sandboxNamespace();
    const response = await namespace.get(namespace.idFromName("probe")).probeEgress("https://pypi.org/");
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), denied("invalid egress policy: EGRESS_POLICY is not set"));
    assert.deepEqual(standIn.seen, []);
    assert.deepEqual(unexpected, []);
    assert.equal(events(worker.stdout, "sandbox.exec").length, 0);
  } finally {
    await worker.dispose();
    await standIn.close();
  }
});
