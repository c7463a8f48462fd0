// Test-only Worker that runs the Worker's own egress code inside workerd (the URL parser
// production uses). POST one JSON object:
//   {"op": "decide", "cases": [{"policy", "url"}]}     -> [{"allowed", "reason"}]
//   {"op": "plan", "policy"}                           -> [{"method", "pattern"?}]
//   {"op": "install", "policy"}  -> the ctx.container calls installEgressInterceptions makes for
//                                   that policy's plan, recorded on a stand-in container:
//                                   [{"method", "args": [pattern?, "<gateway>"]}]
//   {"op": "probe", "policy", "probes": [{"host", "port"}]}
//       -> [{"admitted", "stage": "platform"|"gateway", "reason", "interception"}]
//   {"op": "contract"} -> the names and ranges src/index.js shares with sandboxkit.boundary
// "probe" is the whole path: the platform routing model (platform.js) over the Durable Object's
// interceptions, then decideEgress on the URL the gateway sees.
import * as worker from "../src/index.js";
import { gatewayUrl, routeFor } from "./platform.js";

function probe(policy, { host, port }) {
  const route = routeFor(worker.egressInterceptions(policy), host, port);
  if (route.step === null) {
    return { admitted: false, stage: "platform", reason: route.reason, interception: null };
  }
  const decision = worker.decideEgress(policy, gatewayUrl(host, port));
  return { admitted: decision.allowed, stage: "gateway", reason: decision.reason, interception: route.reason };
}

async function install(policy) {
  const calls = [];
  const gateway = { fetch: () => new Response("stand-in gateway") };
  const record = (method) => async (...args) => {
    calls.push({ method, args: args.map((arg) => (arg === gateway ? "<gateway>" : arg)) });
  };
  const container = {
    interceptOutboundHttp: record("interceptOutboundHttp"),
    interceptOutboundHttps: record("interceptOutboundHttps"),
    interceptAllOutboundHttp: record("interceptAllOutboundHttp"),
  };
  await worker.installEgressInterceptions(container, worker.egressInterceptions(policy), gateway);
  return calls;
}

function contract() {
  const classes = Object.entries(worker)
    .filter(([, value]) => typeof value === "function" && /^class\b/.test(Function.prototype.toString.call(value)))
    .map(([name]) => name)
    .sort();
  return {
    bindings: worker.BINDINGS,
    classes,
    nonPublicIpv4: worker.NON_PUBLIC_IPV4,
    nonPublicIpv6: worker.NON_PUBLIC_IPV6,
    publicInsideNonPublicIpv4: worker.PUBLIC_INSIDE_NON_PUBLIC_IPV4,
    internalSuffixes: worker.INTERNAL_SUFFIXES,
    tokenLimits: worker.TOKEN_LIMITS,
  };
}

const OPS = {
  decide: (body) => body.cases.map(({ policy, url }) => worker.decideEgress(policy, url)),
  plan: (body) => worker.egressInterceptions(body.policy),
  install: (body) => install(body.policy),
  probe: (body) => body.probes.map((p) => probe(body.policy, p)),
  contract,
};

export default {
  async fetch(request) {
    const body = await request.json();
    const op = OPS[body?.op];
    if (op === undefined) return Response.json({ error: `unknown op ${JSON.stringify(body?.op)}` }, { status: 400 });
    return Response.json(await op(body));
  },
};
