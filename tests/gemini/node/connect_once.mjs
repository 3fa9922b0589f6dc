// Gemini CLI's own IDE client (@google/gemini-cli-core) connects once, as `gemini` does at start,
// and reports where it connected: one JSON line {"event": "result", status, details, url}.
// Started by the stale-announcement test from a child shell of the "editor" (the test process).
import { IdeClient } from '@google/gemini-cli-core';

const ide = await IdeClient.getInstance();
await ide.connect({ logToConsole: false });
const state = ide.getConnectionStatus();
// The MCP client's transport holds the URL it connected to (the port it took from the discovery file).
const url = ide.client?.transport?._url?.toString() ?? null;
process.stdout.write(
  JSON.stringify({ event: 'result', status: state.status, details: state.details ?? null, url }) + '\n',
);
await ide.disconnect();
process.exit(0);
