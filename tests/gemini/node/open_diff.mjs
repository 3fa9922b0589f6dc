// Connect with Gemini CLI's IdeClient and propose one change: `node open_diff.mjs <file> <content>`.
// Prints {"event": "connected"} once connected, then {"event": "result", "result": ...} with what
// the CLI got back (accepted with the editor's content, or rejected).
import { IdeClient, IDEConnectionStatus } from '@google/gemini-cli-core';

const [file, content] = process.argv.slice(2);
const say = (event, data = {}) => process.stdout.write(JSON.stringify({ event, ...data }) + '\n');

const ide = await IdeClient.getInstance();
await ide.connect({ logToConsole: false });
const status = ide.getConnectionStatus();
if (status.status !== IDEConnectionStatus.Connected) {
  process.stderr.write(`not connected: ${JSON.stringify(status)}\n`);
  process.exit(1);
}
say('connected', { ide: ide.getCurrentIde() });
const result = await ide.openDiff(file, content);
say('result', { result });
await ide.disconnect();
process.exit(0);
