// decideEgress over tricky URL forms, evaluated inside workerd (the URL parser production uses)
// by a small harness Worker that imports src/index.js.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ALLOWLIST_POLICY, startWorker } from "../test-support/helpers.mjs";

const NOT_LISTED = (hostPort) => ({ allowed: false, reason: `${hostPort} is not in the allowlist` });
const IP = { allowed: false, reason: "IP literal hosts are not allowed" };
const USERINFO = { allowed: false, reason: "URLs with userinfo (user@host) are not allowed" };
const PYPI = { allowed: true, reason: "pypi.org:443 matches pypi.org:443" };
const BAD_URL = { allowed: false, reason: "URL could not be parsed" };

// [url, expected decision under ALLOWLIST_POLICY]
const ALLOWLIST_CASES = [
  // Listed host and port, in the spellings that mean the same thing.
  ["https://pypi.org/simple/", PYPI],
  ["https://pypi.org:443/simple/", PYPI],
  ["http://pypi.org:443/", PYPI],
  ["HTTPS://PYPI.ORG/", PYPI],
  ["https://PyPi.Org/", PYPI],
  ["https://pypi.org./simple/", PYPI],
  ["https://pyp%69.org/", PYPI],
  // Default ports follow the scheme; an explicit port wins.
  ["http://pypi.org/", NOT_LISTED("pypi.org:80")],
  ["https://pypi.org:8443/", NOT_LISTED("pypi.org:8443")],
  ["http://pypi.org:80/", NOT_LISTED("pypi.org:80")],
  // Wildcard entries: any depth of subdomain, never the apex or a lookalike.
  ["https://files.pythonhosted.org/x", { allowed: true, reason: "files.pythonhosted.org:443 matches *.pythonhosted.org:443" }],
  ["https://a.b.pythonhosted.org/x", { allowed: true, reason: "a.b.pythonhosted.org:443 matches *.pythonhosted.org:443" }],
  ["https://FILES.PythonHosted.org./x", { allowed: true, reason: "files.pythonhosted.org:443 matches *.pythonhosted.org:443" }],
  ["https://pythonhosted.org/", NOT_LISTED("pythonhosted.org:443")],
  ["https://evilpythonhosted.org/", NOT_LISTED("evilpythonhosted.org:443")],
  ["https://pythonhosted.org.evil.example/", NOT_LISTED("pythonhosted.org.evil.example:443")],
  ["https://files.pythonhosted.org:8443/", NOT_LISTED("files.pythonhosted.org:8443")],
  // A non-wildcard entry does not cover subdomains; suffix tricks do not match.
  ["https://www.pypi.org/", NOT_LISTED("www.pypi.org:443")],
  ["https://pypi.org.evil.example/", NOT_LISTED("pypi.org.evil.example:443")],
  ["https://evilpypi.org/", NOT_LISTED("evilpypi.org:443")],
  ["https://pypi.org-evil.example/", NOT_LISTED("pypi.org-evil.example:443")],
  // Trailing dots: exactly one is the same name; more, or empty labels, are not names.
  ["https://pypi.org../", { allowed: false, reason: "host is not a valid DNS name" }],
  ["https://pypi..org/", { allowed: false, reason: "host is not a valid DNS name" }],
  ["https://.pypi.org/", { allowed: false, reason: "host is not a valid DNS name" }],
  ["https://pypi_org.example/", { allowed: false, reason: "host is not a valid DNS name" }],
  // IP literals in every spelling.
  ["http://127.0.0.1/", IP],
  ["http://2130706433/", IP],
  ["http://0x7f000001/", IP],
  ["http://0x7f.0.0.1/", IP],
  ["http://017700000001/", IP],
  ["http://0177.0.0.1/", IP],
  ["http://127.1/", IP],
  ["http://127.0.0.1./", IP],
  ["https://151.101.0.223/", IP],
  ["http://[::1]/", IP],
  ["http://[::ffff:127.0.0.1]/", IP],
  ["http://[0:0:0:0:0:0:0:1]:443/", IP],
  ["https://[2a04:4e42::223]/", IP],
  ["http://169.254.169.254/latest/meta-data/", IP],
  // Userinfo tricks: refused whatever the host.
  ["http://pypi.org@evil.example/", USERINFO],
  ["https://evil.example@pypi.org/", USERINFO],
  ["https://pypi.org:443@evil.example/", USERINFO],
  ["https://user:pass@pypi.org/", USERINFO],
  ["https://pypi.org%40evil.example/", BAD_URL],
  ["https://evil.example\\@pypi.org/", NOT_LISTED("evil.example:443")],
  ["https://evil.example#@pypi.org/", NOT_LISTED("evil.example:443")],
  ["https://evil.example?@pypi.org/", NOT_LISTED("evil.example:443")],
  // Other schemes and broken URLs.
  ["ftp://pypi.org/", { allowed: false, reason: "scheme 'ftp:' is not allowed; only http and https are" }],
  ["file:///etc/passwd", { allowed: false, reason: "scheme 'file:' is not allowed; only http and https are" }],
  ["wss://pypi.org/", { allowed: false, reason: "scheme 'wss:' is not allowed; only http and https are" }],
  ["pypi.org/simple", BAD_URL],
  ["https://pypi.org:99999/", BAD_URL],
  ["http://1.2.3.4.5/", BAD_URL],
  ["", BAD_URL],
  // Internationalised lookalikes are their punycode names, which are not listed.
  ["https://p\u0443pi.org/", NOT_LISTED("xn--ppi-dfd.org:443")],
];

