// decideEgress over tricky URL forms, evaluated inside workerd (the URL parser production uses)
// by a small harness Worker that imports src/index.js.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ALLOWLIST_POLICY, startDecideHarness } from "../test-support/helpers.mjs";

const NOT_LISTED = (hostPort) => ({ allowed: false, reason: `${hostPort} is not in the allowlist` });
const IP = { allowed: false, reason: "IP literal hosts are not allowed" };
const USERINFO = { allowed: false, reason: "URLs with userinfo (user@host) are not allowed" };
const PYPI = { allowed: true, reason: "pypi.org:443 matches pypi.org:443" };
const BAD_URL = { allowed: false, reason: "URL could not be parsed" };
const GITHUB_80 = { mode: "allowlist", allow: [{ host: "github.com", port: 80 }] };

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
  ["https://a.b.c.pythonhosted.org/x", { allowed: true, reason: "a.b.c.pythonhosted.org:443 matches *.pythonhosted.org:443" }],
  ["https://A.B.C.PythonHosted.ORG./x", { allowed: true, reason: "a.b.c.pythonhosted.org:443 matches *.pythonhosted.org:443" }],
  ["https://pythonhosted.org./", NOT_LISTED("pythonhosted.org:443")],
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
  ["http://[64:ff9b::a9fe:a9fe]/", IP],
  ["https://[64:ff9b::a9fe:a9fe]:443/", IP],
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
const OPEN_OK = (hostPort) => ({ allowed: true, reason: `egress mode 'open' allows the public destination ${hostPort}` });
const NOT_PUBLIC = (hostPort, range) => ({ allowed: false, reason: `${hostPort} is not a public address (${range})` });
const DENIED = { allowed: false, reason: "egress mode 'deny' blocks all requests" };

