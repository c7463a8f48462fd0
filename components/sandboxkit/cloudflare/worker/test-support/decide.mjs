#!/usr/bin/env node
// Asks the Worker's own egress code (src/index.js, run in workerd through miniflare, loopback
// only) for decisions, for callers outside JavaScript (sandboxkit's egress reader, its property
// tests). One process serves many requests: read one JSON object per line on stdin, write one
// JSON line on stdout per request, in order. Requests are those of decide-harness.js
// ("decide", "plan", "probe", "contract"); a line that is not a JSON object gets
// {"error": "..."}. The runtime's own output goes to stderr. Exits when stdin closes.
//
//   echo '{"op":"probe","policy":{"mode":"deny"},"probes":[{"host":"pypi.org","port":443}]}' |
//     node test-support/decide.mjs

import { createInterface } from "node:readline";
import { startDecideHarness } from "./helpers.mjs";

const harness = await startDecideHarness({
  handleRuntimeStdio(out, err) {
    out.pipe(process.stderr);
    err.pipe(process.stderr);
  },
});

async function answer(line) {
  let body;
  try {
    body = JSON.parse(line);
  } catch {
    return { error: "request is not JSON" };
  }
  return harness.ask(body);
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  process.stdout.write(`${JSON.stringify(await answer(line))}\n`);
}
await harness.dispose();
