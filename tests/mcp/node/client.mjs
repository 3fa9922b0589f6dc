// Drives `context-companion mcp` with the official MCP TypeScript SDK client.
//   node client.mjs stdio <workspace> <command> [args...]   launch the server over stdio
//   node client.mjs http <workspace> <url> <token>          connect over Streamable HTTP
// Prints one JSON line with what it checked; exits 1 with the reason on the first failure.
import { renameSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const INSTRUCTION = "context-companion://instruction";
const TOOLS = ["add_memory", "build_messages", "get_system_instruction", "get_turn_context", "show_memory"];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function transportFor(mode, rest, token) {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  }
  const [url] = rest;
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

async function connect(mode, rest, token) {
  const client = new Client({ name: "context-companion-interop", version: "1.0.0" });
  await client.connect(transportFor(mode, rest, token));
  return client;
}

async function main() {
  const [mode, workspace, ...rest] = process.argv.slice(2);
  const token = mode === "http" ? rest[1] : undefined;
  const report = { mode, tools: [], resources: [] };

  if (mode === "http") {
    let refused = null;
    try {
      const bad = await connect(mode, rest, "not-the-token");
      await bad.close();
    } catch (err) {
      refused = `${err?.code} ${err}`; // StreamableHTTPError carries the HTTP status as .code
    }
    check(refused !== null && refused.startsWith("401 "), `a wrong token was not refused: ${refused}`);
    report.wrongTokenRefused = refused;
  }

  const client = await connect(mode, rest, token);
  check(/standalone/.test(client.getInstructions() ?? ""), "instructions do not say the mode");
  check(client.getServerCapabilities()?.resources?.subscribe === true, "resources.subscribe not advertised");

  // Every tool: listed with a schema, and answers.
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(TOOLS), `tools: ${names}`);
  const add = tools.find((t) => t.name === "add_memory");
  check(add.annotations.destructiveHint === false && add.annotations.idempotentHint === false, "add_memory hints");
  check(JSON.stringify(add.inputSchema.required) === JSON.stringify(["text"]), "add_memory schema");
  const calls = {
    get_system_instruction: { session: "node" },
    get_turn_context: { session: "node" },
    build_messages: { messages: [{ role: "user", content: "hello" }] },
    show_memory: {},
    add_memory: { text: "Prefer small commits.", scope: "workspace" },
  };
  for (const [name, args] of Object.entries(calls)) {
    const result = await client.callTool({ name, arguments: args });
    check(!result.isError, `${name} failed: ${result.content?.[0]?.text}`);
    check(result.structuredContent && typeof result.structuredContent === "object", `${name}: no structured content`);
    report.tools.push(name);
  }
  const first = await client.callTool({ name: "get_system_instruction", arguments: {} });
  check(first.content[0].text.includes("Prefer small commits."), "add_memory did not reach the instruction");
  const etag = first.structuredContent.etag;
  const same = await client.callTool({ name: "get_system_instruction", arguments: { ifNoneMatch: etag } });
  check(same.structuredContent.unchanged === true, "ifNoneMatch with the current etag is not unchanged");
  const built = await client.callTool({
    name: "build_messages",
    arguments: { messages: [{ role: "user", content: "hi" }] },
  });
  const msgs = built.structuredContent.messages;
  check(msgs[0].role === "system" && msgs.at(-1).content === "hi", "build_messages order");

  // Bad input: a tool error naming the field, and the server stays up.
  for (const [name, args, field] of [
    ["add_memory", {}, "text"],
    ["get_system_instruction", { session: 42 }, "session"],
    ["build_messages", { messages: "nope" }, "messages"],
  ]) {
    const bad = await client.callTool({ name, arguments: args });
    check(bad.isError === true && bad.content[0].text.includes(field), `${name} bad input: ${bad.content[0].text}`);
  }
  await client.ping();

  // Every resource reads; the memory template and the prompt work.
  const { resources } = await client.listResources();
  for (const resource of resources) {
    const read = await client.readResource({ uri: resource.uri });
    check(read.contents.length === 1 && typeof read.contents[0].text === "string", `read ${resource.uri}`);
    report.resources.push(resource.uri);
  }
  check(report.resources.includes("context-companion://memory/AGENTS.md"), "AGENTS.md not a resource");
  const templates = await client.listResourceTemplates();
  check(templates.resourceTemplates[0].uriTemplate === "context-companion://memory/{path}", "memory template");
  const prompt = await client.getPrompt({ name: "refreshed_system_instruction", arguments: {} });
  check(prompt.messages[0].content.text.includes("Prefer small commits."), "prompt text");

  // Subscribe, edit AGENTS.md on disk: the first update within 2 s, and exactly one.
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push({ uri: n.params.uri, at: performance.now() });
  });
  await client.subscribeResource({ uri: INSTRUCTION });
  await sleep(500); // the watcher's echo of add_memory's own write changes nothing
  updates.length = 0;
  const agents = join(workspace, "AGENTS.md");
  const text = readFileSync(agents, "utf8") + "- Edited by the node client.\n";
  writeFileSync(agents + ".tmp~", text);
  const written = performance.now();
  renameSync(agents + ".tmp~", agents);
  while (!updates.some((u) => u.uri === INSTRUCTION) && performance.now() - written < 2000) await sleep(10);
  const mine = () => updates.filter((u) => u.uri === INSTRUCTION);
  check(mine().length > 0, "no notifications/resources/updated within 2 s");
  report.firstUpdateMs = Math.round(mine()[0].at - written);
  await sleep(1000);
  check(mine().length === 1, `expected exactly one update, got ${mine().length}`);
  const now = await client.readResource({ uri: INSTRUCTION });
  check(now.contents[0].text.includes("Edited by the node client."), "the instruction did not change");

  await client.close();
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`interop failure: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
