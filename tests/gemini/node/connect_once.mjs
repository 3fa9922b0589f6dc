// Gemini CLI's own IDE client (@google/gemini-cli-core) connects once, as `gemini` does at start,
// and reports where it connected: one JSON line {"event": "result", status, details, url}.
// With a count (`connect_once.mjs 10`) it connects that many times in turn, disconnecting in
// between, one line each: every connect() reads the discovery files again and picks among them as
// a new `gemini` would, without paying Node's start and the package's load each time.
// Started by the stale-announcement test from a child shell of the "editor" (the test process).
import { IdeClient } from '@google/gemini-cli-core';

const times = Number(process.argv[2] ?? 1);
const ide = await IdeClient.getInstance();
for (let i = 0; i < times; i++) {
  await ide.connect({ logToConsole: false });
  const state = ide.getConnectionStatus();
  // The MCP client's transport holds the URL it connected to (the port it took from the discovery file).
  const url = ide.client?.transport?._url?.toString() ?? null;
  process.stdout.write(
    JSON.stringify({ event: 'result', status: state.status, details: state.details ?? null, url }) + '\n',
  );
  await ide.disconnect();
}
process.exit(0);
