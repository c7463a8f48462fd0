// Which hosts get a path out of the container at all: the interceptions the Durable Object
// installs (egressInterceptions / installEgressInterceptions, run in workerd), and the whole
// path of a probe: the documented platform routing (test-support/platform.js) over those
// interceptions, then the gateway's decision.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startDecideHarness } from "../test-support/helpers.mjs";

const POLICY = {
  mode: "allowlist",
  allow: [
    { host: "pypi.org", port: 443 },
    { host: "pythonhosted.org", port: 443, wildcard: true },
    { host: "github.com", port: 80 },
    { host: "PyPI.org.", port: 443 },
  ],
};
const HTTPS = (pattern) => ({ method: "interceptOutboundHttps", pattern });
const HTTP = (pattern) => ({ method: "interceptOutboundHttp", pattern });
const DROPPED = (hostPort) => ({
  admitted: false,
  stage: "platform",
  reason: `no interception for ${hostPort}; enableInternet false drops it`,
  interception: null,
});
const GATEWAY = (admitted, reason, interception) => ({ admitted, stage: "gateway", reason, interception });

describe("interceptions in workerd", () => {
  let harness;
  before(async () => {
    harness = await startDecideHarness();
  });
  after(async () => {
    await harness.dispose();
  });

  const ask = (body) => harness.ask(body);

  test("allowlist: one interception per listed host and port, none catch-all", async () => {
    assert.deepEqual(await ask({ op: "plan", policy: POLICY }), [
      HTTPS("pypi.org"),
      HTTPS("*.pythonhosted.org"),
      HTTP("github.com"),
    ]);
  });

  test("deny and invalid policies install nothing; open installs the catch-alls", async () => {
    const plans = await Promise.all(
      [
        { mode: "deny" },
        { mode: "deny", allow: POLICY.allow },
        { mode: "allowlist", allow: [] },
        { mode: "allowlist", allow: [{ host: "github.com", port: 8443 }] },
        "{",
        null,
      ].map((policy) => ask({ op: "plan", policy })),
    );
    assert.deepEqual(plans, [[], [], [], [], [], []]);
    assert.deepEqual(await ask({ op: "plan", policy: '{"mode":"open"}' }), [
      { method: "interceptAllOutboundHttp" },
      HTTPS("*"),
    ]);
  });

  test("installEgressInterceptions calls ctx.container exactly as planned, gateway last", async () => {
    assert.deepEqual(await ask({ op: "install", policy: POLICY }), [
      { method: "interceptOutboundHttps", args: ["pypi.org", "<gateway>"] },
      { method: "interceptOutboundHttps", args: ["*.pythonhosted.org", "<gateway>"] },
      { method: "interceptOutboundHttp", args: ["github.com", "<gateway>"] },
    ]);
    assert.deepEqual(await ask({ op: "install", policy: { mode: "open" } }), [
      { method: "interceptAllOutboundHttp", args: ["<gateway>"] },
      { method: "interceptOutboundHttps", args: ["*", "<gateway>"] },
    ]);
    assert.deepEqual(await ask({ op: "install", policy: { mode: "deny" } }), []);
  });

  test("an unlisted name gets no interception, and the gateway refuses it if it ever arrives", async () => {
    const probes = [
      { host: "evil.example", port: 443 },
      { host: "pypi.org.evil.example", port: 443 },
      { host: "x.attacker.example", port: 80 },
    ];
    assert.deepEqual(await ask({ op: "probe", policy: POLICY, probes }), [
      DROPPED("evil.example:443"),
      DROPPED("pypi.org.evil.example:443"),
      DROPPED("x.attacker.example:80"),
    ]);
    const decisions = await ask({
      op: "decide",
      cases: ["https://evil.example/", "https://pypi.org.evil.example/", "http://x.attacker.example/"].map((url) => ({ policy: POLICY, url })),
    });
    assert.deepEqual(decisions, [
      { allowed: false, reason: "evil.example:443 is not in the allowlist" },
      { allowed: false, reason: "pypi.org.evil.example:443 is not in the allowlist" },
      { allowed: false, reason: "x.attacker.example:80 is not in the allowlist" },
    ]);
  });

  test("the whole path for the contract's probes", async () => {
    const probes = [
      ["a.b.c.pythonhosted.org", 443],
      ["files.pythonhosted.org", 443],
      ["pythonhosted.org", 443],
      ["files.pythonhosted.org", 80],
      ["github.com", 80],
      ["github.com", 443],
      ["GitHub.COM.", 80],
      ["PYPI.ORG", 443],
      ["www.pypi.org", 443],
      ["pypi.org", 8443],
      ["151.101.0.223", 443],
      ["169.254.169.254", 80],
      ["64:ff9b::a9fe:a9fe", 80],
      ["[64:ff9b::a9fe:a9fe]", 443],
    ].map(([host, port]) => ({ host, port }));
    assert.deepEqual(await ask({ op: "probe", policy: POLICY, probes }), [
      GATEWAY(true, "a.b.c.pythonhosted.org:443 matches *.pythonhosted.org:443", 'interceptOutboundHttps("*.pythonhosted.org")'),
      GATEWAY(true, "files.pythonhosted.org:443 matches *.pythonhosted.org:443", 'interceptOutboundHttps("*.pythonhosted.org")'),
      DROPPED("pythonhosted.org:443"),
      DROPPED("files.pythonhosted.org:80"),
      GATEWAY(true, "github.com:80 matches github.com:80", 'interceptOutboundHttp("github.com")'),
      DROPPED("github.com:443"),
      GATEWAY(true, "github.com:80 matches github.com:80", 'interceptOutboundHttp("github.com")'),
      GATEWAY(true, "pypi.org:443 matches pypi.org:443", 'interceptOutboundHttps("pypi.org")'),
      DROPPED("www.pypi.org:443"),
      {
        admitted: false,
        stage: "platform",
        reason: "port 8443 is never intercepted (only 80 and 443 are); enableInternet false drops it",
        interception: null,
      },
      DROPPED("151.101.0.223:443"),
      DROPPED("169.254.169.254:80"),
      DROPPED("[64:ff9b::a9fe:a9fe]:80"),
      DROPPED("[64:ff9b::a9fe:a9fe]:443"),
    ]);
  });

  test("deny admits nothing; open admits public destinations only", async () => {
    const probes = [
      ["pypi.org", 443],
      ["github.com", 80],
      ["151.101.0.223", 443],
      ["169.254.169.254", 80],
      ["64:ff9b::a9fe:a9fe", 80],
      ["metadata.google.internal", 80],
      ["pypi.org", 22],
    ].map(([host, port]) => ({ host, port }));
    const denied = await ask({ op: "probe", policy: { mode: "deny", allow: POLICY.allow }, probes });
    assert.deepEqual(
      denied,
      probes.map(({ host, port }) =>
        port === 22
          ? { admitted: false, stage: "platform", reason: "port 22 is never intercepted (only 80 and 443 are); enableInternet false drops it", interception: null }
          : DROPPED(host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`),
      ),
    );
    assert.deepEqual(await ask({ op: "probe", policy: { mode: "open" }, probes }), [
      GATEWAY(true, "egress mode 'open' allows the public destination pypi.org:443", 'interceptOutboundHttps("*")'),
      GATEWAY(true, "egress mode 'open' allows the public destination github.com:80", "interceptAllOutboundHttp()"),
      GATEWAY(true, "egress mode 'open' allows the public destination 151.101.0.223:443", 'interceptOutboundHttps("*")'),
      GATEWAY(false, "169.254.169.254:80 is not a public address (169.254.0.0/16)", "interceptAllOutboundHttp()"),
      GATEWAY(false, "[64:ff9b::a9fe:a9fe]:80 is not a public address (::/8)", "interceptAllOutboundHttp()"),
      GATEWAY(false, "metadata.google.internal:80 is an internal name (.internal)", "interceptAllOutboundHttp()"),
      { admitted: false, stage: "platform", reason: "port 22 is never intercepted (only 80 and 443 are); enableInternet false drops it", interception: null },
    ]);
  });
});
