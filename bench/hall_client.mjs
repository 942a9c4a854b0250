// The hall's students as a light client (Node's own http, no packages): the server is what is measured, not the
// client. bench/hall.py writes the requests to a JSON file and reads what this prints.
//
//   node bench/hall_client.mjs SPEC.json
//
// SPEC: {"url", "address" (the local address to bind), "name" (the endpoint), "clients", "per_client",
//        "data": [one request's data list, per request: clients × per_client, client c's r-th at c × per_client + r]}
// Prints one JSON line: {"latencies_s": [...], "outcomes": {"complete": n, "refused": n, ...}, "examples": [...],
//                        "wall_s", "cpu_s"} (cpu_s: this client's own CPU, user + system).
import fs from "node:fs";
import http from "node:http";

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const base = new URL(spec.url);
const agent = new http.Agent({keepAlive: true, maxSockets: Infinity, keepAliveMsecs: 1000});
const TIMEOUT_MS = 600_000;

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({host: base.hostname, port: base.port, method, path, agent, localAddress: spec.address,
                              timeout: TIMEOUT_MS,
                              headers: body ? {"content-type": "application/json",
                                               "content-length": Buffer.byteLength(body)} : {}}, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({status: res.statusCode, text: Buffer.concat(chunks).toString("utf8")}));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    if (body) req.write(body);
    req.end();
  });
}

// POST /gradio_api/call/<name>, then its answer's stream: "complete" | "error" | "refused <status>" | "failed"
async function call(data) {
  const prefix = base.pathname.replace(/\/$/, "") + "/gradio_api/call/" + spec.name;
  try {
    const posted = await request("POST", prefix, JSON.stringify({data}));
    if (posted.status !== 200) return ["refused " + posted.status, posted.text.slice(0, 300)];
    const answer = await request("GET", prefix + "/" + JSON.parse(posted.text).event_id);
    const event = /event: (complete|error)\ndata: ?(.*)/.exec(answer.text);
    return event ? [event[1], event[2].slice(0, 300)] : ["none", answer.text.slice(0, 300)];
  } catch (err) {
    return ["failed", String(err).slice(0, 300)];
  }
}

const latencies = [], outcomes = {}, examples = [];
async function student(c) {
  for (let r = 0; r < spec.per_client; r++) {
    const t0 = performance.now();
    const [outcome, detail] = await call(spec.data[c * spec.per_client + r]);
    const key = outcome.startsWith("refused") ? "refused" : outcome;
    outcomes[key] = (outcomes[key] || 0) + 1;
    if (outcome === "complete") latencies.push((performance.now() - t0) / 1000);
    else if (examples.length < 3) examples.push(outcome + ": " + detail);
  }
}

const cpu0 = process.cpuUsage(), t0 = performance.now();
await Promise.all(Array.from({length: spec.clients}, (_, c) => student(c)));
const cpu = process.cpuUsage(cpu0);
agent.destroy();
console.log(JSON.stringify({latencies_s: latencies, outcomes, examples, wall_s: (performance.now() - t0) / 1000,
                            cpu_s: (cpu.user + cpu.system) / 1e6}));