const OPEN = { mode: "open" };
const DENY = { mode: "deny", allow: ALLOWLIST_POLICY.allow };

// [policy, url, expected] for the other modes and for invalid policies.
const POLICY_CASES = [
  [OPEN, "https://anything.example/", { allowed: true, reason: "egress mode 'open' allows all requests" }],
  [OPEN, "http://127.0.0.1:8080/", { allowed: true, reason: "egress mode 'open' allows all requests" }],
  [OPEN, "ftp://anything.example/", { allowed: false, reason: "scheme 'ftp:' is not allowed; only http and https are" }],
  [OPEN, "not a url", BAD_URL],
  [DENY, "https://pypi.org/", { allowed: false, reason: "egress mode 'deny' blocks all requests" }],
  [DENY, "https://files.pythonhosted.org/", { allowed: false, reason: "egress mode 'deny' blocks all requests" }],
  [{ mode: "allowlist", allow: [] }, "https://pypi.org/", NOT_LISTED("pypi.org:443")],
  // The policy may arrive as the JSON string the binding holds.
  [JSON.stringify(ALLOWLIST_POLICY), "https://pypi.org/", PYPI],
  // Entry hosts are normalised like URL hosts.
  [{ mode: "allowlist", allow: [{ host: "PyPI.org.", port: 443 }] }, "https://pypi.org/", PYPI],
  [{ mode: "allowlist", allow: [{ host: "localhost", port: 8080 }] }, "http://localhost:8080/", { allowed: true, reason: "localhost:8080 matches localhost:8080" }],
];

