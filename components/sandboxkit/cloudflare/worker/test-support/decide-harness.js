// Test-only Worker that runs decideEgress inside workerd (same URL parser as production).
// POST [{"policy": ..., "url": ...}, ...] -> [{"allowed": bool, "reason": str}, ...]
import { decideEgress } from "../src/index.js";

export default {
  async fetch(request) {
    const cases = await request.json();
    return Response.json(cases.map(({ policy, url }) => decideEgress(policy, url)));
  },
};