// [policy, url, expected] for the other modes and for invalid policies.
const POLICY_CASES = [
  [OPEN, "https://anything.example/", OPEN_OK("anything.example:443")],
  [OPEN, "https://A.B.Example.COM./x", OPEN_OK("a.b.example.com:443")],
  [OPEN, "http://example.com:8080/", OPEN_OK("example.com:8080")],
  [OPEN, "https://151.101.0.223/", OPEN_OK("151.101.0.223:443")],
  [OPEN, "https://[2a04:4e42::223]/", OPEN_OK("[2a04:4e42::223]:443")],
  [OPEN, "ftp://anything.example/", { allowed: false, reason: "scheme 'ftp:' is not allowed; only http and https are" }],
  [OPEN, "not a url", BAD_URL],
  [OPEN, "https://user@anything.example/", USERINFO],
  [OPEN, "https://pypi..org/", { allowed: false, reason: "host is not a valid DNS name" }],
  // open admits public destinations only: every non-public range, in every spelling.
  [OPEN, "http://127.0.0.1:8080/", NOT_PUBLIC("127.0.0.1:8080", "127.0.0.0/8")],
  [OPEN, "http://2130706433/", NOT_PUBLIC("127.0.0.1:80", "127.0.0.0/8")],
  [OPEN, "http://0/", NOT_PUBLIC("0.0.0.0:80", "0.0.0.0/8")],
  [OPEN, "http://169.254.169.254/latest/meta-data/", NOT_PUBLIC("169.254.169.254:80", "169.254.0.0/16")],
  [OPEN, "http://0251.0376.0251.0376/", NOT_PUBLIC("169.254.169.254:80", "169.254.0.0/16")],
  [OPEN, "http://10.1.2.3/", NOT_PUBLIC("10.1.2.3:80", "10.0.0.0/8")],
  [OPEN, "http://100.64.0.1/", NOT_PUBLIC("100.64.0.1:80", "100.64.0.0/10")],
  [OPEN, "http://172.31.255.255/", NOT_PUBLIC("172.31.255.255:80", "172.16.0.0/12")],
  [OPEN, "http://192.168.1.1/", NOT_PUBLIC("192.168.1.1:80", "192.168.0.0/16")],
  [OPEN, "http://203.0.113.7:8080/", NOT_PUBLIC("203.0.113.7:8080", "203.0.113.0/24")],
  [OPEN, "http://224.0.0.251/", NOT_PUBLIC("224.0.0.251:80", "224.0.0.0/4")],
  [OPEN, "http://255.255.255.255/", NOT_PUBLIC("255.255.255.255:80", "240.0.0.0/4")],
  [OPEN, "http://[::1]/", NOT_PUBLIC("[::1]:80", "::/8")],
  [OPEN, "http://[::]/", NOT_PUBLIC("[::]:80", "::/8")],
  [OPEN, "http://[fe80::1]/", NOT_PUBLIC("[fe80::1]:80", "fe80::/10")],
  [OPEN, "http://[fd00::1]/", NOT_PUBLIC("[fd00::1]:80", "fc00::/7")],
  [OPEN, "http://[ff02::1]/", NOT_PUBLIC("[ff02::1]:80", "ff00::/8")],
  // IPv6 forms that carry an IPv4 address are refused as whole prefixes.
  [OPEN, "http://[64:ff9b::a9fe:a9fe]/", NOT_PUBLIC("[64:ff9b::a9fe:a9fe]:80", "::/8")],
  [OPEN, "http://[64:ff9b::808:808]/", NOT_PUBLIC("[64:ff9b::808:808]:80", "::/8")],
  [OPEN, "http://[64:ff9b:1::a9fe:a9fe]/", NOT_PUBLIC("[64:ff9b:1::a9fe:a9fe]:80", "::/8")],
  [OPEN, "http://[::ffff:169.254.169.254]/", NOT_PUBLIC("[::ffff:a9fe:a9fe]:80", "::/8")],
  [OPEN, "http://[::ffff:0:a9fe:a9fe]/", NOT_PUBLIC("[::ffff:0:a9fe:a9fe]:80", "::/8")],
  [OPEN, "http://[::169.254.169.254]/", NOT_PUBLIC("[::a9fe:a9fe]:80", "::/8")],
  [OPEN, "http://[2002:a9fe:a9fe::1]/", NOT_PUBLIC("[2002:a9fe:a9fe::1]:80", "2002::/16")],
  [OPEN, "http://[2001:0:4136:e378:8000:63bf:56fe:5601]/", NOT_PUBLIC("[2001:0:4136:e378:8000:63bf:56fe:5601]:80", "2001::/23")],
  [OPEN, "http://[2001:db8::1]/", NOT_PUBLIC("[2001:db8::1]:80", "2001:db8::/32")],
  // IPv6 outside 2000::/3 is not global unicast; an ISATAP identifier is judged by the IPv4 it carries.
  [OPEN, "http://[4000::1]/", NOT_PUBLIC("[4000::1]:80", "4000::/3")],
  [OPEN, "http://[2a00:1450::5efe:a9fe:a9fe]/", NOT_PUBLIC("[2a00:1450::5efe:a9fe:a9fe]:80", "ISATAP identifier carrying 169.254.169.254, inside 169.254.0.0/16")],
  [OPEN, "http://[2a00:1450::200:5efe:a00:1]/", NOT_PUBLIC("[2a00:1450::200:5efe:a00:1]:80", "ISATAP identifier carrying 10.0.0.1, inside 10.0.0.0/8")],
  [OPEN, "http://[2a00:1450::5efe:808:808]/", OPEN_OK("[2a00:1450::5efe:808:808]:80")],
  [OPEN, "http://[2a00:1450::5efe:c000:9]/", OPEN_OK("[2a00:1450::5efe:c000:9]:80")],
  [OPEN, "http://[2a00:1450::100:5efe:a9fe:a9fe]/", OPEN_OK("[2a00:1450::100:5efe:a9fe:a9fe]:80")],
  [OPEN, "http://192.0.0.9/", NOT_PUBLIC("192.0.0.9:80", "192.0.0.0/24")],
  // Names that are never public.
  [OPEN, "http://metadata.google.internal/", { allowed: false, reason: "metadata.google.internal:80 is an internal name (.internal)" }],
  [OPEN, "http://kubernetes.default.svc/", { allowed: false, reason: "kubernetes.default.svc:80 is an internal name (.svc)" }],
  [OPEN, "http://localhost:8080/", { allowed: false, reason: "localhost:8080 is an internal name (.localhost)" }],
  [OPEN, "http://printer.local./", { allowed: false, reason: "printer.local:80 is an internal name (.local)" }],
  [OPEN, "http://metadata/", { allowed: false, reason: "metadata:80 is a single-label name, not a public one" }],
  // deny admits nothing, whatever the URL.
  [DENY, "https://pypi.org/", DENIED],
  [DENY, "https://files.pythonhosted.org/", DENIED],
  [DENY, "http://169.254.169.254/", DENIED],
  [DENY, "http://[64:ff9b::a9fe:a9fe]/", DENIED],
  [DENY, "not a url", DENIED],
  [{ mode: "allowlist", allow: [] }, "https://pypi.org/", NOT_LISTED("pypi.org:443")],
  // The policy may arrive as the JSON string the binding holds.
  [JSON.stringify(ALLOWLIST_POLICY), "https://pypi.org/", PYPI],
  // Entry hosts are normalised like URL hosts.
  [{ mode: "allowlist", allow: [{ host: "PyPI.org.", port: 443 }] }, "https://pypi.org/", PYPI],
  // A port belongs to its entry only.
  [GITHUB_80, "http://github.com/", { allowed: true, reason: "github.com:80 matches github.com:80" }],
  [GITHUB_80, "https://github.com/", NOT_LISTED("github.com:443")],
  [GITHUB_80, "http://github.com:443/", NOT_LISTED("github.com:443")],
  [GITHUB_80, "https://github.com:80/", { allowed: true, reason: "github.com:80 matches github.com:80" }],
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
  // Cloudflare Containers intercept ports 80 and 443 only: an entry on another port could never be reached.
  [{ mode: "allowlist", allow: [{ host: "github.com", port: 8443 }] }, "EGRESS_POLICY.allow[0].port must be 80 or 443: Cloudflare Containers intercept no other port"],
  [{ mode: "allowlist", allow: [{ host: "localhost", port: 443 }] }, "EGRESS_POLICY.allow[0].host localhost is an internal name (.localhost); sandboxes reach public hosts only"],
  [{ mode: "allowlist", allow: [{ host: "metadata.google.internal", port: 80 }] }, "EGRESS_POLICY.allow[0].host metadata.google.internal is an internal name (.internal); sandboxes reach public hosts only"],
  [{ mode: "allowlist", allow: [{ host: "svc", port: 443, wildcard: true }] }, "EGRESS_POLICY.allow[0].host svc is an internal name (.svc); sandboxes reach public hosts only"],
  [{ mode: "allowlist", allow: [{ host: "", port: 443 }] }, "EGRESS_POLICY.allow[0].host is not a valid DNS name"],
];

describe("decideEgress in workerd", () => {
  let harness;
  before(async () => {
    harness = await startDecideHarness();
  });
  after(async () => {
    await harness.dispose();
  });

  const decide = (cases) => harness.ask({ op: "decide", cases });

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