const INVALID = (error) => ({ allowed: false, reason: `invalid egress policy: ${error}` });
const INVALID_POLICIES = [
  [null, "EGRESS_POLICY is not set"],
  ["", "EGRESS_POLICY is not set"],
  ["{", "EGRESS_POLICY is not valid JSON"],
  ["[]", "EGRESS_POLICY must be a JSON object"],
  [{}, "EGRESS_POLICY.mode must be one of deny, allowlist, open"],
  [{ mode: "OPEN" }, "EGRESS_POLICY.mode must be one of deny, allowlist, open"],
  [{ mode: "open", alow: [] }, "EGRESS_POLICY has unknown key 'alow'"],
  [{ mode: "allowlist" }, "EGRESS_POLICY.allow is required when mode is allowlist"],
  [{ mode: "allowlist", allow: {} }, "EGRESS_POLICY.allow must be an array"],
  [{ mode: "allowlist", allow: ["pypi.org"] }, "EGRESS_POLICY.allow[0] must be an object"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org" }] }, "EGRESS_POLICY.allow[0].port must be an integer from 1 to 65535"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: "443" }] }, "EGRESS_POLICY.allow[0].port must be an integer from 1 to 65535"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: 0 }] }, "EGRESS_POLICY.allow[0].port must be an integer from 1 to 65535"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: 65536 }] }, "EGRESS_POLICY.allow[0].port must be an integer from 1 to 65535"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: 443, wildcard: "yes" }] }, "EGRESS_POLICY.allow[0].wildcard must be a boolean"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: 443, scheme: "https" }] }, "EGRESS_POLICY.allow[0] has unknown key 'scheme'"],
  [{ mode: "allowlist", allow: [{ host: "*.pythonhosted.org", port: 443 }] }, "EGRESS_POLICY.allow[0].host must not contain '*'; set wildcard: true instead"],
  [{ mode: "allowlist", allow: [{ host: "127.0.0.1", port: 80 }] }, "EGRESS_POLICY.allow[0].host must be a DNS name, not an IP address"],
  [{ mode: "allowlist", allow: [{ host: "[::1]", port: 80 }] }, "EGRESS_POLICY.allow[0].host must be a DNS name, not an IP address"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org:443", port: 443 }] }, "EGRESS_POLICY.allow[0].host must be a DNS name, not an IP address"],
  [{ mode: "allowlist", allow: [{ host: "https://pypi.org", port: 443 }] }, "EGRESS_POLICY.allow[0].host must be a DNS name, not an IP address"],
  [{ mode: "allowlist", allow: [{ host: "org", port: 443, wildcard: true }] }, "EGRESS_POLICY.allow[0].host needs at least two labels when wildcard is true"],
  [{ mode: "allowlist", allow: [{ host: "pypi.org", port: 443 }, { host: "x", port: 1, extra: 1 }] }, "EGRESS_POLICY.allow[1] has unknown key 'extra'"],
  [{ mode: "allowlist", allow: [{ host: "pypi org", port: 443 }] }, "EGRESS_POLICY.allow[0].host is not a valid DNS name"],
  [{ mode: "allowlist", allow: [{ host: "", port: 443 }] }, "EGRESS_POLICY.allow[0].host is not a valid DNS name"],
];

describe("decideEgress in workerd", () => {
  let worker;
  let harness;
  before(async () => {
    worker = await startWorker({ withDecideHarness: true });
    harness = await worker.mf.getWorker("decide-harness");
  });
  after(async () => {
    await worker.dispose();
  });

  async function decide(cases) {
    const response = await harness.fetch("http://harness/", { method: "POST", body: JSON.stringify(cases) });
    assert.equal(response.status, 200);
    return response.json();
  }

  test("allowlist decisions over tricky URL forms", async () => {
    const results = await decide(ALLOWLIST_CASES.map(([url]) => ({ policy: ALLOWLIST_POLICY, url })));
    const mismatches = ALLOWLIST_CASES.flatMap(([url, expected], i) =>
      JSON.stringify(results[i]) === JSON.stringify(expected) ? [] : [{ url, expected, actual: results[i] }],
    );
    assert.deepEqual(mismatches, []);
  });

  test("open, deny and string policies", async () => {
    const results = await decide(POLICY_CASES.map(([policy, url]) => ({ policy, url })));
    assert.deepEqual(results, POLICY_CASES.map(([, , expected]) => expected));
  });

  test("an invalid policy denies every URL with the reason", async () => {
    const results = await decide(INVALID_POLICIES.map(([policy]) => ({ policy, url: "https://pypi.org/" })));
    assert.deepEqual(results, INVALID_POLICIES.map(([, error]) => INVALID(error)));
  });

  test("a policy string is parsed per call, never cached across policies", async () => {
    const results = await decide([
      { policy: ALLOWLIST_POLICY, url: "https://pypi.org/" },
      { policy: DENY, url: "https://pypi.org/" },
      { policy: ALLOWLIST_POLICY, url: "https://pypi.org/" },
    ]);
    assert.deepEqual(results.map((r) => r.allowed), [true, false, true]);
  });
});
