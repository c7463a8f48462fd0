// A model of what Cloudflare's container networking does before EgressGateway sees a request,
// as documented (not observable here: no container runs locally). Sources:
// - developers.cloudflare.com/containers/configuration/outbound-traffic/ ("Non-HTTP traffic"):
//   only ports 80 and 443 reach interceptions; with enableInternet false everything else is
//   dropped.
// - developers.cloudflare.com/containers/api/durable-object-container/ (interceptOutboundHttp,
//   interceptOutboundHttps, interceptAllOutboundHttp): a pattern is a hostname or a glob where
//   `*` matches any sequence of characters; interceptAllOutboundHttp takes all HTTP.
// Assumed, not documented: the platform matches the name the container claims (HTTP Host, TLS
// SNI) case-insensitively and without a trailing dot, as DNS compares names.

const METHOD_FOR_PORT = Object.freeze({ 80: "interceptOutboundHttp", 443: "interceptOutboundHttps" });

function hostPort(host, port) {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

function claimedName(host) {
  const lower = host.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}

function globMatches(pattern, name) {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`).test(name);
}

/**
 * The interception of `plan` (egressInterceptions' output) a connection to `host`:`port` takes,
 * or null when the platform drops it. Returns {step, reason}.
 */
export function routeFor(plan, host, port) {
  const method = METHOD_FOR_PORT[port];
  if (method === undefined) {
    return { step: null, reason: `port ${port} is never intercepted (only 80 and 443 are); enableInternet false drops it` };
  }
  const name = claimedName(host);
  for (const step of plan) {
    const catchAll = step.method === "interceptAllOutboundHttp" && method === "interceptOutboundHttp";
    if (catchAll || (step.method === method && globMatches(step.pattern, name))) {
      return { step, reason: `${step.method}(${step.pattern === undefined ? "" : JSON.stringify(step.pattern)})` };
    }
  }
  return { step: null, reason: `no interception for ${hostPort(host, port)}; enableInternet false drops it` };
}

/** The URL the gateway is assumed to see for a request to `host`:`port` (scheme by port). */
export function gatewayUrl(host, port) {
  return `${port === 443 ? "https" : "http"}://${hostPort(host, port)}/`;
}
